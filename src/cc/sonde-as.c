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
 * Clang's assembly (sonde-cc gives Clang -fno-integrated-as) has another
 * shape and is read by filter_clang below: the same records, the same rules.
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

/* Classify one line of a function's body (x86-64, GCC's AT&T output; Clang's: classify_clang). */
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

static int filter_gcc(FILE *in, FILE *out0)
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

/* ---- Clang (-fno-integrated-as, see sonde-cc.c) ----
 * Clang's shape differs from GCC's:
 *     .LtmpN:                 # @f        the padding label (named by the entry)
 *             nop  x 8                    the padding, then the function
 *     f:
 *             .cfi_startproc
 *             nopl 8(%rax,%rax)           the entry sled, one five-byte nop already
 *             ...      retq | jmp g@PLT  # TAILCALL | jmpq *%rax  # TAILCALL
 *     .Lfunc_endM:
 *             .size f, .Lfunc_endM-f
 *             .cfi_endproc
 *             .section __patchable_function_entries,"aw",@progbits
 *             .p2align 3
 *             .quad .LtmpN
 * The entry's section comes after the function and, assembled by GNU as,
 * without its link to the function (Clang takes `as` for binutils < 2.36,
 * and Clang 14's order of the group and the linked-to symbol in the "aGwo"
 * form it writes for newer ones is not the one GNU as reads): each such line
 * is rewritten to "awo",@progbits,.LtmpN, the padding label, defined in the
 * function's section (its COMDAT group included), as for GCC above.
 * The whole file is read first; a function is the lines from the label after
 * its padding to its .Lfunc_end label, and gets exit sleds if every exit is
 * a plain `ret`/`retq` or a tail call `jmp symbol`, and nothing else in it
 * could leave it or make the sled change an instruction: no section change,
 * no data directive, no prefix on a line of its own before a return, no
 * `ret`, jump or data in inline assembly (#APP), no conditional tail call.
 * An indirect `jmp *` is a jump table's or a computed goto's when the file
 * is verbose (Clang's comments, on by default) and the line has no
 * `# TAILCALL` comment (Clang marks every tail call: its TAILJMP opcodes);
 * an indirect tail call, or any indirect jump in a file without comments,
 * leaves the function on return-address replacement. */

struct line {
	const char *p;
	size_t n; /* without the newline */
};

static int line_is(const struct line *l, const char *s)
{
	size_t n = strlen(s);
	return l->n == n && !memcmp(l->p, s, n);
}

static int line_starts(const struct line *l, const char *s)
{
	size_t n = strlen(s);
	return l->n >= n && !memcmp(l->p, s, n);
}

/* The label a line defines (`name:`, maybe a comment after), or 0. */
static size_t label_def(const struct line *l)
{
	if (!l->n || l->p[0] == '\t' || l->p[0] == ' ' || l->p[0] == '#')
		return 0;
	size_t k = 0;
	while (k < l->n && l->p[k] != ':' && l->p[k] != ' ' && l->p[k] != '\t' && l->p[k] != '"')
		k++;
	if (k == 0 || k >= l->n || l->p[k] != ':')
		return 0;
	for (size_t j = k + 1; j < l->n; j++) { /* only blanks or a comment after */
		if (l->p[j] == '#')
			break;
		if (l->p[j] != ' ' && l->p[j] != '\t')
			return 0;
	}
	return k;
}

/* Does the word list of `s` (n bytes) hold a word that could leave the
 * function or be a prefix to one: a `ret`, a jump, a loop, or data? */
static int app_risky(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		while (i < n && !(s[i] == '.' || s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		                  (s[i] >= '0' && s[i] <= '9')))
			i++;
		size_t b = i;
		while (i < n && (s[i] == '.' || s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		                 (s[i] >= '0' && s[i] <= '9')))
			i++;
		size_t w = i - b;
		const char *p = s + b;
		if (!w)
			continue;
		if (p[0] == 'j' || p[0] == 'J' || (w >= 4 && !strncasecmp(p, "loop", 4)) || p[0] == '.')
			return 1; /* a jump, a loop, a directive (data, a section change) */
		for (size_t k = 0; k + 3 <= w; k++)
			if (!strncasecmp(p + k, "ret", 3))
				return 1;
	}
	return 0;
}

static int word_in(const char *w, size_t n, const char *const *list)
{
	for (int i = 0; list[i]; i++)
		if (strlen(list[i]) == n && !memcmp(w, list[i], n))
			return 1;
	return 0;
}

/* Instruction prefixes Clang may print as a word of their own (TLS sequences
 * print `data16` and `rex64` on lines of their own). */
