/* sig_calls.c — calls made inside signal handlers, while the main loop makes
 * calls as fast as it can (so that signals land inside sonde's hooks and
 * lock wrappers), each counted by the program itself and printed as
 * tests/matrix_check.py reads them ("calls F N", "calls A->B N"):
 *  - SIGALRM from a 20 kHz timer (ITIMER_REAL), handler on the thread's
 *    stack: on_alrm -> tick_fn -> leaf x2, and a sem_post (async-signal-safe)
 *    on sig_sem;
 *  - SIGPROF from a second 20 kHz timer (timer_create), handler on an alternate stack
 *    (sigaltstack, SA_ONSTACK): on_prof -> alt_fn -> leaf;
 *  - nested: every 16th on_alrm raises SIGUSR1, whose handler runs inside
 *    it: on_usr1 -> nested_fn -> leaf, and SIGPROF interrupts on_alrm at
 *    random (on_prof then runs on the alternate stack above on_alrm's);
 *  - siglongjmp: in phase 2, jumper() calls jloop() until an on_alrm leaves
 *    by siglongjmp back into it (jump_fn first), then calls after();
 *  - a known time: in phase 3, victim() waits (no call) until on_alrm has
 *    spun SPIN_NS in spin_fn: victim's inclusive time includes it.
 * The main loop's work() calls leaf() and, with an argument "locks", posts
 * and waits main_sem once (uncontended).  argv: [locks] [go-fifo pidfile]
 * (or SIG_CALLS_LOCKS=1 in the environment for "locks"):
 * with a fifo, the program writes its pid, installs its handlers and waits
 * for a line (an attach).  Prints "spin_ns N" (the spin it measured) and
 * "lock sig_sem posts N", "lock main_sem posts N". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "noipa.h"

#define TICKS 3000         /* phase 1 ends after this many SIGALRMs */
#define JUMPS 20           /* phase 2: siglongjmps */
#define SPIN_NS 3000000L   /* phase 3: on_alrm's spin */

static volatile long n_work, n_alrm, n_prof, n_usr1, n_raise, n_jumper, n_jump, n_after, n_victim, n_spin, n_posts;
static volatile sig_atomic_t armed, want_spin, spun;
static volatile long spin_total;
static sigjmp_buf env;
static int use_locks;
static sem_t sig_sem, main_sem;
static char altstack[256 * 1024];

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

NOIPA void leaf(void) { TOUCH(); }
NOIPA void work(void)
{
	n_work++;
	leaf();
	if (use_locks) {
		sem_post(&main_sem);
		sem_wait(&main_sem);
	}
}
NOIPA void tick_fn(void) { leaf(); leaf(); }
NOIPA void alt_fn(void) { leaf(); }
NOIPA void nested_fn(void) { leaf(); }
NOIPA void jump_fn(void) { TOUCH(); }
NOIPA void after(void) { TOUCH(); }
NOIPA void spin_fn(void)
{
	long t0 = now_ns(), t;
	while ((t = now_ns()) - t0 < SPIN_NS)
		TOUCH();
	spin_total += t - t0;
}

NOIPA void on_usr1(int sig) { (void)sig; n_usr1++; nested_fn(); }
NOIPA void on_prof(int sig) { (void)sig; n_prof++; alt_fn(); }
NOIPA void on_alrm(int sig)
{
	(void)sig;
	long n = ++n_alrm;
	tick_fn();
	if (use_locks) {
		sem_post(&sig_sem);
		n_posts++;
	}
	if (n % 16 == 0) {
		n_raise++;
		raise(SIGUSR1); /* its handler runs here, nested */
	}
	if (want_spin && !spun) {
		n_spin++;
		spin_fn();
		spun = 1;
	}
	if (armed && n % 8 == 0) {
		armed = 0;
		n_jump++;
		jump_fn();
		siglongjmp(env, 1);
	}
}

/* Its calls are not counted: a siglongjmp from a handler that ran at its
 * first instruction leaves a call whose body never ran. */
NOIPA void jloop(void) { TOUCH(); }
NOIPA void jumper(void)
{
	if (sigsetjmp(env, 1) == 0) {
		n_jumper++;
		armed = 1;
		for (;;)
			jloop();
	}
	n_after++;
	after();
}

