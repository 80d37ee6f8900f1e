/* test_btf.c — the BTF reader (sym/btf.h): return types of known functions
 * of the host's kernel (/sys/kernel/btf/vmlinux; skipped without it), a
 * split BTF on top of a base, and crafted malformed blobs refused cleanly. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "sym/btf.h"
#include "unit.h"

#define VMLINUX "/sys/kernel/btf/vmlinux"

static void host_vmlinux(void)
{
	struct btf *b = btf_open(VMLINUX, NULL);
	CHECK(b);
	struct sym_ret r;
	CHECK(btf_func_ret(b, "vfs_read", &r) == 0);
	printf("  vfs_read: %s size %u signed %d\n", r.name, r.size, r.is_signed);
	CHECK(!strcmp(r.name, "ssize_t") && r.size == 8 && r.is_signed && !r.is_ptr && !r.is_void);
	CHECK(btf_func_ret(b, "security_file_permission", &r) == 0);
	CHECK(!strcmp(r.name, "int") && r.size == 4 && r.is_signed && !r.is_ptr && !r.is_enum);
	/* kmalloc is inline in recent kernels: __kmalloc or __kmalloc_noprof is the function */
	int km = btf_func_ret(b, "__kmalloc_noprof", &r) == 0 || btf_func_ret(b, "__kmalloc", &r) == 0 ||
	         btf_func_ret(b, "kmalloc", &r) == 0;
	CHECK(km);
	printf("  kmalloc: %s\n", r.name);
	CHECK(r.is_ptr && r.size == 8 && !strcmp(r.name, "void *"));
	CHECK(btf_func_ret(b, "fget", &r) == 0);   /* struct file *fget(unsigned int fd) */
	CHECK(r.is_ptr && !strcmp(r.name, "struct file *"));
	CHECK(btf_func_ret(b, "schedule", &r) == 0);   /* void schedule(void) */
	CHECK(r.is_void && r.size == 0 && !strcmp(r.name, "void"));
	CHECK(btf_func_ret(b, "capable", &r) == 0);    /* bool capable(int cap) */
	CHECK(r.is_bool && r.size == 1 && !strcmp(r.name, "bool"));
	CHECK(btf_func_ret(b, "no_such_function_in_any_kernel", &r) == -1);
	CHECK(btf_func_ret(b, "", &r) == -1);
	btf_free(b);
}

/* A blob builder: the header, the types, the strings. */
struct blob {
	unsigned char b[4096];
	size_t types, ntypes_bytes;
	char strs[512];
	size_t nstrs;
};

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }

static uint32_t add_str(struct blob *x, const char *s)
{
	uint32_t off = (uint32_t)x->nstrs;
	memcpy(x->strs + x->nstrs, s, strlen(s) + 1);
	x->nstrs += strlen(s) + 1;
	return off;
}

static void add_type(struct blob *x, uint32_t name, uint32_t kind, uint32_t vlen, uint32_t sz_type,
                     const uint32_t *more, int nmore)
{
	unsigned char *p = x->b + 24 + x->ntypes_bytes;
	put32(p, name);
	put32(p + 4, kind << 24 | vlen);
	put32(p + 8, sz_type);
	for (int i = 0; i < nmore; i++)
		put32(p + 12 + 4 * i, more[i]);
	x->ntypes_bytes += 12 + 4 * (size_t)nmore;
}

/* The whole blob: its length. */
static size_t finish(struct blob *x)
{
	uint16_t magic = 0xeb9f;
	memcpy(x->b, &magic, 2);
	x->b[2] = 1;
	x->b[3] = 0;
	put32(x->b + 4, 24);
	put32(x->b + 8, 0);
	put32(x->b + 12, (uint32_t)x->ntypes_bytes);
	put32(x->b + 16, (uint32_t)x->ntypes_bytes);
	put32(x->b + 20, (uint32_t)x->nstrs);
	memcpy(x->b + 24 + x->ntypes_bytes, x->strs, x->nstrs);
	return 24 + x->ntypes_bytes + x->nstrs;
}

/* 1 int (signed, 4), 2 typedef myint -> 1, 3 const -> 2, 4 proto -> 3 (no params), 5 func f -> 4,
 * 6 unsigned char (1), 7 proto -> 6, 8 func g -> 7 */
static size_t good_blob(struct blob *x)
{
	memset(x, 0, sizeof *x);
	add_str(x, "");
	uint32_t s_int = add_str(x, "int"), s_my = add_str(x, "myint"), s_f = add_str(x, "f");
	uint32_t s_uc = add_str(x, "unsigned char"), s_g = add_str(x, "g");
	uint32_t enc_signed = 1u << 24 | 32, enc_u8 = 8;
	add_type(x, s_int, 1, 0, 4, &enc_signed, 1);
	add_type(x, s_my, 8, 0, 1, NULL, 0);
	add_type(x, 0, 10, 0, 2, NULL, 0);
	add_type(x, 0, 13, 0, 3, NULL, 0);
	add_type(x, s_f, 12, 0, 4, NULL, 0);
	add_type(x, s_uc, 1, 0, 1, &enc_u8, 1);
	add_type(x, 0, 13, 0, 6, NULL, 0);
	add_type(x, s_g, 12, 0, 7, NULL, 0);
	return finish(x);
}

