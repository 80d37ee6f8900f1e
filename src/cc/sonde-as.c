/* sonde-as.c — the assembler filter sonde-cc puts in front of `as` (through
 * gcc's -B), installed as lib/sonde/as/as.
 *
 * Why: GCC 12 names the wrong linked-to symbol in the SHF_LINK_ORDER section
 * it emits per function for -fpatchable-function-entry:
 *     .section __patchable_function_entries,"awo",@progbits,FIRST_FUNCTION
 *     .quad .LPFE7
 * names the first function of the file for every entry, so the entry of a
 * COMDAT function (C++ inline functions, templates) is linked to another
 * section; when the linker discards the duplicate COMDAT copy, ld fails with
 * "defined in discarded section" (leveldb, any std::map user).  Fixed in
 * later GCCs; here each such line is rewritten to name the entry's own label
 * (.LPFE7, defined in the function's section), so the entry lives and dies
 * with its function.
 *
 * Also: GCC fills the 5-byte entry sled with five one-byte nops, which a
 * dormant program decodes and runs on every call (measured: 6% more user time
 * on SQLite's speedtest1).  The filter writes them as one five-byte nop, as
 * Clang does; the runtime turns it into a call as a single instruction.
 * Exit sleds (docs/INSTRUMENTATION.md, "Exit sleds"): in each function that
 * has a patchable entry, a five-byte nop before every `ret`, and a record of
 * them in a section of sonde's own, __sonde_exit_sleds, linked (SHF_LINK_ORDER)
 * to the function's entry as __patchable_function_entries is, read-only and
 * position independent (offsets from each field's own address, resolved by
 * the linker: no dynamic relocation, nothing written at load):
 *     .long .LPFEn - .          the function's padding (its entry's record)
 *     .long NRET | NTAIL << 16
 *     .long .Lsonde_xK - . ...  each sled before a `ret`, then each before a
 *                               tail call `jmp symbol`
 * While sonde records, the runtime turns them into calls of the module's exit
 * trampolines, and the function's entry keeps its return address; a tail
 * call's sled replaces it just before the jump (the callee returns through
 * sonde's exit trampoline, which closes both).  A function with an exit the
 * filter cannot classify (an indirect `jmp *` that may be a tail call, a
 * `ret` of another form, a conditional jump to a symbol, a branch in inline
 * assembly) gets no sled and no record: sonde replaces its return address at
 * the entry, as for every function of a binary built without sonde-as.
 * Every other line passes through untouched.
 *
 * Input: the .s files on the command line, or standard input (gcc -pipe).
 * Output: a rewritten temporary file handed to the real `as`, the first one
 * in PATH that is not this program.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SONDE_PAD_NOPS 8 /* -fpatchable-function-entry=13,8: 8 before the entry, 5 at it */

static const char PFE[] = "\t.section\t__patchable_function_entries,\"awo\",@progbits,";

/* One function, from its `.LPFEn:` label to its `.LFEn:` label (its cold
 * part included), held until its exits are classified. */
struct fn {
	FILE *buf;          /* its lines */
	char *text;
	size_t len;
	char pfe[64];       /* its label, .LPFEn */
	char *sect;         /* its __patchable_function_entries section line */
	int bad, in_app;    /* an exit not classified; inside #APP */
};

