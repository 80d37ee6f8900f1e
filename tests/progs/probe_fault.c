/* probe_fault.c — target for the probe error-handler tests: instructions
 * that fault when a probe sits on them.  MODE chooses the instruction:
 *   store  a store through a pointer that is NULL on the 5th call (i == 4),
 *          executed out of line by the probe engine (MARK_STORE)
 *   jmp    `jmp *(%rdi)` (emulated by the engine) through a NULL table entry
 *          on the 5th call (jump_through)
 *   ud2    an undefined instruction, reached on the 5th iteration (ud2_here)
 * Without "handle" the program dies of the signal on the 5th iteration (after
 * printing "iter 0".."iter 4").  With "handle" a handler notes the signal,
 * its address and where the faulting instruction was, and siglongjmps back:
 * every 5th iteration (i = 4, 9, 14, 19) faults, the rest run normally, and
 * the program prints a summary and exits 0. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#define N 20

int g_slots[N];
volatile long g_called;

__attribute__((noipa)) void store(int *p, int v)
{
	*p = v;                                   /* MARK_STORE */
}

__attribute__((noipa)) void target_fn(void)
{
	g_called++;
}

/* jump_through(slot): tail-jumps to *slot; ud2_here: an undefined instruction. */
void jump_through(void (**slot)(void));
void ud2_here(void);
__asm__(".text\n"
        ".globl jump_through\n.type jump_through, @function\n"
        "jump_through:\n\tjmp *(%rdi)\n.size jump_through, .-jump_through\n"
        ".globl ud2_here\n.type ud2_here, @function\n"
        "ud2_here:\n\tud2\n\tret\n.size ud2_here, .-ud2_here\n");

static void (*fn_slot)(void) = target_fn;
static sigjmp_buf env;
static volatile int faults;
static int mode_id;
static char notes[N][128];

static void on_fault(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	/* Where the fault happened, as an offset from the probed function: the
	 * same with and without sonde if the program gets its own fault. */
	uintptr_t base = (uintptr_t)(mode_id == 0 ? (void *)store : mode_id == 1 ? (void *)jump_through : (void *)ud2_here);
	uintptr_t addr = (uintptr_t)si->si_addr;
	if (sig == SIGILL) /* si_addr is the instruction: make it position-independent */
		addr -= base;
	snprintf(notes[faults], sizeof notes[0], "signal %d code %d addr 0x%lx pc +0x%lx",
	         sig, si->si_code, (unsigned long)addr, (unsigned long)(pc - base));
	faults++;
	siglongjmp(env, 1);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "store";
	int handle = argc > 2 && !strcmp(argv[2], "handle");
	if (strcmp(mode, "store") && strcmp(mode, "jmp") && strcmp(mode, "ud2")) {
		fprintf(stderr, "usage: probe_fault store|jmp|ud2 [handle]\n");
		return 64;
	}
	mode_id = !strcmp(mode, "store") ? 0 : !strcmp(mode, "jmp") ? 1 : 2;
	if (handle) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_fault;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGILL, &sa, NULL);
	}
	int last = handle ? N : 5;
	long done = 0;
	for (int i = 0; i < last; i++) {
		printf("iter %d\n", i);
		fflush(stdout);
		if (sigsetjmp(env, 1))
			continue;
		int bad = i % 5 == 4;
		if (!strcmp(mode, "store")) {
			store(bad ? NULL : &g_slots[i], i + 1);
		} else if (!strcmp(mode, "jmp")) {
			jump_through(bad ? NULL : &fn_slot);
		} else if (bad) {
			ud2_here();
		}
		done++;
	}
	long sum = 0;
	for (int i = 0; i < N; i++)
		sum += g_slots[i];
	printf("done %ld faults %d sum %ld called %ld\n", done, faults, sum, g_called);
	for (int i = 0; i < faults; i++)
		printf("fault %d: %s\n", i, notes[i]);
	return 0;
}