static const char *const prefixes[] = { "data16", "data32", "addr32", "rex64", "rex", "rep", "repe", "repz", "repne",
	                                "repnz", "lock", "notrack", "bnd", "cs", "ds", "es", "fs", "gs", "ss", "xacquire",
	                                "xrelease", NULL };

/* Directives that would put something other than code into the function's
 * bytes, or move the following lines elsewhere. */
static const char *const unsafe_dirs[] = {
	".section", ".text", ".data", ".bss", ".pushsection", ".popsection", ".previous", ".subsection",
	".byte", ".short", ".value", ".word", ".hword", ".2byte", ".4byte", ".8byte", ".long", ".int", ".quad",
	".octa", ".zero", ".fill", ".skip", ".space", ".ascii", ".asciz", ".string", ".inst", ".insn", ".reloc",
	".org", ".incbin", ".type", ".include", ".rept", ".irp", ".macro", ".if", NULL
};

enum { X_NONE, X_RET, X_TAIL };

/* Classify a Clang function body, lines [b, e): 0 if every exit is
 * classified (kind[i] set for each sled), -1 if not. */
static int classify_clang(const struct line *L, size_t b, size_t e, unsigned char *kind, int verbose)
{
	int in_app = 0, prefix = 0;
	for (size_t i = b; i < e; i++) {
		const char *s = L[i].p, *end = L[i].p + L[i].n;
		if (label_def(&L[i]))
			continue;
		if (L[i].n && s[0] != '\t' && s[0] != ' ' && s[0] != '#')
			return -1; /* at column 0 and not a label: unknown */
		while (s < end && (*s == ' ' || *s == '\t'))
			s++;
		if (s == end)
			continue;
		if (*s == '#') {
			if ((size_t)(end - s) >= 4 && !memcmp(s, "#APP", 4))
				in_app = 1;
			else if ((size_t)(end - s) >= 7 && !memcmp(s, "#NO_APP", 7))
				in_app = 0;
			continue; /* a comment */
		}
		if (in_app) {
			if (app_risky(s, (size_t)(end - s)))
				return -1;
			prefix = 1; /* inline assembly then a return: the sled would split what it wrote */
			continue;
		}
		const char *hash = memchr(s, '#', (size_t)(end - s));
		const char *ie = hash ? hash : end; /* the instruction, without its comment */
		int tailcall = hash && memmem(hash, (size_t)(end - hash), "TAILCALL", 8) != NULL;
		while (ie > s && (ie[-1] == ' ' || ie[-1] == '\t'))
			ie--;
		size_t wl = strcspn(s, " \t#");
		if (s + wl > ie)
			wl = (size_t)(ie - s);
		if (*s == '.') {
			if (word_in(s, wl, unsafe_dirs))
				return -1;
			continue; /* .cfi_*, .loc, .p2align: no bytes of their own in the way */
		}
		if (memchr(s, ';', (size_t)(ie - s)) || memchr(s, '"', (size_t)(ie - s))) {
			if (app_risky(s, (size_t)(ie - s)))
				return -1; /* several instructions on a line */
			prefix = 0;
			continue;
		}
		const char *mn = s;
		size_t ml = wl;
		const char *op = mn + ml;
		while (op < ie && (*op == ' ' || *op == '\t'))
			op++;
		int prefixed = prefix;
		prefix = 0;
		if (word_in(mn, ml, prefixes)) {
			if (op == ie) {
				prefix = 1; /* a prefix alone: to the next instruction */
				continue;
			}
			prefixed = 1; /* `notrack jmpq *%rax`, `rep stosq` */
			mn = op;
			ml = strcspn(mn, " \t");
			if (mn + ml > ie)
				ml = (size_t)(ie - mn);
			op = mn + ml;
			while (op < ie && (*op == ' ' || *op == '\t'))
				op++;
		}
		size_t ol = (size_t)(ie - op);
		int local = ol > 2 && !memcmp(op, ".L", 2);
		if ((ml == 3 && !memcmp(mn, "ret", 3)) || (ml == 4 && !memcmp(mn, "retq", 4))) {
			if (prefixed || ol || tailcall)
				return -1; /* `ret $n`, `rep ret` */
			kind[i] = X_RET;
			continue;
		}
		for (size_t k = 0; k + 3 <= ml; k++)
			if (!memcmp(mn + k, "ret", 3))
				return -1; /* lret, iretq, sysret... */
		if ((ml == 3 && !memcmp(mn, "jmp", 3)) || (ml == 4 && !memcmp(mn, "jmpq", 4))) {
			if (ol && *op == '*') {
				if (tailcall || !verbose)
					return -1; /* an indirect tail call, or not known not to be one */
				continue;  /* a jump table's, a computed goto's */
			}
			if (local) {
				if (tailcall)
					return -1;
				continue;
			}
			if (!ol || prefixed || memchr(op, ' ', ol) || memchr(op, '\t', ol) || memchr(op, '(', ol) ||
			    memchr(op, ',', ol) || (verbose && !tailcall))
				return -1; /* not the form of a direct tail call */
			kind[i] = X_TAIL;
			continue;
		}
		if (mn[0] == 'j' || (ml >= 4 && !memcmp(mn, "loop", 4))) {
			if (!local || tailcall)
				return -1; /* a conditional tail call, or a jump elsewhere */
			continue;
		}
		if (tailcall)
			return -1; /* a tail call of a form not known here */
	}
	return 0;
}