/* Classify one line of a function's body (x86-64, GCC's AT&T output). */
static void classify(struct fn *f, const char *line)
{
	if (!strncmp(line, "#APP", 4)) {
		f->in_app = 1;
		return;
	}
	if (!strncmp(line, "#NO_APP", 7)) {
		f->in_app = 0;
		return;
	}
	if (f->in_app) { /* inline assembly: any branch or return, unknown */
		if (strstr(line, "ret") || strstr(line, "jmp") || !strncmp(line, "\tj", 2))
			f->bad = 1;
		return;
	}
	if (line[0] != '\t' || line[1] == '.')
		return; /* a label or a directive */
	const char *mn = line + 1;
	size_t ml = strcspn(mn, " \t\n");
	const char *op = mn + ml + strspn(mn + ml, " \t");
	if (ml == 3 && !strncmp(mn, "ret", 3) && *op == '\n')
		return; /* a plain `ret`: a sled goes before it */
	if (!strncmp(mn, "ret", 3) || !strncmp(mn, "rep", 3) || !strncmp(mn, "notrack", 7) || !strncmp(mn, "bnd", 3)) {
		f->bad = 1; /* `ret $n`, `rep ret`, `notrack jmp *`: not classified */
		return;
	}
	if (ml == 3 && !strncmp(mn, "jmp", 3) && *op != '*' && strncmp(op, ".L", 2))
		return; /* a tail call: a sled goes before it */
	if (mn[0] == 'j' && (*op == '*' || strncmp(op, ".L", 2)))
		f->bad = 1; /* indirect (a switch, or a tail call), or a conditional one to a symbol */
}

/* Is this line a tail call, `jmp symbol` (not a local label, not indirect)? */
static int is_tail_jmp(const char *p, size_t l)
{
	return l > 6 && !memcmp(p, "\tjmp\t", 5) && p[5] != '*' && strncmp(p + 5, ".L", 2) && !memchr(p + 5, ' ', l - 6);
}

static unsigned long nsleds; /* labels .Lsonde_xK, unique in the file */

/* Write a held function out: with a sled before each `ret` and its record,
 * or, when an exit was not classified, as it came. */
static void fn_flush(struct fn *f, FILE *out)
{
	fclose(f->buf);
	f->buf = NULL;
	int sleds = !f->bad && f->sect && f->pfe[0];
	unsigned long nret = 0, ntail = 0;
	char *rets = NULL, *tails = NULL; /* the record's lines: the ret sleds, then the tail ones */
	size_t rlen = 0, tlen = 0;
	FILE *rl = sleds ? open_memstream(&rets, &rlen) : NULL, *tl = sleds ? open_memstream(&tails, &tlen) : NULL;
	if (sleds && (!rl || !tl))
		sleds = 0;
	int in_app = 0;
	for (char *p = f->text, *end = f->text + f->len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		if (!strncmp(p, "#APP", 4))
			in_app = 1;
		else if (!strncmp(p, "#NO_APP", 7))
			in_app = 0;
		else if (sleds && !in_app && l == 5 && !memcmp(p, "\tret\n", 5)) {
			fprintf(out, ".Lsonde_x%lu:\n\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n", nsleds);
			fprintf(rl, "\t.long\t.Lsonde_x%lu - .\n", nsleds++);
			nret++;
		} else if (sleds && !in_app && is_tail_jmp(p, l)) {
			fprintf(out, ".Lsonde_x%lu:\n\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n", nsleds);
			fprintf(tl, "\t.long\t.Lsonde_x%lu - .\n", nsleds++);
			ntail++;
		}
		fwrite(p, 1, l, out);
		p += l;
	}
	if (rl)
		fclose(rl);
	if (tl)
		fclose(tl);
	if (sleds && nret < 0x10000 && ntail < 0x10000) { /* the record, in the entry record's section but sonde's */
		const char *flags = strstr(f->sect, ",\"awo\",");
		if (!flags)
			flags = ",\"awo\",@progbits,"; /* (checked when the function began) */
		fprintf(out, "\t.pushsection\t__sonde_exit_sleds,\"ao\",%s", flags + strlen(",\"awo\","));
		fprintf(out, "\t.p2align 2\n\t.long\t%s - .\n\t.long\t%lu\n", f->pfe, nret | ntail << 16);
		fwrite(rets, 1, rlen, out);
		fwrite(tails, 1, tlen, out);
		fputs("\t.popsection\n", out);
	}
	free(rets);
	free(tails);
	free(f->text);
	f->text = NULL;
	f->pfe[0] = 0;
	f->bad = f->in_app = 0;
}

