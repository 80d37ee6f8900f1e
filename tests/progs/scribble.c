/* scribble.c SEED [MODE] — a program that damages sonde's session memory:
 * it makes calls, then writes pseudo-random bytes over random places of the
 * session (found through SONDE_SESSION_FD, as the runtime finds it), then
 * makes more calls.  The recorder and every reader must survive what it
 * leaves: exit 0 or 2, never a signal or a hang.  The program itself may die
 * of what it wrote (the shadow stack lives there); that is its own doing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "common/session.h"
#include "noipa.h"

NOIPA long leaf(long x) { TOUCH(); return x + 1; }
NOIPA long mid(long x) { TOUCH(); return leaf(x) + leaf(x + 1); }
NOIPA long calls(long n) { long s = 0; for (long i = 0; i < n; i++) s += mid(i); return s; }

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
	long s = calls(20000);
	const char *e = getenv("SONDE_SESSION_FD");
	struct stat st;
	if (e && fstat(atoi(e), &st) == 0 && st.st_size > 0) {
		uint8_t *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, atoi(e), 0);
		if (m != MAP_FAILED) {
			/* xorshift64: the same damage for the same seed */
			uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
			for (int i = 0; i < 64; i++) {
				x ^= x << 13; x ^= x >> 7; x ^= x << 17;
				/* aim at what the collector reads: the session header, the
				 * thread's header and shadow stack, its first nodes, the module
				 * table, and anywhere in what was allocated */
				struct sonde_session_hdr *h = (struct sonde_session_hdr *)m;
				uint64_t t0 = h->threads_off[0], alloc = h->alloc < (uint64_t)st.st_size ? h->alloc : (uint64_t)st.st_size;
				uint64_t base, span;
				switch (i % 5) {
				case 0: base = 0; span = offsetof(struct sonde_session_hdr, procs) + sizeof h->procs[0]; break;
				case 1: base = t0; span = offsetof(struct sonde_thread, stack) + 4 * sizeof(struct sonde_frame); break;
				case 2: base = t0 + ((sizeof(struct sonde_thread) + 63) & ~(uint64_t)63); span = 8 * sizeof(struct sonde_node); break;
				case 3: base = offsetof(struct sonde_session_hdr, modules); span = offsetof(struct sonde_module, path); break;
				default: base = 0; span = alloc; break;
				}
				uint64_t off = base + x % (span ? span : 1);
				x ^= x << 13; x ^= x >> 7; x ^= x << 17;
				int len = 1 + (int)(x % 8);
				for (int k = 0; k < len && off + (uint64_t)k < (uint64_t)st.st_size; k++)
					m[off + (uint64_t)k] = (uint8_t)(x >> (8 * k));
			}
		}
	}
	s += calls(20000);
	printf("scribble %llu done %ld\n", (unsigned long long)seed, s);
	return 0;
}
