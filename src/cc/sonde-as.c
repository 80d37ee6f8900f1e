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

/* Copy `in` to `out`, mending __patchable_function_entries section lines
 * (the section line is held, with the alignment lines after it, until the
 * `.quad .LPFEn` that names the entry's label) and joining each entry sled's
 * five nops into one instruction (after a `.LPFEn:` label: the 8 padding
 * nops pass, then the first 5 nops after the function's label become one). */
enum { SLED_NONE, SLED_PAD, SLED_WAIT, SLED_NOPS };

static int filter(FILE *in, FILE *out)
{
	char *held = NULL, *aligns = NULL; /* held section line, alignment lines after it */
	size_t cap = 0, alen = 0;
	char *line = NULL;
	FILE *abuf = NULL;
	int sled = SLED_NONE, nops = 0;
	while (getline(&line, &cap, in) >= 0) {
		if (held && (!strncmp(line, "\t.align", 7) || !strncmp(line, "\t.p2align", 9))) {
			fputs(line, abuf);
			continue;
		}
		if (held) {
			const char *q = strstr(line, ".quad\t.LPFE");
			if (q) { /* name the entry's own label as the linked-to symbol */
				const char *lab = q + 6;
				int ll = (int)strcspn(lab, " \t\n");
				fprintf(out, "%.*s,%.*s\n", (int)(strrchr(held, ',') - held), held, ll, lab);
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
	free(line);
	return ferror(in) || ferror(out) ? -1 : 0;
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