/* Copy `in` to `out`, mending __patchable_function_entries section lines
 * (the section line is held, with the alignment lines after it, until the
 * `.quad .LPFEn` that names the entry's label), joining each entry sled's
 * five nops into one instruction (after a `.LPFEn:` label: the 8 padding
 * nops pass, then the first 5 nops after the function's label become one),
 * and putting exit sleds into each function (struct fn). */
enum { SLED_NONE, SLED_PAD, SLED_WAIT, SLED_NOPS };

static int filter(FILE *in, FILE *out0)
{
	char *held = NULL, *aligns = NULL; /* held section line, alignment lines after it */
	size_t cap = 0, alen = 0;
	char *line = NULL;
	FILE *abuf = NULL, *out = out0;
	int sled = SLED_NONE, nops = 0;
	struct fn f = { 0 };
	char *sect = NULL; /* the last entry section line written */
	while (getline(&line, &cap, in) >= 0) {
		if (held && (!strncmp(line, "\t.align", 7) || !strncmp(line, "\t.p2align", 9))) {
			fputs(line, abuf);
			continue;
		}
		if (held) {
			const char *q = strstr(line, ".quad\t.LPFE");
			free(sect);
			sect = NULL;
			if (q) { /* name the entry's own label as the linked-to symbol */
				const char *lab = q + 6;
				int ll = (int)strcspn(lab, " \t\n");
				if (asprintf(&sect, "%.*s,%.*s\n", (int)(strrchr(held, ',') - held), held, ll, lab) < 0)
					return -1;
				fputs(sect, out);
			} else {
				fputs(held, out);
			}
			fclose(abuf);
			fwrite(aligns, 1, alen, out);
			free(aligns);
			free(held);
			held = NULL;
		}
		if (!strncmp(line, PFE, sizeof PFE - 1)) {
			if (!(held = strdup(line)) || !(abuf = open_memstream(&aligns, &alen)))
				return -1;
			continue;
		}
		int is_nop = !strcmp(line, "\tnop\n");
		if (!strncmp(line, ".LPFE", 5) && strchr(line, ':')) {
			sled = SLED_PAD;
			nops = 0;
			if (f.buf) { /* a function not ended: as it came */
				f.bad = 1;
				fn_flush(&f, out0);
			}
			if (!(f.buf = open_memstream(&f.text, &f.len)))
				return -1;
			out = f.buf;
			size_t ll = strcspn(line, ":");
			snprintf(f.pfe, sizeof f.pfe, "%.*s", (int)ll, line);
			if (ll >= sizeof f.pfe)
				f.bad = 1;
			free(f.sect);
			f.sect = sect; /* the entry section line names this label */
			sect = NULL;
			size_t sl = f.sect ? strlen(f.sect) : 0, pl = strlen(f.pfe);
			if (!f.sect || sl < pl + 2 || f.sect[sl - pl - 2] != ',' || strncmp(f.sect + sl - pl - 1, f.pfe, pl) ||
			    !strstr(f.sect, ",\"awo\",@progbits,"))
				f.bad = 1; /* the entry section line does not name this label */
		} else if (sled == SLED_PAD && is_nop) {
			if (++nops == SONDE_PAD_NOPS)
				sled = SLED_WAIT;
		} else if (sled == SLED_PAD) {
			sled = SLED_NONE; /* not the layout we know: leave it */
		} else if ((sled == SLED_WAIT || sled == SLED_NOPS) && is_nop) {
			sled = SLED_NOPS;
			if (++nops == SONDE_PAD_NOPS + 5) {
				fputs("\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n", out);
				sled = SLED_NONE;
			}
			continue;
		} else if (sled == SLED_NOPS) { /* fewer than 5: give back what was held */
			for (; nops > SONDE_PAD_NOPS; nops--)
				fputs("\tnop\n", out);
			sled = SLED_NONE;
		}
		fputs(line, out);
		if (f.buf) {
			classify(&f, line);
			if (!strncmp(line, ".LFE", 4)) { /* the function's end */
				fn_flush(&f, out0);
				out = out0;
			}
		}
	}
	if (held) {
		fputs(held, out);
		fclose(abuf);
		fwrite(aligns, 1, alen, out);
		free(aligns);
		free(held);
	}
	for (; sled == SLED_NOPS && nops > SONDE_PAD_NOPS; nops--)
		fputs("\tnop\n", out);
	if (f.buf) {
		f.bad = 1;
		fn_flush(&f, out0);
	}
	free(f.sect);
	free(sect);
	free(line);
	return ferror(in) || ferror(out0) ? -1 : 0;
}

