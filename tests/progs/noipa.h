/* noipa.h — NOIPA: a function that stays a real call in the machine code,
 * on GCC (noipa: no inlining, no cloning, no call removal) and Clang
 * (noinline; the functions that use it touch `noipa_sink`, so that no call
 * to them is removed as having no effect). */
#ifndef SONDE_TESTS_NOIPA_H
#define SONDE_TESTS_NOIPA_H
#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif
static volatile int noipa_sink;
#define TOUCH() (noipa_sink++)
#endif
