/* remote_count_mcu.c — in-target counting on microcontrollers
 * (remote_count_mcu.h): the sites' checks and the code of the RAM given
 * with --target-ram, for Thumb-2 (src/arch/arm/remote_tramp.c) and RV32
 * (src/arch/riscv/remote_tramp.c); remote_count.c writes it, patches the
 * sites with M, reads the counters and puts the sites back. */
#include "probe/remote/remote_count_mcu.h"

#include "arch/arm/remote_tramp.h"
#include "arch/riscv/remote_tramp.h"
#include "probe/remote/remote_run.h"
#include "sym/sym.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUNC_MAX 65536          /* bytes of a function decoded to check a site */
#define CODE_ALIGN 4096ull      /* the trampolines on their own page: a counter's store does not hit translated code (QEMU) */

/* The ELF's .ARM.attributes: whether its core has Thumb-2 (t32_attrs_thumb2). */
static int arm_thumb2(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ok = 0;
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_ARM_ATTRIBUTES)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (d && d->d_buf)
			ok = t32_attrs_thumb2(d->d_buf, d->d_size);
		break;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ok;
}

int mcu_count_kind(struct rsess *s, const char **why)
{
	int m = s->c.arch->elf_machine;
	if (m != EM_ARM && m != EM_RISCV)
		return 0;
	if (!s->ram_len) {
		*why = "no RAM for the trampolines (--target-ram ADDR:LEN)";
		return -1;
	}
	if (m == EM_ARM && !(s->exe && arm_thumb2(s->exe))) {
		*why = "the program is not for a core with Thumb-2 (ARMv7-M, ARMv7E-M: Cortex-M3, M4...; "
		       "ARMv6-M has no 32-bit branch nor ldrex)";
		return -1;
	}
	return 1;
}

int mcu_site(struct rsess *s, uint64_t addr, uint8_t orig[16], int *olen, const char **why)
{
	struct sym_info fi;
	uint64_t la = addr - s->bias;
	size_t avail = 0;
	if (sym_lookup(s->sym, la, &fi) || !fi.size || la < fi.start || la - fi.start >= fi.size) {
		*why = "not in a function of known size";
		return 1;
	}
	const uint8_t *fc = sym_code(s->sym, fi.start, &avail);
	if (!fc || fi.size > FUNC_MAX || avail < fi.size) {
		*why = "its function's code is not in the ELF";
		return 1;
	}
	int disp = 0;
	int rc = s->c.arch->elf_machine == EM_ARM ? t32_site_check(fc, fi.size, fi.start, la, &disp, why)
	                                          : rv32_site_check(fc, fi.size, fi.start, la, &disp, why);
	if (rc)
		return 1;
	for (int b = 0; b < MCU_JUMP_LEN; b++)
		if (remote_readonly(&s->c, addr + (uint64_t)b)) {
			*why = "in code that cannot be written (flash, ROM)";
			return 1;
		}
	if (remote_read(&s->c, addr, orig, (size_t)disp) || memcmp(orig, fc + (la - fi.start), (size_t)disp)) {
		*why = "the target's code there is not the ELF's";
		return 1;
	}
	*olen = disp;
	return 0;
}

