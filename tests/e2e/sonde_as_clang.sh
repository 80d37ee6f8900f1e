# sonde_as_clang.sh — sonde-as on Clang-shaped assembly (src/cc/sonde-as.c,
# "Clang"; docs/INSTRUMENTATION.md "Exit sleds"): a function gets exit sleds
# only when every exit is classified; each shape that is not (a conditional
# or indirect tail call, `ret $n`, a prefix or data before a return, a jump in
# inline assembly, a section change) leaves it without a record.  The file
# is written here in the shape clang 14 -S -fno-integrated-as gives; the
# linked result is read with readelf/nm, not with sonde.
. "$ROOT/tests/lib.sh"
AS=$BUILD/lib/sonde/as/as
command -v gcc >/dev/null || { skip "sonde-as clang shapes" "gcc (the linker driver) not installed"; exit 0; }
fn() { # NAME BODY...: one function in Clang's shape, padding label .Ltmp_NAME
	local name=$1; shift
	printf '\t.globl\t%s\t# -- Begin function %s\n\t.p2align\t4, 0x90\n\t.type\t%s,@function\n' "$name" "$name" "$name"
	printf '.Ltmp_%s:\t# @%s\n' "$name" "$name"
	for i in 1 2 3 4 5 6 7 8; do printf '\tnop\n'; done
	printf '%s:\n.Lfunc_begin_%s:\n\t.cfi_startproc\n# %%bb.0:\n\tnopl\t8(%%rax,%%rax)\n' "$name" "$name"
	for l in "$@"; do printf '%s\n' "$l"; done
	printf '.Lfunc_end_%s:\n\t.size\t%s, .Lfunc_end_%s-%s\n\t.cfi_endproc\n' "$name" "$name" "$name" "$name"
	printf '\t.section\t__patchable_function_entries,"aw",@progbits\n\t.p2align\t3\n\t.quad\t.Ltmp_%s\n\t.text\n' "$name"
}
T=$'\t'
{
	printf '\t.text\n\t.file\t"t.c"\n'
	fn ok_ret "${T}addl${T}\$1, %edi" "${T}movl${T}%edi, %eax" "${T}retq"
	fn ok_ret2 "${T}testl${T}%edi, %edi" "${T}je${T}.LBB1_2" "${T}ret" ".LBB1_2:" "${T}xorl${T}%eax, %eax" "${T}retq"
	fn ok_tail "${T}jmp${T}ext@PLT                      # TAILCALL"
	fn ok_table "${T}movl${T}%edi, %eax" "${T}leaq${T}.LJT(%rip), %rcx" "${T}jmpq${T}*(%rcx,%rax,8)" ".LBB3_1:" "${T}retq"
	fn ok_app_nop "${T}#APP" "${T}pause" "${T}#NO_APP" "${T}movl${T}%edi, %eax" "${T}retq"
	fn bad_ind_tail "${T}movq${T}(%rdi), %rax" "${T}jmpq${T}*%rax                           # TAILCALL"
	fn bad_cond_tail "${T}testl${T}%edi, %edi" "${T}jne${T}ext@PLT                      # TAILCALL" "${T}retq"
	fn bad_ret_n "${T}retq${T}\$8"
	fn bad_prefix "${T}rep" "${T}retq"
	fn bad_data "${T}.byte${T}0xf3" "${T}retq"
	fn bad_app_jmp "${T}#APP" "${T}jmp 1f" "1:" "${T}#NO_APP" "${T}retq"
	fn bad_app_last "${T}#APP" "${T}movl %edi, %eax" "${T}#NO_APP" "${T}retq"
	fn bad_section "${T}testl${T}%edi, %edi" "${T}je${T}.LBB12_1" "${T}retq" "${T}.section${T}.text.cold,\"ax\",@progbits" ".LBB12_1:" "${T}retq" "${T}.text"
	fn bad_lret "${T}lretq"
	fn bad_sym_jmp "${T}jmp${T}ext"
	printf '\t.section\t.rodata,"a",@progbits\n.LJT:\n\t.quad\t.LBB3_1\n'
	printf '\t.text\n\t.globl\text\next:\n\tretq\n\t.section\t".note.GNU-stack","",@progbits\n'
} >t.s
# the same file without Clang's comments: the jump table is no longer known
# not to be a tail call
sed -e 's/#[^A-Z].*$//' -e 's/# TAILCALL//' t.s >tq.s
for f in t tq; do
	if "$AS" --64 -o $f.o $f.s 2>$f.err && gcc -shared -nostdlib -o $f.so $f.o 2>>$f.err; then
		python3 "$ROOT/bench/exitsled_count.py" --missing $f.so >$f.count
	else
		notok "$f.s assembles through sonde-as and links" "$(head -3 $f.err)"
	fi
done
has() { grep -q "no exit sleds: $2\$" $1.count && return 1; grep -q "functions" $1.count; }
for f in ok_ret ok_ret2 ok_tail ok_table ok_app_nop; do
	check "$f: exit sleds" has t $f
done
for f in bad_ind_tail bad_cond_tail bad_ret_n bad_prefix bad_data bad_app_jmp bad_app_last bad_section bad_lret bad_sym_jmp; do
	check "$f: no exit sleds (return-address replacement)" sh -c "grep -q 'no exit sleds: $f\$' t.count"
done
check "the records: 5 functions of 15, 5 sleds before a ret (ok_ret2 has two), 1 before a tail call" \
	grep -q "15 functions, 5 with exit sleds (33%), 5 before a ret, 1 before a tail call" t.count
check "every entry linked to its function (o flag, the padding label)" \
	sh -c "readelf -SW t.o | grep __patchable_function_entries | grep -c ' WAL ' | grep -qx 15"
check "without Clang's comments: the jump table's function has no sleds" sh -c "grep -q 'no exit sleds: ok_table\$' tq.count"
check "without Clang's comments: a direct tail call still has them" has tq ok_tail
check "ok_ret: a five-byte nop right before its ret" sh -c "objdump -d t.so | awk '/<ok_ret>:/,/^\$/' | grep -B1 -E '\\sret' | grep -q '0f 1f 44 00 00'"
