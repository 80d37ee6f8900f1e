/* cantell.c — what a C program observes of itself, printed: its output must
 * be byte for byte the same recorded or not (issue 27,
 * tests/e2e/record_cantell.sh).  The C twin of selfsame.cpp, on the paths C
 * takes and the layouts that C programs use:
 *  - backtrace() (count, and the names backtrace_symbols gives: built with
 *    -rdynamic) and _Unwind_Backtrace (count, names from dladdr), from main
 *    and 11 frames deep;
 *  - threads ended by pthread_exit and by pthread_cancel six recorded frames
 *    deep: pthread_cleanup_push handlers (setjmp-based without -fexceptions,
 *    __attribute__((cleanup)) based with it) and cleanup variables; a TSD
 *    destructor (in every round glibc gives, the last after the
 *    recorder's own thread end) and a thread_local destructor
 *    (__cxa_thread_atexit_impl, what C++'s thread_local uses) that call
 *    recorded functions and backtrace after the thread's own frames are gone;
 *  - atexit handlers and a destructor function calling recorded functions
 *    and backtrace after main;
 *  - a signal handler on an alternate stack that lies in main's own frame
 *    (above the interrupted frames), raised 11 frames deep: backtrace, a
 *    recursion, and a second one left by siglongjmp;
 *  - two makecontext coroutines whose stacks are neighbours in main's frame,
 *    resumed in turn by a recorded function, each suspended 20 frames deep
 *    several times (backtrace there), one left unfinished at the end;
 *  - setjmp/longjmp across 40 frames and into a frame that returns through
 *    recorded frames after;
 *  - a vfork child and a fork child (which walks its copied stack) ending
 *    with _exit;
 *  - dlopen through a tail call (`return dlopen(...)`: its caller is the
 *    recorded function's caller) of a library only the program's RUNPATH
 *    finds (libcantell_dl.so, tests/progs/cantell_dl.c);
 * and last its own call counts ("calls F N", tests/matrix_check.py) and the
 * callers its stack gives some of them ("calls A->B N").  With two
 * arguments, it waits for an attach first (wait_for_attach). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>
#include "noipa.h"

#define COUNTED(f) static volatile long n_##f
COUNTED(show);
COUNTED(deep);
COUNTED(unwinder);
COUNTED(level);
COUNTED(leave);
COUNTED(worker);
COUNTED(late_work);
COUNTED(tsd_end);
COUNTED(tls_end);
COUNTED(at_exit_work);
COUNTED(sig_deep);
COUNTED(on_signal);
COUNTED(sig_rec);
COUNTED(co_rec);
COUNTED(co_body);
COUNTED(drive);
COUNTED(jdeep);
COUNTED(jmid);
COUNTED(child_work);
COUNTED(cleanup);
COUNTED(cleanup_var);
COUNTED(load_lib);
static volatile int cleanups, cleanup_vars;

/* "WHAT: N frames: a b c ..." from backtrace_symbols (the name between '('
 * and '+', "?" for none), into out (printed later by main when the caller
 * is another thread or a child). */
NOIPA void show_into(char *out, size_t len, const char *what)
{
	n_show++;
	void *buf[128];
	int n = backtrace(buf, 128);
	char **s = backtrace_symbols(buf, n);
	size_t k = (size_t)snprintf(out, len, "%s: %d frames:", what, n);
	for (int i = 0; s && i < n && k < len; i++) {
		const char *o = strchr(s[i], '('), *e = o ? strpbrk(o, "+)") : NULL;
		if (o && e && e > o + 1)
			k += (size_t)snprintf(out + k, len - k, " %.*s", (int)(e - o - 1), o + 1);
		else
			k += (size_t)snprintf(out + k, len - k, " ?");
	}
	free(s);
	TOUCH();
}

static void show(const char *what)
{
	char line[4096];
	show_into(line, sizeof line, what);
	printf("%s\n", line);
}

NOIPA void deep(int n)
{
	n_deep++;
	if (n)
		deep(n - 1);
	else
		show("backtrace 11 deep");
	TOUCH();
}

static _Unwind_Reason_Code ub_cb(struct _Unwind_Context *ctx, void *arg)
{
	char *out = arg;
	Dl_info di;
	uintptr_t ip = _Unwind_GetIP(ctx);
	const char *nm = ip && dladdr((void *)(ip - 1), &di) && di.dli_sname ? di.dli_sname : "?";
	size_t k = strlen(out);
	if (k + strlen(nm) + 2 < 4096)
		snprintf(out + k, 4096 - k, " %s", nm);
	return _URC_NO_REASON;
}

