# remote_lib.sh — what the tests of remote targets share (sourced after
# lib.sh): a free TCP port, waiting until a stub listens on one, and the
# stubs started (pids in `stubs`), killed at the end.
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
