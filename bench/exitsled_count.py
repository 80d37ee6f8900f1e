# bench/exitsled_count.py — how many functions of a sonde-cc build have exit
# sleds (sonde-as records, __sonde_exit_sleds) of all its patchable entries.
# usage: python3 bench/exitsled_count.py BINARY...
import sys, struct, subprocess
for path in sys.argv[1:]:
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    def sec(name):
        for l in out.splitlines():
            if " " + name + " " in l:
                f = l.split(']')[1].split()
                return int(f[3], 16), int(f[4], 16)
        return None
    pfe = sec("__patchable_function_entries")
    sx = sec("__sonde_exit_sleds")
    nf = pfe[1] // 8 if pfe else 0
    data = open(path, "rb").read()
    fns = sleds = tails = 0
    if sx:
        w = struct.unpack("<%di" % (sx[1] // 4), data[sx[0]:sx[0] + sx[1]])
        i = 0
        while i + 2 <= len(w):
            nret, ntail = w[i + 1] & 0xffff, (w[i + 1] >> 16) & 0xffff
            fns += 1; sleds += nret; tails += ntail; i += 2 + nret + ntail
    print(f"{path.split('/')[-1]}: {nf} functions, {fns} with exit sleds ({100.0*fns/max(nf,1):.0f}%), {sleds} before a ret, {tails} before a tail call")