NOIPA void unwinder(int n)
{
	n_unwinder++;
	if (n) {
		unwinder(n - 1);
	} else {
		static char out[4096];
		out[0] = 0;
		_Unwind_Backtrace(ub_cb, out);
		printf("_Unwind_Backtrace 11 deep:%s\n", out);
	}
	TOUCH();
}

/* ---- threads ---- */

static pthread_key_t key;
static int ready[2], never[2];
static char late_line[3][4096]; /* TSD, thread_local, cleanup handler */
extern void *__dso_handle;
int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso);

/* Recorded work done after the thread's recorded frames are gone. */
NOIPA void late_work(int n)
{
	n_late_work++;
	if (n)
		late_work(n - 1);
	TOUCH();
}

/* Every round glibc gives a key's destructors (it asks again for each
 * value set meanwhile, up to PTHREAD_DESTRUCTOR_ITERATIONS): the last runs
 * after every other key's last, the recorder's too. */
NOIPA void tsd_end(void *arg)
{
	uintptr_t round = (uintptr_t)arg;
	n_tsd_end++;
	late_work(3);
	if (round == 1)
		show_into(late_line[0], sizeof late_line[0], "TSD destructor");
	if (round < PTHREAD_DESTRUCTOR_ITERATIONS)
		pthread_setspecific(key, (void *)(round + 1));
	TOUCH();
}

NOIPA void tls_end(void *arg)
{
	(void)arg;
	n_tls_end++;
	late_work(3);
	show_into(late_line[1], sizeof late_line[1], "thread_local destructor");
	TOUCH();
}

NOIPA void cleanup(void *arg)
{
	n_cleanup++;
	cleanups++;
	if (arg) /* the innermost handler: where the thread is as it runs */
		show_into(late_line[2], sizeof late_line[2], "innermost cleanup handler");
	TOUCH();
}

NOIPA void cleanup_var(int *p)
{
	(void)p;
	n_cleanup_var++;
	cleanup_vars++;
}

NOIPA void leave(int cancel)
{
	n_leave++;
	if (cancel) {
		char c;
		if (write(ready[1], "r", 1) != 1)
			abort();
		for (;;)
			if (read(never[0], &c, 1) < 0) /* a cancellation point, never written */
				pause();
	}
	pthread_exit(NULL);
}

NOIPA void level(int n, int cancel)
{
	n_level++;
	int var __attribute__((cleanup(cleanup_var))) = n;
	pthread_cleanup_push(cleanup, n == 0 ? (void *)1 : NULL);
	if (n)
		level(n - 1, cancel);
	else
		leave(cancel);
	pthread_cleanup_pop(0);
	TOUCH();
	(void)var;
}

NOIPA void *worker(void *arg)
{
	n_worker++;
	pthread_setspecific(key, (void *)1);
	__cxa_thread_atexit_impl(tls_end, NULL, &__dso_handle);
	level(5, arg != NULL);
	return NULL;
}

static void thread_case(int cancel)
{
	cleanups = cleanup_vars = 0;
	memset(late_line, 0, sizeof late_line);
	pthread_t t;
	pthread_create(&t, NULL, worker, cancel ? (void *)1 : NULL);
	if (cancel) {
		char c;
		if (read(ready[0], &c, 1) != 1)
			abort();
		pthread_cancel(t);
	}
	void *ret;
	pthread_join(t, &ret);
	printf("%s: %s, %d cleanup handlers, %d cleanup variables\n", cancel ? "pthread_cancel" : "pthread_exit",
	       ret == PTHREAD_CANCELED ? "canceled" : "exited", cleanups, cleanup_vars);
	for (int i = 0; i < 3; i++)
		printf("  %s\n", late_line[i][0] ? late_line[i] : "(did not run)");
}

/* ---- after main ---- */

NOIPA void at_exit_work(int n)
{
	n_at_exit_work++;
	if (n)
		at_exit_work(n - 1);
	else
		show("atexit handler 4 deep");
	TOUCH();
}

NOIPA void at_exit_handler(void)
{
	at_exit_work(3);
	fflush(stdout);
}

