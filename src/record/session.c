/* session.c — the session memory owned by `sonde record`: a sparse file on
 * tmpfs (/dev/shm/sonde-session-UID-RANDOM, else under $XDG_RUNTIME_DIR;
 * private to this user, created fresh), named in the recording directory by
 * session.ref, inherited by the program through its descriptor number in
 * SONDE_SESSION_FD.  A named file and not a memfd so that what the program
 * records outlives a recorder that is killed (record/recover.c); on tmpfs and
 * not in the recording directory so that the program's first touch of a page
 * costs what a memfd's does (no block allocation, no writeback charged to the
 * function running then).  A normal end of the recorder removes both.  With
 * no tmpfs at hand, a memfd as before: nothing to recover then. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "common/proc_stat.h"
#include "proc/tracefs.h"
#include "record/record.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
/* Does process pid map the file of inode ino (the session)?  `unreadable`
 * when its maps cannot be read. */
int maps_inode(int pid, unsigned long long ino, int unreadable)
{
	char path[64], line[4608];
	snprintf(path, sizeof path, "/proc/%d/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno != ENOENT && unreadable;
	int found = 0;
	while (!found && fgets(line, sizeof line, f)) {
		unsigned long long i = 0;
		if (sscanf(line, "%*s %*s %*s %*s %llu", &i) == 1 && i == ino)
			found = 1;
	}
	fclose(f);
	return found;
}

int session_program_running(struct session *s)
{
	struct stat st;
	if (fstat(s->fd, &st) != 0)
		return 0;
	struct sonde_session_hdr *h = s->hdr;
	uint32_t n = sess_nprocs(h);
	for (uint32_t i = 0; i < n; i++) {
		struct sonde_proc *p = &h->procs[i];
		if (p->pid > 0 && p->pid != getpid() && (kill(p->pid, 0) == 0 || errno == EPERM) &&
		    maps_inode(p->pid, (unsigned long long)st.st_ino, 1)) /* unreadable: it may */
			return p->pid;
	}
	return 0;
}

/* A tmpfs directory with room: a full tmpfs cannot back a page the program
 * touches, which then gets SIGBUS.  A container's /dev/shm is often 64 MiB,
 * less than one traced thread may touch (its ring and node pool): below
 * SESSION_TMPFS_MIN free, the memfd (bounded by memory only) is safer. */
#define SESSION_TMPFS_MIN (1ull << 30)
static int on_tmpfs(const char *dir)
{
	struct statfs f;
	struct stat st;
	return statfs(dir, &f) == 0 && f.f_type == TMPFS_MAGIC && (uint64_t)f.f_bavail * (uint64_t)f.f_bsize >= SESSION_TMPFS_MIN &&
	       stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *session_dir(void)
{
	const char *e = getenv("SONDE_SESSION_DIR");
	if (e && *e)
		return strcmp(e, "memfd") ? e : NULL;
	if (on_tmpfs("/dev/shm"))
		return "/dev/shm";
	e = getenv("XDG_RUNTIME_DIR");
	if (e && e[0] == '/' && strlen(e) < 3000 && on_tmpfs(e))
		return e;
	return NULL;
}

int session_name_ok(const char *path)
{
	char prefix[64];
	snprintf(prefix, sizeof prefix, "%s%u-", SESSION_FILE_PREFIX, (unsigned)geteuid());
	const char *base = strrchr(path, '/');
	if (path[0] != '/' || !base || strstr(path, "/../") || strncmp(base + 1, prefix, strlen(prefix)))
		return 0;
	base += 1 + strlen(prefix);
	size_t n = strlen(base);
	return n == 16 && strspn(base, "0123456789abcdef") == n;
}

int session_ref_read(const char *dir, char *path, size_t n)
{
	char ref[4200];
	if ((size_t)snprintf(ref, sizeof ref, "%s/%s", dir, SONDE_FILE_SESSION_REF) >= sizeof ref)
		return -ENAMETOOLONG;
	int fd = open(ref, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -ELOOP : -errno;
	struct stat st;
	ssize_t got = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022))
		got = read(fd, path, n - 1);
	close(fd);
	if (got <= 0)
		return -EPERM;
	path[got] = 0;
	char *nl = memchr(path, '\n', (size_t)got);
	if (!nl || nl[1] || !(*nl = 0, session_name_ok(path)))
		return -EINVAL;
	return 0;
}

/* Create the session file fresh in sdir, never through a link: its fd, or -errno. */
static int create_named(struct session *s, const char *sdir)
{
	for (int attempt = 0; attempt < 8; attempt++) {
		uint64_t r = 0;
		if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
			r = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^ ((uint64_t)attempt << 56);
		if ((size_t)snprintf(s->path, sizeof s->path, "%s/%s%u-%016llx", sdir, SESSION_FILE_PREFIX,
		                     (unsigned)geteuid(), (unsigned long long)r) >= sizeof s->path)
			return -ENAMETOOLONG;
		/* No O_CLOEXEC: the program inherits it. */
		int fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* DIR/session.ref: the session file's path, one line, written fresh under a
 * temporary name and renamed (a reader never sees it half made). */
static int write_ref(struct session *s, const char *dir)
{
	if ((size_t)snprintf(s->ref, sizeof s->ref, "%s/%s", dir, SONDE_FILE_SESSION_REF) >= sizeof s->ref)
		return -ENAMETOOLONG;
	char tmp[sizeof s->ref + 32];
	FILE *f = file_create(s->ref, tmp, sizeof tmp);
	if (!f)
		return -errno;
	fprintf(f, "%s\n", s->path);
	int rc = file_commit(f, tmp, s->ref);
	if (rc)
		s->ref[0] = 0;
	return rc;
}

uint64_t session_default_cap(const char *sdir)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	uint64_t cap = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize / 4 : 1ull << 30;
	struct statfs f;
	if (sdir && statfs(sdir, &f) == 0 && (uint64_t)f.f_bavail * (uint64_t)f.f_bsize / 2 < cap)
		cap = (uint64_t)f.f_bavail * (uint64_t)f.f_bsize / 2;
	return cap;
}

int session_create(struct session *s, const struct record_config *cfg, double tpn, const char *dir)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	char absdir[PATH_MAX];
	const char *sdir = session_dir();
	/* The recording directory goes into the header, for the orphan sweep
	 * and the recovery's check: a path too long for it means no recovery. */
	if (sdir && (!realpath(dir, absdir) || strlen(absdir) >= SONDE_REC_DIR_MAX))
		sdir = NULL;
	if (sdir) {
		session_sweep(sdir);
		s->fd = create_named(s, sdir);
		if (s->fd < 0)
			s->path[0] = 0; /* the memfd below, without recovery */
	}
	if (s->fd < 0)
		s->fd = memfd_create("sonde-session", 0); /* no CLOEXEC: the program inherits it */
	if (s->fd < 0)
		return -errno;
	s->size = cfg->session_size;
	s->thread_region = cfg->thread_region;
	s->ring_size = cfg->ring_size;
	void *p = MAP_FAILED;
	if (ftruncate(s->fd, (off_t)s->size) == 0)
		p = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		session_destroy(s);
		return -e;
	}
	struct sonde_session_hdr *h = p;
	h->magic = SONDE_SESSION_MAGIC;
	h->collector_pid = (int32_t)getpid();
	h->recorder.start_time = proc_start_time(getpid());
	h->recorder.min_time_ns = cfg->min_time_ns;
	if (s->path[0])
		memcpy(h->recorder.rec_dir, absdir, strlen(absdir) + 1);
	h->version = SONDE_SESSION_VERSION;
	h->mode = cfg->mode;
	h->size = s->size;
	h->thread_region_size = cfg->thread_region;
	h->ring_size = cfg->ring_size;
	h->mem_cap = cfg->mem_cap ? cfg->mem_cap : session_default_cap(s->path[0] ? sdir : NULL);
	h->trace_max_depth = cfg->max_depth;
	h->trace_min_ticks = (uint64_t)((double)cfg->min_time_ns * tpn);
	/* --syscalls: futex from the kernel's exit tracepoint (docs/SYSCALLS.md
	 * "futex"), when tracefs says its id */
	s->futex_why[0] = 0;
	if (cfg->mode & SONDE_MODE_SYSCALLS) {
		struct tracepoint tp;
		if (tracefs_tracepoint("syscalls", "sys_exit_futex", "ret", &tp, s->futex_why, sizeof s->futex_why) == 0 &&
		    tp.size != 8)
			snprintf(s->futex_why, sizeof s->futex_why, "syscalls:sys_exit_futex's ret is not 8 bytes");
		else if (!s->futex_why[0]) {
			h->futex_tp = tp.id;
			h->futex_ret_off = tp.off;
		}
	}
	atomic_store(&h->alloc, (sizeof *h + 4095) & ~(uint64_t)4095);
	/* Filter patterns, NUL-separated, for the runtime to compile per module. */
	uint64_t len = 0;
	for (int i = 0; i < cfg->nfilters; i++)
		len += strlen(cfg->filters[i]) + 1;
	if (len) {
		uint64_t off = sess_alloc(h, len);
		char *d = sess_ptr(h, off);
		for (int i = 0; i < cfg->nfilters; i++) {
			size_t n = strlen(cfg->filters[i]) + 1;
			memcpy(d, cfg->filters[i], n);
			d += n;
			if (cfg->filters[i][0] == '+')
				h->filter_has_only = 1;
		}
		h->filter_spec_off = off;
		h->filter_spec_len = len;
	}
	s->hdr = h;
	if (s->path[0]) { /* named once its header is written */
		int rc = write_ref(s, dir);
		if (rc) {
			session_destroy(s);
			return rc;
		}
	}
	return 0;
}

