/* selfsame.cpp — what a program observes of its own stack and ends, printed:
 * its output must be the same recorded or not (issue 27).  Each case prints
 * the frames it sees (count, and the names backtrace_symbols gives) or the
 * destructors and handlers that ran; then the calls it made ("calls F N",
 * tests/matrix_check.py).  Built with -rdynamic so that backtrace_symbols
 * names the program's functions.  With two arguments, it waits for an
 * attach first (below). */
#include <dlfcn.h>
#include <execinfo.h>
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

static volatile long n_leave, n_unw, n_sigdeep, n_deep, n_level, n_worker, n_jdeep, n_co, n_sig, n_child, n_bt;
static volatile int dtors, cleanups, tsd_dtors, tls_dtors;

/* "N frames: a b c ..." from backtrace_symbols (the name between '(' and
 * '+', "?" for none). */
extern "C" NOIPA void show(const char *what)
{
	n_bt++;
	void *buf[128];
	int n = backtrace(buf, 128);
	char **s = backtrace_symbols(buf, n);
	printf("%s: %d frames:", what, n);
	for (int i = 0; s && i < n; i++) {
		const char *o = strchr(s[i], '('), *e = o ? strpbrk(o, "+)") : NULL;
		if (o && e && e > o + 1)
			printf(" %.*s", (int)(e - o - 1), o + 1);
		else
			printf(" ?");
	}
	printf("\n");
	free(s);
}

extern "C" NOIPA void deep(int n)
{
	n_deep++;
	if (n)
		deep(n - 1);
	else
		show("backtrace 11 deep");
	TOUCH();
}

/* _Unwind_Backtrace: the names dladdr gives the frames. */
static _Unwind_Reason_Code ub_cb(struct _Unwind_Context *ctx, void *arg)
{
	char *out = (char *)arg;
	Dl_info di;
	uintptr_t ip = _Unwind_GetIP(ctx);
	const char *nm = ip && dladdr((void *)(ip - 1), &di) && di.dli_sname ? di.dli_sname : "?";
	if (strlen(out) + strlen(nm) + 2 < 4096) {
		strcat(out, " ");
		strcat(out, nm);
	}
	return _URC_NO_REASON;
}

extern "C" NOIPA void unwinder(int n)
{
	n_unw++;
	if (n) {
		unwinder(n - 1);
	} else {
		static char out[4096];
		out[0] = 0;
		_Unwind_Backtrace(ub_cb, out);
		printf("_Unwind_Backtrace:%s\n", out);
	}
	TOUCH();
}

/* Threads that end by pthread_exit or pthread_cancel six frames deep: one
 * destructor and one cleanup handler per frame, a TSD destructor, a
 * thread_local destructor. */
struct Dtor {
	~Dtor() { dtors++; }
};
struct Tls {
	int used;
	~Tls() { tls_dtors++; }
};
static thread_local Tls tls;
static pthread_key_t key;
static int pipefd[2], pipe2fd[2];
static void cleanup(void *) { cleanups++; }
static void tsd_end(void *) { tsd_dtors++; }

/* The innermost frame has nothing to clean up: the unwinder passes its
 * return address on its own. */
extern "C" NOIPA void leave(int cancel)
{
	n_leave++;
	if (cancel) {
		char c;
		if (write(pipefd[1], "r", 1) != 1) /* ready */
			abort();
		for (;;)
			if (read(pipe2fd[0], &c, 1) < 0) /* never written */
				pause();
	}
	pthread_exit(NULL);
}

extern "C" NOIPA void level(int n, int cancel)
{
	n_level++;
	Dtor d;
	pthread_cleanup_push(cleanup, NULL);
	if (n) {
		level(n - 1, cancel);
	} else {
		leave(cancel);
	}
	pthread_cleanup_pop(0);
	TOUCH();
}

extern "C" NOIPA void *worker(void *arg)
{
	n_worker++;
	tls.used = 1;
	pthread_setspecific(key, (void *)1);
	level(5, arg != NULL);
	return NULL;
}

