# bench/exitsled_count.py — how many functions of a sonde-cc build have exit
# sleds (sonde-as records, __sonde_exit_sleds) of all its patchable entries.
# usage: python3 bench/exitsled_count.py [--missing] BINARY...
#   --missing: also name the functions without exit sleds (from nm)
import sys, struct, subprocess
args = sys.argv[1:]
missing = "--missing" in args
args = [a for a in args if a != "--missing"]
for path in args:
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    def sec(name):
        for l in out.splitlines():
            if " " + name + " " in l:
                f = l.split(']')[1].split()
                return int(f[2], 16), int(f[3], 16), int(f[4], 16)  # address, offset, size
        return None
    pfe = sec("__patchable_function_entries")
    sx = sec("__sonde_exit_sleds")
    nf = pfe[2] // 8 if pfe else 0
    data = open(path, "rb").read()
    fns = sleds = tails = 0
    pads = set()
    if sx:
        w = struct.unpack("<%di" % (sx[2] // 4), data[sx[1]:sx[1] + sx[2]])
        i = 0
        while i + 2 <= len(w):
            nret, ntail = w[i + 1] & 0xffff, (w[i + 1] >> 16) & 0xffff
            pads.add(sx[0] + 4 * i + w[i])
            fns += 1; sleds += nret; tails += ntail; i += 2 + nret + ntail
    print(f"{path.split('/')[-1]}: {nf} functions, {fns} with exit sleds ({100.0*fns/max(nf,1):.0f}%), {sleds} before a ret, {tails} before a tail call")
    if missing and pfe:
        entries = struct.unpack("<%dQ" % nf, data[pfe[1]:pfe[1] + pfe[2]])
        names = {}
        for l in subprocess.run(["nm", path], capture_output=True, text=True).stdout.splitlines():
            f = l.split()
            if len(f) == 3 and f[1] in "tTwW":
                names.setdefault(int(f[0], 16), f[2])
        for e in sorted(set(entries) - pads):
            print("  no exit sleds:", names.get(e + 8, hex(e)))