/* The real assembler: the first `as` in PATH that is not this file. */
static int find_as(char *buf, size_t len)
{
	struct stat me, st;
	if (stat("/proc/self/exe", &me) != 0)
		return -1;
	const char *path = getenv("PATH");
	for (const char *p = path && *path ? path : "/usr/bin:/bin"; *p;) {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n && snprintf(buf, len, "%.*s/as", (int)n, p) < (int)len && access(buf, X_OK) == 0 &&
		    stat(buf, &st) == 0 && !(st.st_dev == me.st_dev && st.st_ino == me.st_ino))
			return 0;
		p += n + (e != NULL);
	}
	return -1;
}

int main(int argc, char **argv)
{
	char real[PATH_MAX];
	if (find_as(real, sizeof real) != 0) {
		fprintf(stderr, "sonde-as: error: no assembler `as` in PATH\n");
		return 1;
	}
	/* Which arguments are assembly inputs: non-options, not option values. */
	int ninputs = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-o") || !strcmp(a, "-I") || !strcmp(a, "--defsym") || !strcmp(a, "-MD")) {
			i++;
			continue;
		}
		if (a[0] != '-' || !strcmp(a, "-"))
			ninputs++;
	}
	char **nargv = calloc((size_t)argc + 2, sizeof *nargv);
	if (!nargv)
		return 1;
	char tmpl[] = "/tmp/sonde-as.XXXXXX.s";
	int fd = mkstemps(tmpl, 2);
	if (fd < 0) {
		fprintf(stderr, "sonde-as: error: temporary file (%s)\n", strerror(errno));
		return 1;
	}
	FILE *out = fdopen(fd, "w");
	int n = 0, rc = 0;
	nargv[n++] = real;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-o") || !strcmp(a, "-I") || !strcmp(a, "--defsym") || !strcmp(a, "-MD")) {
			nargv[n++] = argv[i];
			if (i + 1 < argc)
				nargv[n++] = argv[++i];
			continue;
		}
		if (a[0] != '-' || !strcmp(a, "-")) {
			FILE *in = strcmp(a, "-") ? fopen(a, "r") : stdin;
			if (!in) {
				fprintf(stderr, "sonde-as: error: %s (%s)\n", a, strerror(errno));
				rc = 1;
				break;
			}
			rc |= filter(in, out) != 0;
			if (in != stdin)
				fclose(in);
			continue;
		}
		nargv[n++] = argv[i];
	}
	if (!ninputs && !rc)
		rc |= filter(stdin, out) != 0;
	if (fclose(out) != 0 || rc) {
		fprintf(stderr, "sonde-as: error: could not filter the assembly\n");
		unlink(tmpl);
		free(nargv);
		return 1;
	}
	nargv[n++] = tmpl;
	nargv[n] = NULL;
	/* Run as a child so that the temporary file is removed afterwards. */
	pid_t pid = fork();
	if (pid == 0) {
		execv(real, nargv);
		fprintf(stderr, "sonde-as: error: cannot run %s (%s)\n", real, strerror(errno));
		_exit(127);
	}
	int status = 1;
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		status = 1 << 8;
	unlink(tmpl);
	free(nargv);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