static void thread_case(int cancel)
{
	dtors = cleanups = tsd_dtors = tls_dtors = 0;
	pthread_t t;
	pthread_create(&t, NULL, worker, cancel ? (void *)1 : NULL);
	if (cancel) {
		char c;
		if (read(pipefd[0], &c, 1) != 1)
			abort();
		pthread_cancel(t);
	}
	void *ret;
	pthread_join(t, &ret);
	printf("%s: %s, %d destructors, %d cleanups, %d TSD destructors, %d thread_local destructors\n",
	       cancel ? "pthread_cancel" : "pthread_exit", ret == PTHREAD_CANCELED ? "canceled" : "exited", dtors,
	       cleanups, tsd_dtors, tls_dtors);
}

/* A signal handler on an alternate stack, four frames deep. */
extern "C" NOIPA void on_signal(int)
{
	n_sig++;
	show("signal handler");
}

extern "C" NOIPA void sig_deep(int n)
{
	n_sigdeep++;
	if (n)
		sig_deep(n - 1);
	else
		raise(SIGUSR1);
	TOUCH();
}

/* A coroutine: backtrace in it, swapped out and back in, two frames deep. */
static ucontext_t main_ctx, co_ctx;
extern "C" NOIPA void co_inner(void)
{
	n_co++;
	show("coroutine");
	swapcontext(&co_ctx, &main_ctx);
	show("coroutine resumed");
}

extern "C" NOIPA void co_main(void)
{
	n_co++;
	co_inner();
}

/* setjmp / longjmp across 20 frames. */
static jmp_buf jb;
extern "C" NOIPA void jdeep(int n)
{
	n_jdeep++;
	if (n)
		jdeep(n - 1);
	else
		longjmp(jb, 1);
	TOUCH();
}

extern "C" NOIPA void child_work(void)
{
	n_child++;
	TOUCH();
}

static void at_exit_handler(void)
{
	printf("atexit handler ran\n");
	fflush(stdout);
}

struct Static {
	~Static()
	{
		printf("static destructor ran\n");
		fflush(stdout);
	}
};
static Static static_object;

/* selfsame FIFO PIDFILE: writes its pid, waits for a line on the FIFO (an
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
	wait_for_attach(argc, argv);
	atexit(at_exit_handler);
	pthread_key_create(&key, tsd_end);
	show("backtrace in main");
	deep(10);
	unwinder(4);

	thread_case(0);
	if (pipe(pipefd) || pipe(pipe2fd) )
		return 1;
	thread_case(1);

	stack_t ss;
	ss.ss_sp = malloc(1 << 16);
	ss.ss_size = 1 << 16;
	ss.ss_flags = 0;
	sigaltstack(&ss, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	sig_deep(3);

	static char co_stack[1 << 16];
	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = co_stack;
	co_ctx.uc_stack.ss_size = sizeof co_stack;
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, co_main, 0);
	swapcontext(&main_ctx, &co_ctx);
	show("main between");
	swapcontext(&main_ctx, &co_ctx);
	show("main after the coroutine");

	if (setjmp(jb) == 0)
		jdeep(19);
	show("after longjmp");

	fflush(stdout);
	pid_t p = vfork();
	if (p == 0)
		_exit(3);
	int st = 0;
	waitpid(p, &st, 0);
	printf("vfork child: exit %d\n", WEXITSTATUS(st));

	p = fork();
	if (p == 0) {
		child_work();
		_exit(7);
	}
	waitpid(p, &st, 0);
	printf("fork child: exit %d\n", WEXITSTATUS(st));

	printf("calls deep %ld\ncalls level %ld\ncalls worker %ld\ncalls jdeep %ld\n", n_deep, n_level, n_worker,
	       n_jdeep);
	printf("calls unwinder %ld\ncalls sig_deep %ld\ncalls leave %ld\n", n_unw, n_sigdeep, n_leave);
	printf("calls on_signal %ld\ncalls show %ld\n", n_sig, n_bt);
	printf("calls co_main 1\ncalls co_inner 1\ncalls child_work 1\n");
	return 0;
}