int mcu_build(struct rsess *s, int n, const uint64_t *addrs, const uint8_t (*orig)[16], const int *olen,
              uint8_t *buf, size_t max, uint64_t *code, size_t *code_len, uint64_t *counters, uint8_t *jumps,
              const char **why)
{
	int arm = s->c.arch->elf_machine == EM_ARM;
	uint64_t ram = (s->ram + 7) & ~7ull, end = s->ram + s->ram_len;
	uint64_t c0 = (ram + 8 * (uint64_t)n + CODE_ALIGN - 1) & ~(CODE_ALIGN - 1);
	size_t at = 0;
	*counters = ram;
	*code = c0;
	for (int i = 0; i < n; i++) {
		size_t room = max - at;
		if (c0 + at >= end || room < 128) {
			*why = "no room for the trampolines in --target-ram (the counters, then from the next 4 KiB boundary the code)";
			return 1;
		}
		uint64_t a = c0 + at;
		int m = arm ? t32_tramp(buf + at, room, a, addrs[i], orig[i], olen[i], ram + 8 * (uint64_t)i, why)
		            : rv32_tramp(buf + at, room, a, addrs[i], orig[i], olen[i], ram + 8 * (uint64_t)i, why);
		if (m < 0)
			return 1;
		if ((arm ? t32_branch(jumps + MCU_JUMP_LEN * i, addrs[i], a) : rv32_branch(jumps + MCU_JUMP_LEN * i, addrs[i], a))) {
			*why = arm ? "--target-ram is out of a b.w's reach (±16 MiB) of a site"
			           : "--target-ram is out of a jal's reach (±1 MiB) of a site";
			return 1;
		}
		at += ((size_t)m + 3) & ~(size_t)3;
	}
	if (c0 + at > end) {
		*why = "no room for the trampolines in --target-ram";
		return 1;
	}
	*code_len = at;
	return 0;
}

static int push(uint64_t **out, int *n, int *cap, uint64_t a)
{
	for (int i = 0; i < *n; i++)
		if ((*out)[i] == a)
			return 0;
	if (*n == *cap) {
		uint64_t *v = realloc(*out, (size_t)(*cap = *cap ? 2 * *cap : 8) * sizeof *v);
		if (!v)
			return -1;
		*out = v;
	}
	(*out)[(*n)++] = a;
	return 0;
}

/* RV32: the semihosting sequences anywhere in the executable sections
 * (an assembly routine has no function symbol of known size); three
 * words that mean nothing else. */
static int rv32_exit_sites(struct rsess *s, uint64_t **out, int *n, int *cap)
{
	int fd = open(s->exe, O_RDONLY | O_CLOEXEC), rc = 0;
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	while (elf && !rc && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		for (size_t off = 4; off + 8 <= d->d_size && !rc; off += 2)
			if (rv32_semihost_at(d->d_buf, d->d_size, off))
				rc = push(out, n, cap, sh.sh_addr + off + s->bias);
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

int mcu_exit_sites(struct rsess *s, uint64_t **out)
{
	struct sym_fn *f = NULL;
	ssize_t nf = sym_functions(s->sym, &f);
	int n = 0, cap = 0, arm = s->c.arch->elf_machine == EM_ARM;
	*out = NULL;
	if (nf < 0)
		return -1;
	for (ssize_t i = 0; i < nf; i++) {
		size_t avail = 0;
		uint64_t start = f[i].addr & ~1ull;
		const uint8_t *c = sym_code(s->sym, start, &avail);
		size_t len = f[i].size < avail ? (size_t)f[i].size : avail;
		if (!c || len > FUNC_MAX)
			continue;
		for (size_t off = 0; off + 2 <= len;) {
			int l = arm ? rarch_arm_insn_len(c + off, len - off) : rarch_riscv_insn_len(c + off, len - off);
			if (l < 0)
				break;
			if ((arm ? l == 2 && c[off] == 0xab && c[off + 1] == 0xbe : rv32_semihost_at(c, len, off)) &&
			    push(out, &n, &cap, start + off + s->bias)) {
				free(f);
				return -1;
			}
			off += (size_t)l;
		}
	}
	free(f);
	if (!arm && s->exe && rv32_exit_sites(s, out, &n, &cap))
		return -1;
	return n;
}

int mcu_exit_breakpoints(struct rsess *s, uint64_t **sites, int *nsites, char *err, size_t n)
{
	if ((*nsites = mcu_exit_sites(s, sites)) < 0) {
		snprintf(err, n, "out of memory");
		return -1;
	}
	for (int i = 0; i < *nsites; i++)
		if (rs_site_add(s, NULL, (*sites)[i], 0, err, n))
			return -1;
	return 0;
}

int mcu_exit_call(struct rsess *s)
{
	uint64_t op = 0;
	int reg = s->c.arch->elf_machine == EM_ARM ? 0 : 10;  /* r0 / a0: the operation */
	return remote_reg(&s->c, reg, &op) == 0 && (op == 0x18 || op == 0x20);
}
