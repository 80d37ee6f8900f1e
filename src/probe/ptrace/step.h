/* step.h — executing a hit (step.c): pre-handlers, the displaced instruction
 * (emulated or out of line), post-handlers; faults of the displaced
 * instruction; the hit's floating-point registers, read on demand. */
#ifndef SONDE_PROBE_STEP_H
#define SONDE_PROBE_STEP_H

#include "arch/arch.h"

struct bp;
struct engine;
struct hit;
struct thr;

void step_hit(struct engine *e, struct thr *th, arch_regs *r, struct bp *b);
void step_post(struct engine *e, struct thr *th, arch_regs *r, struct bp *b);
void step_fault(struct engine *e, struct thr *th, arch_regs *r, struct bp *b, int sig);
/* Fills h->fp on first use; -1 if the registers cannot be read. */
int hit_fpregs(struct hit *h);

#endif
