# remote_lib.sh — what the tests of remote targets share (sourced after
# lib.sh): a free TCP port, waiting until a stub listens on one, the
# stubs started (pids in `stubs`), killed at the end, and the builds of
# the microcontroller firmware tests/progs/mcu_counts.c.
stubs=()
cleanup() { for p in "${stubs[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# Wait until something listens on port $1 (without connecting: the stubs take one connection).
wait_listen() {
	python3 - "$1" <<'EOF'
import sys, time
port = int(sys.argv[1])
for _ in range(200):
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            for line in open(f).readlines()[1:]:
                a = line.split()
                if a[3] == "0A" and int(a[1].split(":")[1], 16) == port:
                    sys.exit(0)
        except OSError:
            pass
    time.sleep(0.05)
sys.exit(1)
EOF
}

# build_arm NAME EXTRA-CFLAGS... / build_rv32 NAME EXTRA-CFLAGS...: mcu_counts.c bare metal for
# Cortex-M / RV32IMAC into fw.NAME.elf (the compiler's messages in build.NAME.err).
build_arm() {
	local name=$1; shift
	arm-none-eabi-gcc -g -O1 -ffreestanding -nostdlib -nostartfiles -mthumb -I"$PROGS" -T "$PROGS/mcu_cortexm.ld" \
		"$@" -o "fw.$name.elf" "$PROGS/mcu_start_cortexm.c" "$PROGS/mcu_counts.c" -lgcc 2> "build.$name.err"
}
build_rv32() {
	local name=$1; shift
	riscv64-unknown-elf-gcc -g -O1 -ffreestanding -nostdlib -nostartfiles -march=rv32imac -mabi=ilp32 \
		-mcmodel=medany -Wl,--no-warn-rwx-segments -I"$PROGS" -T "$PROGS/mcu_rv32.ld" "$@" -o "fw.$name.elf" \
		"$PROGS/mcu_start_rv32.S" "$PROGS/mcu_counts.c" -lgcc 2> "build.$name.err"
}