/* A tiny open-addressing set of labels (the paddings the entries name). */
struct lset {
	const struct line **slot; /* the .quad line's label, by pointer and length */
	size_t *idx, cap;
};

static size_t lhash(const char *p, size_t n)
{
	size_t h = 1469598103934665603u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211u;
	return h;
}

static const char CLANG_PFE[] = "\t.section\t__patchable_function_entries,\"aw\",@progbits";

/* The label a pfe group at line i names (`.quad .LtmpN` after alignments),
 * and the line of that .quad; 0 if it is not that shape. */
static size_t pfe_label(const struct line *L, size_t nl, size_t i, const char **lab, size_t *q)
{
	size_t j = i + 1;
	while (j < nl && (line_starts(&L[j], "\t.p2align") || line_starts(&L[j], "\t.align")))
		j++;
	if (j >= nl || !line_starts(&L[j], "\t.quad\t.L"))
		return 0;
	const char *p = L[j].p + 7;
	size_t n = strcspn(p, " \t#");
	if (p + n > L[j].p + L[j].n)
		n = (size_t)(L[j].p + L[j].n - p);
	*lab = p;
	*q = j;
	return n;
}

static int filter_clang(char *buf, size_t len, FILE *out)
{
	size_t nl = 0, cap = 0;
	struct line *L = NULL;
	for (char *p = buf, *end = buf + len; p < end;) {
		char *nlp = memchr(p, '\n', (size_t)(end - p));
		size_t n = nlp ? (size_t)(nlp - p) : (size_t)(end - p);
		if (nl == cap) {
			cap = cap ? cap * 2 : 4096;
			struct line *nL = realloc(L, cap * sizeof *L);
			if (!nL)
				return free(L), -1;
			L = nL;
		}
		L[nl].p = p;
		L[nl++].n = n;
		p += n + 1;
	}
	int verbose = memmem(buf, len, "# -- Begin function", 19) != NULL;
	unsigned char *kind = calloc(nl + 1, 1);
	char **after = calloc(nl + 1, sizeof *after); /* text written after a line, or instead of it (repl) */
	unsigned char *repl = calloc(nl + 1, 1);
	/* the paddings the entries name: label -> the .quad line */
	size_t hcap = 64;
	while (hcap <= nl)
		hcap *= 2;
	size_t *hq = malloc(hcap * sizeof *hq);
	if (!kind || !after || !repl || !hq) {
		free(L), free(kind), free(after), free(repl), free(hq);
		return -1;
	}
	for (size_t i = 0; i < hcap; i++)
		hq[i] = (size_t)-1;
	int rc = 0;
	for (size_t i = 0; i < nl && !rc; i++) {
		if (!line_is(&L[i], CLANG_PFE))
			continue;
		const char *lab;
		size_t q, n = pfe_label(L, nl, i, &lab, &q);
		if (!n)
			continue; /* not the shape known here: as it came */
		/* link the entry to its function's section, through the padding label */
		if (asprintf(&after[i], "%s,\"awo\",@progbits,%.*s\n", "\t.section\t__patchable_function_entries", (int)n,
		             lab) < 0) {
			after[i] = NULL;
			rc = -1;
			break;
		}
		repl[i] = 1;
		size_t h = lhash(lab, n) & (hcap - 1);
		while (hq[h] != (size_t)-1)
			h = (h + 1) & (hcap - 1);
		hq[h] = q;
	}
	unsigned long base = nsleds; /* the sleds' labels: .Lsonde_x<base>..., in file order */
	for (size_t k = 0; k < nl && !rc; k++) {
		size_t ll = label_def(&L[k]);
		if (!ll || ll < 3 || memcmp(L[k].p, ".L", 2))
			continue;
		size_t h = lhash(L[k].p, ll) & (hcap - 1), q = (size_t)-1;
		for (; hq[h] != (size_t)-1; h = (h + 1) & (hcap - 1)) {
			const char *lab = L[hq[h]].p + 7;
			if (!strncmp(lab, L[k].p, ll) && (lab + ll == L[hq[h]].p + L[hq[h]].n || strchr(" \t#", lab[ll]))) {
				q = hq[h];
				break;
			}
		}
		if (q == (size_t)-1)
			continue;
		/* the padding: 8 nops, then the function's label */
		size_t b = k + 1, j;
		for (j = 0; j < SONDE_PAD_NOPS && b + j < nl && line_is(&L[b + j], "\tnop"); j++)
			;
		if (j != SONDE_PAD_NOPS || b + j >= nl)
			continue;
		b += j;
		size_t sl = label_def(&L[b]);
		if (!sl)
			continue;
		/* the body, to .Lfunc_endN: followed by `.size f, .Lfunc_endN-f` */
		size_t e;
		for (e = b + 1; e < nl && !(label_def(&L[e]) && line_starts(&L[e], ".Lfunc_end")); e++)
			if (line_is(&L[e], CLANG_PFE) || line_starts(&L[e], "\t.cfi_endproc"))
				break;
		if (e >= nl || !label_def(&L[e]) || !line_starts(&L[e], ".Lfunc_end"))
			continue;
		size_t el = label_def(&L[e]);
		char *size;
		if (asprintf(&size, "\t.size\t%.*s, %.*s-%.*s", (int)sl, L[b].p, (int)el, L[e].p, (int)sl, L[b].p) < 0) {
			rc = -1;
			break;
		}
		int sized = e + 1 < nl && line_is(&L[e + 1], size);
		free(size);
		if (!sized || q < e)
			continue;
		if (classify_clang(L, b + 1, e, kind, verbose) != 0) {
			memset(kind + b + 1, X_NONE, e - b - 1);
			continue;
		}
		/* the sleds' labels, numbered in the order written; the record after the entry's .quad */
		char *rec = NULL;
		size_t rlen = 0;
		FILE *r = open_memstream(&rec, &rlen);
		if (!r) {
			rc = -1;
			break;
		}
		unsigned long nret = 0, ntail = 0, first = nsleds;
		for (size_t i = b + 1; i < e; i++)
			nret += kind[i] == X_RET, ntail += kind[i] == X_TAIL;
		const char *lab = L[q].p + 7;
		size_t ln = strcspn(lab, " \t#\n");
		fprintf(r, "\t.pushsection\t__sonde_exit_sleds,\"ao\",@progbits,%.*s\n", (int)ln, lab);
		fprintf(r, "\t.p2align 2\n\t.long\t%.*s - .\n\t.long\t%lu\n", (int)ln, lab, nret | ntail << 16);
		for (int pass = X_RET; pass <= X_TAIL; pass++) {
			unsigned long id = first;
			for (size_t i = b + 1; i < e; i++)
				if (kind[i]) {
					if (kind[i] == pass)
						fprintf(r, "\t.long\t.Lsonde_x%lu - .\n", id);
					id++;
				}
		}
		fputs("\t.popsection\n", r);
		nsleds += nret + ntail;
		if (fclose(r) != 0 || nret >= 0x10000 || ntail >= 0x10000) {
			free(rec);
			memset(kind + b + 1, X_NONE, e - b - 1);
			nsleds = first;
			continue;
		}
		after[q] = rec;
	}
	/* write: the sleds numbered in file order, as the records were */
	unsigned long x = base;
	for (size_t i = 0; i < nl && !rc; i++) {
		if (kind[i])
			fprintf(out, ".Lsonde_x%lu:\n\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n", x++);
		if (repl[i])
			fputs(after[i], out);
		else {
			fwrite(L[i].p, 1, L[i].n, out);
			if (L[i].p + L[i].n < buf + len)
				fputc('\n', out);
			if (after[i])
				fputs(after[i], out);
		}
	}
	for (size_t i = 0; i < nl; i++)
		free(after[i]);
	free(L), free(kind), free(after), free(repl), free(hq);
	return rc || ferror(out) ? -1 : 0;
}

/* The whole input, then the filter its shape asks for. */
static int filter(FILE *in, FILE *out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return -1;
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, in)) > 0)
		fwrite(chunk, 1, n, m);
	if (ferror(in) || fclose(m) != 0)
		return free(buf), -1;
	int rc;
	if (memmem(buf, len, "\n\t.section\t__patchable_function_entries,\"aw\",@progbits\n", 55)) {
		rc = filter_clang(buf, len, out);
	} else {
		FILE *b = len ? fmemopen(buf, len, "r") : NULL;
		rc = len ? (b ? filter_gcc(b, out) : -1) : 0;
		if (b)
			fclose(b);
	}
	free(buf);
	return rc;
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
