/* test_probe_arch.c — unit tests of the probe engine's x86-64 layer and spec
 * parser: decoding and classification, emulation of push/pop/mov/lea/jmp/
 * jcc/call/ret, out-of-line slots with RIP-relative fix-up, and specs. */
#include "unit.h"

#include <string.h>

#include "arch/arch.h"
#include "probe/spec.h"

static uint8_t mem[4096];
static const uint64_t base = 0x10000;

static int rd(void *c, uint64_t a, void *b, size_t n)
{
	(void)c;
	if (a < base || a + n > base + sizeof mem)
		return -1;
	memcpy(b, mem + (a - base), n);
	return 0;
}

static int wr(void *c, uint64_t a, const void *b, size_t n)
{
	(void)c;
	if (a < base || a + n > base + sizeof mem)
		return -1;
	memcpy(mem + (a - base), b, n);
	return 0;
}

static const struct arch_mem M = { rd, wr, NULL };

static void decode_classes(void)
{
	struct arch_insn i;
	CHECK(arch_decode((const uint8_t[]){ 0x55 }, 1, 0x1000, &i) == 0 && i.kind == AI_PUSH && i.len == 1);
	CHECK(arch_decode((const uint8_t[]){ 0xf3, 0x0f, 0x1e, 0xfa }, 4, 0x1000, &i) == 0 && i.kind == AI_NOP);
	/* mov 0x2f88(%rip),%eax: out of line, RIP-relative, disp at offset 2 */
	CHECK(arch_decode((const uint8_t[]){ 0x8b, 0x05, 0x88, 0x2f, 0, 0 }, 6, 0x1000, &i) == 0);
	CHECK(i.kind == AI_OTHER && !i.emulable && i.rip_rel && i.disp_off == 2);
	/* ja rel8 */
	CHECK(arch_decode((const uint8_t[]){ 0x77, 0x10 }, 2, 0x1000, &i) == 0 && i.kind == AI_JCC);
	CHECK_EQ_U(arch_branch_target(&i), 0x1012);
	/* loop: cannot be displaced */
	CHECK(arch_decode((const uint8_t[]){ 0xe2, 0xfe }, 2, 0x1000, &i) == 0 && i.kind == AI_BAD);
}

static void emulate_stack_and_branches(void)
{
	struct arch_insn i;
	arch_regs r;
	memset(&r, 0, sizeof r);
	r.rsp = base + 0x800;
	r.rbp = 0x1234;
	r.rip = 0x2000;
	CHECK(arch_decode((const uint8_t[]){ 0x55 }, 1, 0x2000, &i) == 0);      /* push %rbp */
	CHECK(arch_emulate(&i, &r, &M) == 0);
	CHECK_EQ_U(r.rsp, base + 0x7f8);
	CHECK_EQ_U(r.rip, 0x2001);
	uint64_t v;
	rd(NULL, r.rsp, &v, 8);
	CHECK_EQ_U(v, 0x1234);
	CHECK(arch_decode((const uint8_t[]){ 0x5b }, 1, 0x2001, &i) == 0);      /* pop %rbx */
	CHECK(arch_emulate(&i, &r, &M) == 0 && r.rbx == 0x1234 && r.rsp == base + 0x800);
	CHECK(arch_decode((const uint8_t[]){ 0xe8, 0x10, 0, 0, 0 }, 5, 0x2002, &i) == 0); /* call */
	CHECK(arch_emulate(&i, &r, &M) == 0 && r.rip == 0x2017 && r.rsp == base + 0x7f8);
	CHECK(arch_decode((const uint8_t[]){ 0xc3 }, 1, 0x2017, &i) == 0);      /* ret */
	CHECK(arch_emulate(&i, &r, &M) == 0 && r.rip == 0x2007 && r.rsp == base + 0x800);
	/* lea 0x1(%rdi,%rdi,2),%eax */
	r.rdi = 5;
	CHECK(arch_decode((const uint8_t[]){ 0x8d, 0x44, 0x7f, 0x01 }, 4, 0x3000, &i) == 0 && i.kind == AI_LEA);
	CHECK(arch_emulate(&i, &r, &M) == 0 && r.rax == 16 && r.rip == 0x3004);
	/* ja taken / not taken */
	CHECK(arch_decode((const uint8_t[]){ 0x77, 0x10 }, 2, 0x4000, &i) == 0);
	r.eflags = 0;
	CHECK(arch_emulate(&i, &r, &M) == 0 && r.rip == 0x4012);
	r.eflags = 0x40; /* ZF */
	CHECK(arch_emulate(&i, &r, &M) == 0 && r.rip == 0x4002);
	/* a push onto an unmapped stack faults without changing registers */
	r.rsp = 8;
	arch_regs save = r;
	CHECK(arch_decode((const uint8_t[]){ 0x55 }, 1, 0x2000, &i) == 0);
	CHECK(arch_emulate(&i, &r, &M) == -1 && !memcmp(&r, &save, sizeof r));
}

