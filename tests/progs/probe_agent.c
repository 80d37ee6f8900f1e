/* probe_agent.c — target of the agent engine's tests (tests/e2e/probe_agent.sh):
 *   probe_agent NTHREADS ITERS [GOFILE [STOPFILE]]
 * every thread calls work(i) and spin(i % 7) for i in [0, ITERS) (ITERS 0:
 * until STOPFILE exists); with GOFILE, prints "ready PID" and waits until
 * GOFILE exists before the threads start.  Prints what it did: "calls work N
 * spin N" and "total T", and, when ITERS is 0, "expect E": the total
 * computed without calling them.  Exits 3.
 * spin's first instruction is 2 bytes long and its loop jumps back to the
 * byte after it: no 5-byte jump fits at its entry, a probe there must be an
 * int3. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

long spin(long n);
__asm__(".text\n"
        ".globl spin\n"
        ".type spin,@function\n"
        "spin:\n"
        "  xor %eax,%eax\n"
        "1:\n"
        "  add $1,%rax\n"
        "  cmp %rdi,%rax\n"
        "  jl 1b\n"
        "  ret\n"
        ".size spin,.-spin\n");

static int iters;
static const char *stopfile;

struct job { unsigned long total; long n; };

__attribute__((noipa)) long work(long i)
{
	return 3 * i + 1;
}

static void *run(void *arg)
{
	struct job *j = arg;
	for (long i = 0; iters ? i < iters : 1; i++) {
		if (!iters && (i & 4095) == 0 && !access(stopfile, F_OK)) {
			j->n = i;
			break;
		}
		j->total += work(i);
		j->total += spin(i % 7);
	}
	if (iters)
		j->n = iters;
	return NULL;
}

/* What one thread's total must be after n iterations, without the calls
 * (closed form: the threads may run billions of iterations; unsigned, the
 * totals wrap the same way as the program's). */
static unsigned long expect(unsigned long n)
{
	static const unsigned long spin_of[7] = { 1, 1, 2, 3, 4, 5, 6 }; /* spin(k) = k ? k : 1 */
	unsigned long w = n % 2 ? 3 * n * ((n - 1) / 2) + n : 3 * (n / 2) * (n - 1) + n; /* sum of 3i+1 */
	unsigned long sp = n / 7 * 22;
	for (unsigned long k = 0; k < n % 7; k++)
		sp += spin_of[k];
	return w + sp;
}

int main(int argc, char **argv)
{
	int nt = argc > 1 ? atoi(argv[1]) : 4;
	iters = argc > 2 ? atoi(argv[2]) : 1000;
	if (nt < 1 || nt > 64 || iters < 0 || (!iters && argc < 5))
		return 2;
	stopfile = argc > 4 ? argv[4] : NULL;
	if (argc > 3) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		while (access(argv[3], F_OK))
			usleep(2000);
	}
	pthread_t t[64];
	struct job jobs[64] = { { 0, 0 } };
	for (int i = 0; i < nt; i++)
		pthread_create(&t[i], NULL, run, &jobs[i]);
	unsigned long total = 0, want = 0;
	long calls = 0;
	for (int i = 0; i < nt; i++) {
		pthread_join(t[i], NULL);
		total += jobs[i].total;
		calls += jobs[i].n;
		if (!iters)
			want += expect((unsigned long)jobs[i].n);
	}
	printf("calls work %ld spin %ld\n", calls, calls);
	printf("total %lu\n", total);
	if (!iters)
		printf("expect %lu\n", want);
	return 3;
}
