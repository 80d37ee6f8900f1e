/* reloc_survey.c — how much of a real program the relocator can take: every
 * function of an ELF file's .symtab, at its entry and (for functions up to
 * --max-body bytes) at every instruction boundary, tried with reloc_build()
 * for a 5-byte jump and a trampoline 64 MiB away.  Prints the counts and the
 * refusal reasons (addresses blanked), or with --sites one line per site
 * ("ok ADDR DISPLACED" / "refused ADDR REASON") for tests/e2e/reloc_survey.sh
 * to check against objdump's branch targets.
 *   reloc_survey FILE [--sites] [--max-body N] [--format=json] */
#include <ctype.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arch/arch.h"
#include "arch/reloc.h"

#define MAX_REASONS 64
static struct { char text[160]; long n; } reasons[MAX_REASONS];
static int nreasons;

/* The reason with hex numbers and the instruction text blanked, so that
 * refusals group by kind. */
static void count_reason(const char *err)
{
	char r[160];
	size_t o = 0;
	for (const char *p = err; *p && o + 2 < sizeof r; p++) {
		if (p[0] == '(' && p[1] == '0' && p[2] == 'x')
			break; /* "(0xADDR: insn text)" */
		if (p[0] == '0' && p[1] == 'x') {
			r[o++] = 'X';
			p += 2;
			while (isxdigit((unsigned char)*p))
				p++;
			p--;
			continue;
		}
		r[o++] = *p;
	}
	while (o && r[o - 1] == ' ')
		o--;
	r[o] = 0;
	for (int k = 0; k < nreasons; k++)
		if (!strcmp(reasons[k].text, r)) {
			reasons[k].n++;
			return;
		}
	if (nreasons < MAX_REASONS) {
		snprintf(reasons[nreasons].text, sizeof reasons[nreasons].text, "%s", r);
		reasons[nreasons++].n = 1;
	}
}

int main(int argc, char **argv)
{
	const char *file = NULL;
	int sites = 0, json = 0;
	long max_body = 1024;
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--sites"))
			sites = 1;
		else if (!strcmp(argv[k], "--format=json"))
			json = 1;
		else if (!strcmp(argv[k], "--max-body") && k + 1 < argc)
			max_body = strtol(argv[++k], NULL, 10);
		else if (argv[k][0] != '-' && !file)
			file = argv[k];
		else {
			fprintf(stderr, "usage: reloc_survey FILE [--sites] [--max-body N] [--format=json]\n");
			return 1;
		}
	}
	if (!file) {
		fprintf(stderr, "usage: reloc_survey FILE [--sites] [--max-body N] [--format=json]\n");
		return 1;
	}
	elf_version(EV_CURRENT);
	int fd = open(file, O_RDONLY);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	if (!e) {
		fprintf(stderr, "reloc_survey: %s: cannot read as ELF\n", file);
		return 2;
	}
	long funcs = 0, entries_ok = 0, bounds = 0, bounds_ok = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *syms = elf_getdata(scn, NULL);
		size_t nsym = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t s = 0; syms && s < nsym; s++) {
			GElf_Sym sym;
			if (!gelf_getsym(syms, (int)s, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size < 5 ||
			    sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
				continue;
			GElf_Shdr csh;
			Elf_Scn *cs = elf_getscn(e, sym.st_shndx);
			Elf_Data *cd = cs && gelf_getshdr(cs, &csh) && csh.sh_type == SHT_PROGBITS ? elf_getdata(cs, NULL) : NULL;
			if (!cd || !cd->d_buf || sym.st_value < csh.sh_addr ||
			    sym.st_value - csh.sh_addr + sym.st_size > cd->d_size)
				continue;
			const uint8_t *fc = (const uint8_t *)cd->d_buf + (sym.st_value - csh.sh_addr);
			size_t flen = sym.st_size;
			uint64_t fa = sym.st_value;
			funcs++;
			for (size_t off = 0; off < flen;) {
				struct reloc_out o;
				char err[256];
				int ok = reloc_build(fc + off, flen - off, fa + off, 5, fc, flen, fa, fa + off + (64u << 20), &o,
				                     err, sizeof err) == 0;
				if (off == 0)
					entries_ok += ok;
				bounds++;
				bounds_ok += ok;
				if (!ok)
					count_reason(err);
				if (sites) {
					if (ok)
						printf("ok %" PRIx64 " %zu\n", fa + off, o.displaced);
					else
						printf("refused %" PRIx64 " %s\n", fa + off, err);
				}
				if ((long)flen > max_body)
					break; /* the entry only */
				struct arch_insn i;
				size_t n = flen - off < ARCH_MAX_INSN ? flen - off : ARCH_MAX_INSN;
				if (arch_decode(fc + off, n, fa + off, &i) < 0)
					break;
				off += (size_t)i.len;
			}
		}
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	double us = bounds ? ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3) / (double)bounds : 0;
	elf_end(e);
	close(fd);
	if (sites)
		return 0;
	if (json) {
		printf("{\"file\":\"%s\",\"functions\":%ld,\"entries_relocatable\":%ld,\"sites\":%ld,"
		       "\"sites_relocatable\":%ld,\"cpu_us_per_site\":%.1f,\"refused\":[", file, funcs, entries_ok, bounds,
		       bounds_ok, us);
		for (int k = 0; k < nreasons; k++) {
			printf("%s{\"reason\":\"", k ? "," : "");
			for (const char *p = reasons[k].text; *p; p++)
				printf(*p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
			printf("\",\"count\":%ld}", reasons[k].n);
		}
		printf("]}\n");
		return 0;
	}
	printf("%s: %ld functions, %ld entries relocatable (%.1f%%); %ld sites (entries, and every instruction of "
	       "functions up to %ld bytes), %ld relocatable (%.1f%%)\n", file, funcs, entries_ok,
	       funcs ? 100.0 * entries_ok / funcs : 0.0, bounds, max_body, bounds_ok,
	       bounds ? 100.0 * bounds_ok / bounds : 0.0);
	printf("  reloc_build: %.1f µs of CPU per site (decoding the whole function each time)\n", us);
	for (int k = 0; k < nreasons; k++)
		printf("  %7ld  %s\n", reasons[k].n, reasons[k].text);
	return 0;
}