NOIPA void victim(void)
{
	n_victim++;
	want_spin = 1;
	while (!spun)
		TOUCH();
	want_spin = 0;
}

static void handle(int sig, void (*fn)(int), int flags, int block)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sa.sa_flags = flags | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (block)
		sigaddset(&sa.sa_mask, block);
	if (sigaction(sig, &sa, NULL) != 0) {
		perror("sigaction");
		exit(2);
	}
}

static timer_t prof_timer;

static void timers(long us)
{
	struct itimerval it = { { 0, us }, { 0, us } };
	setitimer(ITIMER_REAL, &it, NULL);
	/* not in step with the first: each interrupts the other's handler */
	long ns = us ? us * 1000 - 3000 : 0;
	struct itimerspec is = { { 0, ns }, { 0, ns } };
	timer_settime(prof_timer, 0, &is, NULL);
}

int main(int argc, char **argv)
{
	int a = 1;
	if (a < argc && strcmp(argv[a], "locks") == 0) {
		use_locks = 1;
		a++;
	}
	if (getenv("SIG_CALLS_LOCKS")) /* the same, for a start by tests/attach_lib.sh */
		use_locks = 1;
	sem_init(&sig_sem, 0, 0);
	sem_init(&main_sem, 0, 0);
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
	if (sigaltstack(&ss, NULL) != 0) {
		perror("sigaltstack");
		return 2;
	}
	handle(SIGALRM, on_alrm, 0, 0);
	/* SIGALRM blocked in on_prof: a siglongjmp of on_alrm's from inside it
	 * would leave calls that its counts say were made */
	handle(SIGPROF, on_prof, SA_ONSTACK, SIGALRM);
	handle(SIGUSR1, on_usr1, 0, 0);
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGPROF;
	if (timer_create(CLOCK_MONOTONIC, &ev, &prof_timer) != 0) {
		perror("timer_create");
		return 2;
	}
	if (a + 1 < argc) { /* an attach: handlers in place, then wait */
		FILE *p = fopen(argv[a + 1], "w");
		if (!p)
			return 2;
		fprintf(p, "%d\n", (int)getpid());
		fclose(p);
		char line[16];
		FILE *go = fopen(argv[a], "r");
		if (!go || !fgets(line, sizeof line, go))
			return 2;
		fclose(go);
	}
	timers(50); /* 20 kHz */
	while (n_alrm < TICKS)
		work();
	for (int j = 0; j < JUMPS; j++)
		jumper();
	victim();
	timers(0);
	/* the handlers' calls */
	printf("calls on_alrm %ld\ncalls tick_fn %ld\ncalls on_prof %ld\ncalls alt_fn %ld\n", n_alrm, n_alrm, n_prof, n_prof);
	printf("calls on_usr1 %ld\ncalls nested_fn %ld\ncalls jump_fn %ld\ncalls spin_fn %ld\n", n_usr1, n_usr1, n_jump,
	       n_spin);
	printf("calls tick_fn->leaf %ld\ncalls alt_fn->leaf %ld\ncalls nested_fn->leaf %ld\ncalls on_alrm->tick_fn %ld\n",
	       2 * n_alrm, n_prof, n_usr1, n_alrm);
	printf("calls on_alrm->jump_fn %ld\ncalls on_alrm->spin_fn %ld\n", n_jump, n_spin);
	/* the interrupted ones */
	printf("calls work %ld\ncalls work->leaf %ld\ncalls leaf %ld\n", n_work, n_work,
	       n_work + 2 * n_alrm + n_prof + n_usr1);
	printf("calls jumper %ld\ncalls after %ld\ncalls victim %ld\ncalls jumper->after %ld\n", n_jumper, n_after, n_victim,
	       n_after);
	printf("spin_ns %ld\n", spin_total);
	printf("raised %ld\n", n_raise);
	if (use_locks)
		printf("lock sig_sem posts %ld\nlock main_sem posts %ld\n", n_posts, n_work);
	printf("sig_calls done\n");
	return 0;
}
