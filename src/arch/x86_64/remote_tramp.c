/* remote_tramp.c — x86-64 trampolines of in-target counting
 * (remote_tramp.h). */
#include "arch/x86_64/remote_tramp.h"

#include "arch/reloc.h"

#include <stdio.h>
#include <string.h>

int x64_jmp(uint8_t out[X64_JMP_LEN], uint64_t from, uint64_t to)
{
	int64_t rel = (int64_t)(to - (from + X64_JMP_LEN));
	if (rel < INT32_MIN || rel > INT32_MAX)
		return -1;
	uint32_t r = (uint32_t)(int32_t)rel;
	out[0] = 0xe9;
	for (int i = 0; i < 4; i++)
		out[1 + i] = (uint8_t)(r >> (8 * i));
	return 0;
}

int x64_tramp(uint8_t *out, uint64_t at, uint64_t site, const uint8_t *code, size_t avail, const uint8_t *fcode,
              size_t flen, uint64_t faddr, uint64_t counter, size_t *displaced, char *err, size_t n)
{
	static const uint8_t down[] = { 0x48, 0x8d, 0x64, 0x24, 0x80 };                  /* lea -128(%rsp), %rsp */
	static const uint8_t up[] = { 0x9d, 0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00 }; /* popfq; lea 128(%rsp), %rsp */
	size_t k = 0;
	memcpy(out + k, down, sizeof down);
	k += sizeof down;
	out[k++] = 0x9c;                                                                  /* pushfq */
	/* lock incq counter(%rip): f0 48 ff 05 rel32, rel from the end (8 bytes). */
	int64_t rel = (int64_t)(counter - (at + k + 8));
	if (rel < INT32_MIN || rel > INT32_MAX) {
		snprintf(err, n, "the counter is out of reach of the trampoline");
		return -1;
	}
	out[k++] = 0xf0;
	out[k++] = 0x48;
	out[k++] = 0xff;
	out[k++] = 0x05;
	for (int i = 0; i < 4; i++)
		out[k++] = (uint8_t)((uint32_t)(int32_t)rel >> (8 * i));
	memcpy(out + k, up, sizeof up);
	k += sizeof up;
	struct reloc_out r;
	if (reloc_build(code, avail, site, X64_JMP_LEN, fcode, flen, faddr, at + k, &r, err, n))
		return -1;
	if (k + r.code_len + X64_JMP_LEN > X64_TRAMP_MAX) {
		snprintf(err, n, "no room for the trampoline");
		return -1;
	}
	memcpy(out + k, r.code, r.code_len);
	k += r.code_len;
	if (!r.ends_flow) {
		if (x64_jmp(out + k, at + k, site + r.displaced)) {
			snprintf(err, n, "the trampoline is out of reach of the site");
			return -1;
		}
		k += X64_JMP_LEN;
	}
	*displaced = r.displaced;
	return (int)k;
}
