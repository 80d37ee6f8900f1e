/* empty_hooks.c — -finstrument-functions hooks that do nothing: the floor
 * cost of the compiler instrumentation itself. */
__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *f, void *s) { (void)f; (void)s; }
__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *f, void *s) { (void)f; (void)s; }
