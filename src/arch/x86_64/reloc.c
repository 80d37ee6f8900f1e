/* reloc.c — INTERIM relocator (position-independent instructions and
 * RIP-relative operands only; branches refused).  Replaced by the full one. */
#include "arch/reloc.h"
#include "arch/arch.h"

#include <stdio.h>
#include <string.h>

int reloc_build(const uint8_t *code, size_t avail, uint64_t site, size_t need,
                const uint8_t *func_code, size_t func_len, uint64_t func_addr,
                uint64_t tramp_addr, struct reloc_out *out, char *err, size_t errn)
{
	memset(out, 0, sizeof *out);
	size_t off = 0;
	while (off < need) {
		struct arch_insn in;
		if (off >= avail || arch_decode(code + off, avail - off, site + off, &in)) {
			snprintf(err, errn, "cannot decode the instruction at 0x%llx", (unsigned long long)(site + off));
			return -1;
		}
		if (in.kind == AI_BAD || in.kind == AI_JMP || in.kind == AI_JCC || in.kind == AI_CALL) {
			snprintf(err, errn, "%s at 0x%llx cannot be displaced", in.text, (unsigned long long)in.addr);
			return -1;
		}
		if (out->code_len + (size_t)in.len > RELOC_MAX_CODE) {
			snprintf(err, errn, "too much code to displace");
			return -1;
		}
		uint8_t *o = out->code + out->code_len;
		memcpy(o, in.bytes, (size_t)in.len);
		if (in.rip_rel) {
			int32_t d;
			memcpy(&d, o + in.disp_off, 4);
			int64_t nd = (int64_t)d + (int64_t)(in.addr - (tramp_addr + out->code_len));
			if (nd < INT32_MIN || nd > INT32_MAX) {
				snprintf(err, errn, "rip-relative operand out of ±2 GiB from the trampoline");
				return -1;
			}
			d = (int32_t)nd;
			memcpy(o + in.disp_off, &d, 4);
		}
		out->code_len += (size_t)in.len;
		off += (size_t)in.len;
		out->n_insn++;
		if (in.kind == AI_RET) {
			out->ends_flow = 1;
			break;
		}
	}
	out->displaced = off;
	if (off < need) {
		snprintf(err, errn, "the code ends (ret) within the %zu bytes a jump needs", need);
		return -1;
	}
	if (need > 1 && off > 1) {
		if (!func_code) {
			snprintf(err, errn, "the enclosing function is unknown");
			return -1;
		}
		for (size_t f = 0; f < func_len;) {
			struct arch_insn in;
			if (arch_decode(func_code + f, func_len - f, func_addr + f, &in))
				break;
			uint64_t t = (in.kind == AI_JMP || in.kind == AI_JCC || in.kind == AI_CALL) ? arch_branch_target(&in) : 0;
			if (t > site && t < site + off) {
				snprintf(err, errn, "branch target 0x%llx inside the displaced bytes", (unsigned long long)t);
				return -1;
			}
			f += (size_t)in.len;
		}
	}
	return 0;
}