__attribute__((destructor)) NOIPA void destructor_fn(void)
{
	show("destructor function");
	fflush(stdout);
}

/* ---- a signal handler on an alternate stack in main's frame ---- */

static sigjmp_buf sig_jb;
static volatile int sig_leave;

NOIPA void sig_rec(int n)
{
	n_sig_rec++;
	if (n)
		sig_rec(n - 1);
	else if (sig_leave)
		siglongjmp(sig_jb, 1);
	TOUCH();
}

NOIPA void on_signal(int sig)
{
	(void)sig;
	n_on_signal++;
	if (!sig_leave)
		show("signal handler on the alternate stack");
	sig_rec(3);
}

NOIPA void sig_deep(int n)
{
	n_sig_deep++;
	if (n)
		sig_deep(n - 1);
	else
		raise(SIGUSR1);
	TOUCH();
}

/* sig_deep(10); then sig_deep(10) again, its handler leaving by siglongjmp
 * to here (two frames above main); then a backtrace here. */
NOIPA void signal_case(void)
{
	sig_deep(10);
	if (sigsetjmp(sig_jb, 1) == 0) {
		sig_leave = 1;
		sig_deep(10);
	}
	sig_leave = 0;
	show("after siglongjmp out of the handler");
	TOUCH();
}

/* ---- coroutines ---- */

#define CO_STACK (64 * 1024)
#define CO_DEPTH 20
static ucontext_t driver_ctx, co_ctx[2];


/* Down CO_DEPTH frames, back to the driver from the bottom (the first
 * coroutine shows its stack there, its first time), and up again. */
NOIPA void co_rec(int id, int n, int round)
{
	n_co_rec++;
	if (n) {
		co_rec(id, n - 1, round);
	} else {
		if (id == 0 && round == 0)
			show("coroutine 0, 21 frames deep");
		swapcontext(&co_ctx[id], &driver_ctx);
	}
	TOUCH();
}

NOIPA void co_body(int id)
{
	n_co_body++;
	for (int round = 0; round < 3; round++)
		co_rec(id, CO_DEPTH, round);
}

NOIPA void co_start(int id)
{
	co_body(id);
	TOUCH();
} /* returns to uc_link: the driver */

/* Resumes the two in turn until the first has ended (three rounds each);
 * the second is left suspended in its last round. */
NOIPA void drive(char (*stacks)[CO_STACK])
{
	n_drive++;
	for (int id = 0; id < 2; id++) {
		getcontext(&co_ctx[id]);
		co_ctx[id].uc_stack.ss_sp = stacks[id];
		co_ctx[id].uc_stack.ss_size = CO_STACK;
		co_ctx[id].uc_link = &driver_ctx;
		makecontext(&co_ctx[id], (void (*)(void))co_start, 1, id);
	}
	for (int turn = 0; turn < 4; turn++) {
		swapcontext(&driver_ctx, &co_ctx[0]);
		if (turn < 3)
			swapcontext(&driver_ctx, &co_ctx[1]);
	}
	show("driver after the coroutines");
	TOUCH();
}

/* ---- setjmp / longjmp ---- */

static jmp_buf jb_far, jb_mid;

NOIPA void jdeep(int n, int to_mid)
{
	n_jdeep++;
	if (n < 0) /* never: a path that returns (-Winfinite-recursion) */
		return;
	if (n)
		jdeep(n - 1, to_mid);
	else
		longjmp(to_mid ? jb_mid : jb_far, 1);
	TOUCH();
}

/* Sets jb_mid 10 frames into a chain, jumps back to it from 30 frames
 * further, and returns through the 10 recorded frames. */
NOIPA void jmid(int n)
{
	n_jmid++;
	if (n) {
		jmid(n - 1);
	} else if (setjmp(jb_mid) == 0) {
		jdeep(29, 1);
	} else {
		show("after longjmp back into a 10-deep chain");
	}
	TOUCH();
}

/* ---- dlopen ---- */

/* A tail call at -O2: dlopen's return address is this function's, and
 * glibc looks the library up in the RUNPATH of the object it is in. */
NOIPA void *load_lib(const char *name)
{
	n_load_lib++;
	return dlopen(name, RTLD_NOW);
}

static void dlopen_case(void)
{
	void *h = load_lib("libcantell_dl.so");
	int (*value)(void) = h ? (int (*)(void))dlsym(h, "cantell_dl_value") : NULL;
	printf("dlopen through a tail call: %s, value %d\n", h ? "found" : "not found", value ? value() : -1);
}