static void ool_rip_fixup(void)
{
	struct arch_insn i;
	uint8_t code[ARCH_SLOT_SIZE];
	const char *why = NULL;
	/* mov 0x100(%rip),%eax at 0x400000 -> target 0x400106 */
	CHECK(arch_decode((const uint8_t[]){ 0x8b, 0x05, 0x00, 0x01, 0, 0 }, 6, 0x400000, &i) == 0);
	int n = arch_ool_build(&i, 0x500000, 0, code, &why);
	CHECK(n == 6 + 14);
	int32_t d;
	memcpy(&d, code + 2, 4);
	CHECK_EQ_U((uint64_t)(0x500000 + 6 + (int64_t)d), 0x400106);
	uint64_t back;
	memcpy(&back, code + 12, 8);
	CHECK_EQ_U(back, 0x400006);
	CHECK(arch_ool_build(&i, 0x400000 + (1ull << 33), 0, code, &why) == -1 && why);
	CHECK(arch_ool_build(&i, 0x500000, 1, code, &why) == 7 && code[6] == 0xcc);
}

static void specs(void)
{
	struct spec sp;
	char err[256];
	CHECK(spec_parse("func:parse_request", &sp, err, sizeof err) == 0 && sp.loc == LOC_FUNC &&
	      !strcmp(sp.func, "parse_request") && !sp.args);
	spec_free(&sp);
	CHECK(spec_parse("var:cache.c:91:entry->hits", &sp, err, sizeof err) == 0 && sp.loc == LOC_LINE &&
	      !strcmp(sp.file, "cache.c") && sp.line == 91 && !strcmp(sp.args, "entry->hits"));
	spec_free(&sp);
	CHECK(spec_parse("assert:f+0x10:n < cap", &sp, err, sizeof err) == 0 && sp.off == 16 &&
	      !strcmp(sp.args, "n < cap"));
	spec_free(&sp);
	CHECK(spec_parse("line:0x401000", &sp, err, sizeof err) == 0 && sp.loc == LOC_ADDR && sp.addr == 0x401000);
	spec_free(&sp);
	CHECK(spec_parse("sys:100ms", &sp, err, sizeof err) == 0 && sp.interval_ns == 100000000ull);
	spec_free(&sp);
	/* C++ names keep their "::"; a single ':' still starts ARGS */
	CHECK(spec_parse("func:leveldb::DBImpl::Write", &sp, err, sizeof err) == 0 && sp.loc == LOC_FUNC &&
	      !strcmp(sp.func, "leveldb::DBImpl::Write") && !sp.args);
	spec_free(&sp);
	CHECK(spec_parse("plugin:ns::f+8:arg::x", &sp, err, sizeof err) == 0 && !strcmp(sp.func, "ns::f") &&
	      sp.off == 8 && !strcmp(sp.args, "arg::x"));
	spec_free(&sp);
	CHECK(spec_parse("var:::g:v", &sp, err, sizeof err) == 0 && !strcmp(sp.func, "::g") && !strcmp(sp.args, "v"));
	spec_free(&sp);
	/* a run of '+' is part of a name (--system's func:libstdc++.so.6:_Znwm); a lone one an offset */
	CHECK(spec_parse("func:libstdc++.so.6:_Znwm", &sp, err, sizeof err) == 0 && !strcmp(sp.func, "libstdc++.so.6") &&
	      !sp.off && !strcmp(sp.args, "_Znwm"));
	spec_free(&sp);
	CHECK(spec_parse("func:/usr/lib/libstdc++.so+4", &sp, err, sizeof err) == 0 &&
	      !strcmp(sp.func, "/usr/lib/libstdc++.so") && sp.off == 4);
	spec_free(&sp);
	CHECK(spec_parse("func:work+x", &sp, err, sizeof err) == -1 && strstr(err, "bad offset"));
	CHECK(spec_parse("nope:main", &sp, err, sizeof err) == -1 && strstr(err, "unknown probe kind"));
	CHECK(spec_parse("func:", &sp, err, sizeof err) == -1);
}

int main(void)
{
	RUN(decode_classes);
	RUN(emulate_stack_and_branches);
	RUN(ool_rip_fixup);
	RUN(specs);
	UNIT_END();
}