static void crafted_good(void)
{
	struct blob x;
	size_t n = good_blob(&x);
	struct btf *b = btf_from_mem(x.b, n, NULL);
	CHECK(b);
	struct sym_ret r;
	CHECK(btf_func_ret(b, "f", &r) == 0);
	CHECK(!strcmp(r.name, "myint") && r.size == 4 && r.is_signed);
	CHECK(btf_func_ret(b, "g", &r) == 0);
	CHECK(!strcmp(r.name, "unsigned char") && r.size == 1 && !r.is_signed);
	CHECK(btf_func_ret(b, "h", &r) == -1);

	/* a split BTF on top: ids from 9, strings after the base's */
	struct blob y;
	memset(&y, 0, sizeof y);
	uint32_t s_h = (uint32_t)x.nstrs + add_str(&y, "h");
	add_type(&y, 0, 13, 0, 2, NULL, 0);          /* 9: proto -> base's myint */
	add_type(&y, s_h, 12, 0, 9, NULL, 0);        /* 10: func h -> 9 */
	struct btf *m = btf_from_mem(y.b, finish(&y), b);
	CHECK(m);
	CHECK(btf_func_ret(m, "h", &r) == 0);
	CHECK(!strcmp(r.name, "myint") && r.size == 4 && r.is_signed);
	CHECK(btf_func_ret(m, "f", &r) == -1);       /* the base's functions are not the module's */
	btf_free(m);
	btf_free(b);
}

/* the records' offsets in good_blob's */
enum { T1 = 24, T2 = 40, T3 = 52, T4 = 64, T5 = 76 };

static void malformed(void)
{
	struct blob x;
	size_t n = good_blob(&x);
	struct sym_ret r;
	/* every truncation: refused or not found, never a crash */
	for (size_t k = 0; k < n; k++) {
		struct btf *b = btf_from_mem(x.b, k, NULL);
		if (b) {
			btf_func_ret(b, "f", &r);
			btf_free(b);
		}
	}
	CHECK(!btf_from_mem(x.b, 10, NULL));          /* a truncated header */
	CHECK(!btf_from_mem(x.b, n - 1, NULL));       /* the strings cut short */

	struct blob y = x;
	put32(y.b + 8, 4000);                          /* the type section past the end */
	CHECK(!btf_from_mem(y.b, n, NULL));
	y = x;
	put32(y.b + 20, 0xfffffff0u);                  /* the string section past the end (overflow) */
	CHECK(!btf_from_mem(y.b, n, NULL));
	y = x;
	put32(y.b + 4, 0xffffffffu);                   /* the header longer than the file */
	CHECK(!btf_from_mem(y.b, n, NULL));
	y = x;
	y.b[0] ^= 0xff;                                /* not BTF */
	CHECK(!btf_from_mem(y.b, n, NULL));
	y = x;
	put32(y.b + T1 + 4, 4u << 24 | 0xffff);        /* a struct of 65535 members past the section */
	CHECK(!btf_from_mem(y.b, n, NULL));
	y = x;
	put32(y.b + T1 + 4, 31u << 24);                /* an unknown kind */
	CHECK(!btf_from_mem(y.b, n, NULL));

	/* well-formed records whose ids and names are wrong: not found */
	y = x;
	put32(y.b + T2 + 8, 2);                   /* typedef 2 -> 2: a loop */
	struct btf *b = btf_from_mem(y.b, n, NULL);
	CHECK(b);
	CHECK(btf_func_ret(b, "f", &r) == -1);
	CHECK(btf_func_ret(b, "g", &r) == 0);
	btf_free(b);
	y = x;
	put32(y.b + T2 + 8, 3);                   /* typedef 2 -> const 3 -> typedef 2 */
	CHECK((b = btf_from_mem(y.b, n, NULL)));
	CHECK(btf_func_ret(b, "f", &r) == -1);
	btf_free(b);
	y = x;
	put32(y.b + T2 + 8, 1000000);             /* a type id past the last */
	CHECK((b = btf_from_mem(y.b, n, NULL)));
	CHECK(btf_func_ret(b, "f", &r) == -1);
	btf_free(b);
	y = x;
	put32(y.b + T2, 0xffffff00u);             /* a name offset past the strings */
	CHECK((b = btf_from_mem(y.b, n, NULL)));
	CHECK(btf_func_ret(b, "f", &r) == -1);
	btf_free(b);
	y = x;
	put32(y.b + T5 + 8, 1);               /* func f -> int 1, not a proto */
	CHECK((b = btf_from_mem(y.b, n, NULL)));
	CHECK(btf_func_ret(b, "f", &r) == -1);
	btf_free(b);
	CHECK(!btf_open("/nonexistent/btf", NULL));
}

int main(void)
{
	if (access(VMLINUX, R_OK) == 0)
		RUN(host_vmlinux);
	else
		printf("skip - host_vmlinux: no readable %s (a kernel without CONFIG_DEBUG_INFO_BTF)\n", VMLINUX);
	RUN(crafted_good);
	RUN(malformed);
	UNIT_END();
}
