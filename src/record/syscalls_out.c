/* syscalls_out.c — after the program has ended: the system-call table of
 * the session (common/sys_session.h, written by src/rt/syscalls.c) into one
 * REC_SYSCALLS record of profile.sonde (common/format.h).  Every slot read is
 * checked: the program may have scribbled on the memory. */
#include <stdio.h>
#include <stdlib.h>

#include "common/sys_session.h"
#include "record/record.h"

void write_syscalls(struct session *s, struct rec_writer *w)
{
	struct sonde_session_hdr *h = s->hdr;
	uint64_t off = atomic_load(&h->syscalls_off);
	if (!(h->mode & SONDE_MODE_SYSCALLS))
		return;
	struct rec_sys_hdr hdr = { 0, SYS_NCALLS, 0 };
	struct rec_sys *v = NULL;
	if (off && sess_fits(s->size, off, sizeof(struct sys_session), _Alignof(struct sys_session))) {
		struct sys_session *S = sess_ptr(h, off);
		hdr.lost = atomic_load(&S->lost);
		v = calloc(SYS_TABLE_SLOTS, sizeof *v);
		for (uint32_t i = 0; v && i < SYS_TABLE_SLOTS; i++) {
			struct sys_slot *sl = &S->table[i];
			uint64_t key = atomic_load(&sl->key);
			uint64_t count = atomic_load(&sl->count);
			if (!key || !count)
				continue;
			uint32_t call = (uint32_t)(key >> 32) & 0xff, proc1 = (uint32_t)(key >> 40);
			if (call >= SYS_NCALLS || proc1 == 0 || proc1 > SONDE_MAX_PROCS) {
				atomic_fetch_add(&h->lost[SONDE_LOST_SESSION_DAMAGE], 1);
				continue;
			}
			v[hdr.count++] = (struct rec_sys){ .proc = proc1 - 1, .call = call, .func = (uint32_t)key,
			                                   .count = count, .ticks = atomic_load(&sl->ticks),
			                                   .bytes = atomic_load(&sl->bytes),
			                                   .errors = atomic_load(&sl->errors) };
		}
	}
	writer_put(w, REC_SYSCALLS, &hdr, sizeof hdr, v, (uint64_t)hdr.count * sizeof *v);
	free(v);
}

void session_syscalls_meta(struct session *s, struct meta_buf *mb)
{
	struct sonde_session_hdr *h = s->hdr;
	if (!(h->mode & SONDE_MODE_SYSCALLS))
		return;
	meta_add(mb, "syscalls_futex", s->futex_why[0] ? s->futex_why : "counted");
	uint64_t off = atomic_load(&h->syscalls_off);
	if (s->futex_why[0] || !off || !sess_fits(s->size, off, sizeof(struct sys_session), _Alignof(struct sys_session)))
		return;
	struct sys_session *S = sess_ptr(h, off);
	char num[32];
	snprintf(num, sizeof num, "%llu", (unsigned long long)atomic_load(&S->futex_threads));
	meta_add(mb, "syscalls_futex_threads", num);
	snprintf(num, sizeof num, "%llu", (unsigned long long)atomic_load(&S->futex_refused));
	meta_add(mb, "syscalls_futex_refused", num);
	snprintf(num, sizeof num, "%llu", (unsigned long long)atomic_load(&S->futex_lost));
	meta_add(mb, "syscalls_futex_lost", num);
}
