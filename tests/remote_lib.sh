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

# mon_sites MON-SOCKET ELF OBJDUMP PID ADDR...: connected now to QEMU's monitor (-monitor
# unix:MON-SOCKET,server,nowait), and the moment process PID (sonde) has ended (a zombie or gone),
# the machine stopped, the 4 bytes at each ADDR read through the monitor (`xp`, not the gdb stub)
# and compared with the ELF's (objdump -s), the machine let run on: exit 0 when every one is the
# ELF's.  Run in the background before sonde ends (a fast machine could finish the firmware, and
# QEMU with it, before a reader started after sonde could connect).
mon_sites() {
	python3 - "$@" <<'EOF2'
import os, re, socket, subprocess, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(5)
dump = subprocess.run([sys.argv[3], "-s", "-j", ".text", sys.argv[2]], capture_output=True, text=True).stdout
mem = {}
for line in dump.splitlines():
    m = re.match(r"^ ([0-9a-f]+) ((?:[0-9a-f]{2,8} ?){1,4})", line)
    if m:
        for i, x in enumerate(bytes.fromhex(m.group(2).replace(" ", ""))):
            mem[int(m.group(1), 16) + i] = x
def ended(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
t = time.time() + 60
while not ended(sys.argv[4]) and time.time() < t:
    time.sleep(0.005)
s.sendall(b"stop\n")
out = b""
for a in sys.argv[5:]:
    s.sendall(b"xp /4xb %s\n" % a.encode())
    t = time.time() + 5
    while not re.search(rb"%x: (0x[0-9a-f]{2} ?){4}" % int(a, 16), out) and time.time() < t:
        out += s.recv(4096)
# the VM runs again before this ends: a "cont" still unread when the
# socket closes is dropped by QEMU (seen under load: the firmware stopped
# for good, its output never printed), so its state is asked until running
s.sendall(b"cont\n")
t = time.time() + 30
while b"VM status: running" not in out and time.time() < t:
    s.sendall(b"info status\n")
    end = time.time() + 1
    while b"VM status: running" not in out and time.time() < end:
        try:
            out += s.recv(4096)
        except socket.timeout:
            break
assert b"VM status: running" in out, ("the VM did not run again", out[-300:])
for a in sys.argv[5:]:
    m = re.search(rb"%x: ((?:0x[0-9a-f]{2} ?){4})" % int(a, 16), out)
    assert m, (a, out[-300:])
    got = bytes(int(x, 16) for x in m.group(1).split())
    want = bytes(mem[int(a, 16) + i] for i in range(4))
    assert got == want, (a, got.hex(), want.hex())
EOF2
}

# need_ucsim NAME: the 8051 tests' tools, SDCC (sdcc) and ucsim (s51), or a
# skip of NAME (listed as skipped by tests/run.sh, never counted as passed)
# and the test's end.
need_ucsim() {
	if ! command -v sdcc >/dev/null || ! command -v s51 >/dev/null; then
		skip "$1" "sdcc or s51 not installed (Debian packages sdcc, sdcc-ucsim; .ci/run installs them)"
		exit 0
	fi
}

# ucsim_start FW.ihx: ucsim's s51 running FW.ihx from its reset, its
# console on a free port ($port), its pid in $sim (the firmware stops the
# simulation itself through the simulator interface at xram 0xffff).
ucsim_start() {
	port=$(free_port)
	s51 -P -b -I 'if=xram[0xffff]' -Z "$port" "$1" >"sim.$port.log" 2>&1 &
	sim=$!
	stubs+=("$sim")
	wait_listen "$port"
}
ucsim_stop() { kill "$sim" 2>/dev/null; wait "$sim" 2>/dev/null; return 0; }
