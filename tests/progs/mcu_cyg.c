/* mcu_cyg.c — the call-count oracle of tests/e2e/record_mcu.sh: linked into
 * mcu_profile.c built with -finstrument-functions (this file without), it
 * counts the entries of each function by address and prints them, one
 * "cyg ADDRESS COUNT" line each (decimal, the address with the Thumb bit
 * cleared), through semihosting. */
#define NOINSTR __attribute__((no_instrument_function))

void mcu_puts(const char *s);

static struct { unsigned long fn, n; } tab[64];
static int ntab, overflow;

NOINSTR void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	unsigned long a = (unsigned long)fn & ~1ul;
	for (int i = 0; i < ntab; i++)
		if (tab[i].fn == a) {
			tab[i].n++;
			return;
		}
	if (ntab == 64) {
		overflow++;
		return;
	}
	tab[ntab].fn = a;
	tab[ntab++].n = 1;
}

NOINSTR void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)fn;
	(void)site;
}

NOINSTR static char *num(char *p, unsigned long v)
{
	char b[24];
	int i = 0;
	do { b[i++] = (char)('0' + v % 10); v /= 10; } while (v);
	while (i)
		*p++ = b[--i];
	return p;
}

NOINSTR void cyg_dump(void)
{
	static char line[64];
	for (int i = 0; i <= ntab; i++) {
		char *p = line;
		const char *w = i < ntab ? "cyg " : "cyg_overflow ";
		while (*w)
			*p++ = *w++;
		if (i < ntab) {
			p = num(p, tab[i].fn);
			*p++ = ' ';
			p = num(p, tab[i].n);
		} else {
			p = num(p, (unsigned long)overflow);
		}
		*p++ = '\n';
		*p = 0;
		mcu_puts(line);
	}
}