/* ---- children ---- */

NOIPA void child_work(int n)
{
	n_child_work++;
	if (n)
		child_work(n - 1);
	else
		show("fork child 3 deep");
	TOUCH();
}

/* cantell FIFO PIDFILE: writes its pid, waits for a line on the FIFO (an
 * attach, `sonde record -p`), then runs. */
static void wait_for_attach(int argc, char **argv)
{
	if (argc < 3)
		return;
	FILE *pf = fopen(argv[2], "w");
	if (!pf)
		exit(2);
	fprintf(pf, "%d\n", (int)getpid());
	fclose(pf);
	FILE *f = fopen(argv[1], "r");
	char line[64];
	if (!f || !fgets(line, sizeof line, f))
		exit(2);
	fclose(f);
}

int main(int argc, char **argv)
{
	char alt[64 * 1024];           /* the alternate signal stack, in this frame */
	char stacks[2][CO_STACK];      /* the coroutines' stacks, neighbours, in this frame */
	wait_for_attach(argc, argv);
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	atexit(at_exit_handler);
	pthread_key_create(&key, tsd_end);

	show("backtrace in main");
	deep(10);
	unwinder(10);

	if (pipe(ready) || pipe(never))
		return 1;
	thread_case(0);
	thread_case(1);

	stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0 };
	sigaltstack(&ss, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	signal_case();

	drive(stacks);
	printf("coroutine 1 left suspended\n");

	if (setjmp(jb_far) == 0)
		jdeep(39, 0);
	show("after longjmp across 40 frames");
	jmid(9);
	dlopen_case();

	fflush(stdout);
	pid_t p = vfork();
	if (p == 0)
		_exit(3);
	int st = 0;
	waitpid(p, &st, 0);
	printf("vfork child: exit %d\n", WEXITSTATUS(st));
	fflush(stdout);
	p = fork();
	if (p == 0) {
		child_work(2);
		fflush(stdout);
		_exit(7);
	}
	waitpid(p, &st, 0);
	printf("fork child: exit %d\n", WEXITSTATUS(st));

	/* The calls each function made, whole run (the fork child's and the
	 * handlers after main included: written here as they will be). */
	printf("calls deep %ld\ncalls unwinder %ld\ncalls level %ld\ncalls leave %ld\ncalls worker %ld\n", n_deep,
	       n_unwinder, n_level, n_leave, n_worker);
	printf("calls late_work %ld\ncalls tsd_end %ld\ncalls tls_end %ld\n", n_late_work, n_tsd_end, n_tls_end);
	printf("calls sig_deep %ld\ncalls on_signal %ld\ncalls sig_rec %ld\n", n_sig_deep, n_on_signal, n_sig_rec);
	printf("calls co_rec %ld\ncalls co_body %ld\ncalls drive %ld\n", n_co_rec, n_co_body, n_drive);
	printf("calls jdeep %ld\ncalls jmid %ld\ncalls signal_case 1\ncalls load_lib %ld\n", n_jdeep, n_jmid,
	       n_load_lib);
	printf("calls child_work 3\n");
	printf("calls at_exit_work 4\ncalls show_into %ld\n", n_show + 1 /* fork child */ + 2 /* after main */);
	printf("calls cleanup %ld\ncalls level->cleanup %ld\n", n_cleanup, n_cleanup);
	if (n_cleanup_var) /* built with -fexceptions: run by the unwinding */
		printf("calls cleanup_var %ld\ncalls level->cleanup_var %ld\n", n_cleanup_var, n_cleanup_var);
	/* The callers as the program's stack has them: the destructors after a
	 * thread's frames are gone, the coroutines' first functions, the
	 * handlers after main are called by no recorded function; a signal
	 * handler by the function it interrupted. */
	printf("calls <root>->tsd_end %ld\ncalls <root>->tls_end %ld\n", n_tsd_end, n_tls_end);
	printf("calls sig_deep->on_signal %ld\ncalls on_signal->sig_rec %ld\n", n_on_signal, n_on_signal);
	printf("calls <root>->co_start 2\ncalls co_start->co_body 2\ncalls co_body->co_rec 6\n");
	printf("calls <root>->at_exit_handler 1\ncalls <root>->destructor_fn 1\ncalls jmid->jdeep 1\n");
	return 0;
}