void session_note_recorder(struct session *s, const struct clock_point *c0, int events, int attached)
{
	struct sonde_recorder_note *n = &s->hdr->recorder;
	n->c0_ticks = c0->ticks;
	n->c0_mono_ns = c0->mono_ns;
	n->events = events != 0;
	n->attached = attached != 0;
}

int session_open(struct session *s, const char *path, char *err, size_t n)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	snprintf(s->path, sizeof s->path, "%s", path);
	s->fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (s->fd < 0 || fstat(s->fd, &st) != 0) {
		snprintf(err, n, "%s: cannot open the session of a killed recorder (%s)", path,
		         errno == ELOOP ? "a symbolic link: refused" : strerror(errno));
		s->path[0] = 0;
		session_destroy(s);
		return -1;
	}
	/* root's attach to another user's program gave the file to that user
	 * (attach/fd_share.c): root takes its own back from any owner */
	if (!S_ISREG(st.st_mode) || (geteuid() != 0 && st.st_uid != geteuid()) || (st.st_mode & 077)) {
		snprintf(err, n, "%s: refused (not a private file of this user: uid %u, mode %03o)", path,
		         (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
		s->path[0] = 0;
		session_destroy(s);
		return -1;
	}
	struct sonde_session_hdr h;
	ssize_t got = pread(s->fd, &h, sizeof h, 0);
	if (got != (ssize_t)sizeof h || h.magic != SONDE_SESSION_MAGIC) {
		snprintf(err, n, "%s: damaged session (%s)", path, got != (ssize_t)sizeof h ? "truncated header" : "bad magic");
		s->path[0] = 0;
		session_destroy(s);
		return -1;
	}
	if (h.version != SONDE_SESSION_VERSION) {
		snprintf(err, n, "%s: session of another sonde version (%u, this sonde reads %u)", path, h.version,
		         SONDE_SESSION_VERSION);
		s->path[0] = 0;
		session_destroy(s);
		return -1;
	}
	/* Mapped at the file's size only: the header's own size must agree (a
	 * truncated file would fault in the middle of the reading). */
	if (h.size != (uint64_t)st.st_size || h.thread_region_size < 4096 || h.thread_region_size > h.size ||
	    h.ring_size > h.size) {
		snprintf(err, n, "%s: damaged session (size %llu, the file holds %llu bytes)", path,
		         (unsigned long long)h.size, (unsigned long long)st.st_size);
		s->path[0] = 0;
		session_destroy(s);
		return -1;
	}
	s->size = h.size;
	s->thread_region = h.thread_region_size;
	s->ring_size = h.ring_size;
	void *p = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (p == MAP_FAILED) {
		snprintf(err, n, "%s: cannot map the session (%s)", path, strerror(errno));
		s->path[0] = 0;
		session_destroy(s);
		return -1;
	}
	s->hdr = p;
	return 0;
}

void session_destroy(struct session *s)
{
	if (s->hdr)
		munmap(s->hdr, s->size);
	if (s->fd >= 0)
		close(s->fd);
	if (s->path[0])
		unlink(s->path);
	if (s->ref[0])
		unlink(s->ref);
	s->hdr = NULL;
	s->fd = -1;
	s->path[0] = 0;
	s->ref[0] = 0;
}

void session_keep(struct session *s)
{
	if (s->hdr)
		munmap(s->hdr, s->size);
	if (s->fd >= 0)
		close(s->fd);
	s->hdr = NULL;
	s->fd = -1;
	s->path[0] = 0;
	s->ref[0] = 0;
}
