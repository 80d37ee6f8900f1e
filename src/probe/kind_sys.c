/* kind_sys.c — system probes (sys:INTERVAL): sampled from /proc, without
 * stopping the program: CPU time of the process and of each thread, RSS
 * (last and peak), and I/O (bytes and operations, read and written). */
#include "probe/kind.h"
#include "probe/probe.h"

#include "common/json.h"
#include "probe/engine.h"
#include "probe/output.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tcpu { pid_t tid; uint64_t first, last; char comm[32]; };

struct sdata {
	uint64_t next;
	uint64_t samples;
	uint64_t cpu_first, cpu_last;
	uint64_t rss_kb_last, rss_kb_max;
	uint64_t io_first[6], io_last[6]; /* rchar wchar syscr syscw read_bytes write_bytes */
	int have_io;
	struct tcpu *t; int nt;
};

static const char *const io_keys[6] = { "rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes" };

static int setup(struct probe *p, char *err, size_t n)
{
	(void)err; (void)n;
	p->data = calloc(1, sizeof(struct sdata));
	char w[64];
	snprintf(w, sizeof w, "every %.3g ms", (double)p->sp.interval_ns / 1e6);
	p->where = strdup(w);
	return p->data ? 0 : -1;
}

/* utime+stime of a stat file, in ns; comm into comm. */
static int read_stat(const char *path, uint64_t *ns, char *comm, size_t cn)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char buf[1024];
	size_t r = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[r] = 0;
	char *o = strchr(buf, '('), *c = strrchr(buf, ')');
	if (!o || !c)
		return -1;
	if (comm)
		snprintf(comm, cn, "%.*s", (int)(c - o - 1), o + 1);
	unsigned long long ut, st;
	if (sscanf(c + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	long hz = sysconf(_SC_CLK_TCK);
	*ns = (ut + st) * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
	return 0;
}

static void sample(struct probe *p)
{
	struct sdata *d = p->data;
	pid_t pid = p->e->t.pid;
	char path[128];
	uint64_t ns;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_stat(path, &ns, NULL, 0))
		return;
	if (!d->samples)
		d->cpu_first = ns;
	d->cpu_last = ns;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	char line[256];
	while (f && fgets(line, sizeof line, f)) {
		unsigned long long kb;
		if (sscanf(line, "VmRSS: %llu", &kb) == 1) {
			d->rss_kb_last = kb;
			if (kb > d->rss_kb_max)
				d->rss_kb_max = kb;
		}
	}
	if (f)
		fclose(f);
	snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
	if ((f = fopen(path, "re"))) {
		uint64_t io[6] = { 0 };
		while (fgets(line, sizeof line, f))
			for (int k = 0; k < 6; k++) {
				size_t l = strlen(io_keys[k]);
				if (!strncmp(line, io_keys[k], l) && line[l] == ':')
					io[k] = strtoull(line + l + 1, NULL, 10);
			}
		fclose(f);
		if (!d->have_io)
			memcpy(d->io_first, io, sizeof io);
		memcpy(d->io_last, io, sizeof io);
		d->have_io = 1;
	}
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *dir = opendir(path);
	struct dirent *de;
	while (dir && (de = readdir(dir))) {
		pid_t tid = atoi(de->d_name);
		if (tid <= 0)
			continue;
		char tp[160], comm[32];
		snprintf(tp, sizeof tp, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
		if (read_stat(tp, &ns, comm, sizeof comm))
			continue;
		int i;
		for (i = 0; i < d->nt && d->t[i].tid != tid; i++)
			;
		if (i == d->nt) {
			struct tcpu *v = realloc(d->t, (size_t)(d->nt + 1) * sizeof *v);
			if (!v)
				continue;
			d->t = v;
			v[i].tid = tid;
			v[i].first = d->samples ? 0 : ns; /* threads born later count from 0 */
			d->nt++;
		}
		d->t[i].last = ns;
		snprintf(d->t[i].comm, sizeof d->t[i].comm, "%s", comm);
	}
	if (dir)
		closedir(dir);
	d->samples++;
	p->hits = d->samples;
}

static void tick(struct probe *p, uint64_t now)
{
	struct sdata *d = p->data;
	if (now == ~0ull || now >= d->next) {
		sample(p);
		if (now != ~0ull)
			d->next = now + p->sp.interval_ns;
	}
}

static void json(struct probe *p, struct json *j)
{
	struct sdata *d = p->data;
	if (!d)
		return;
	json_uint(j, "samples", d->samples);
	json_uint(j, "cpu_ns", d->cpu_last - d->cpu_first);
	json_uint(j, "rss_kb_last", d->rss_kb_last);
	json_uint(j, "rss_kb_max", d->rss_kb_max);
	if (d->have_io)
		for (int k = 0; k < 6; k++)
			json_uint(j, io_keys[k], d->io_last[k] - d->io_first[k]);
	json_arr_begin(j, "threads");
	for (int i = 0; i < d->nt; i++) {
		json_obj_begin(j, NULL);
		json_int(j, "tid", d->t[i].tid);
		json_str(j, "name", d->t[i].comm);
		json_uint(j, "cpu_ns", d->t[i].last - d->t[i].first);
		json_obj_end(j);
	}
	json_arr_end(j);
}

static void table(struct probe *p, FILE *f)
{
	struct sdata *d = p->data;
	if (!d)
		return;
	char c[32];
	fprintf(f, "%llu samples, cpu %s, rss %llu kB (max %llu kB), %d threads",
	        (unsigned long long)d->samples, fmt_time(d->cpu_last - d->cpu_first, c, sizeof c),
	        (unsigned long long)d->rss_kb_last, (unsigned long long)d->rss_kb_max, d->nt);
	if (d->have_io)
		fprintf(f, ", read %llu B, written %llu B",
		        (unsigned long long)(d->io_last[0] - d->io_first[0]),
		        (unsigned long long)(d->io_last[1] - d->io_first[1]));
}

static void fr(struct probe *p)
{
	struct sdata *d = p->data;
	if (d) {
		free(d->t);
		free(d);
	}
}

const struct kind_ops kind_sys = {
	.name = "sys", .needs_location = 0, .setup = setup, .tick = tick,
	.json = json, .table = table, .free = fr,
};
