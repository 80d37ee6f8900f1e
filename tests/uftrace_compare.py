"""uftrace_compare.py SONDE_REPORT_JSON UFTRACE_DATA LABEL [MIN_FUNCS]

Compares sonde's call counts (report --format=json) with uftrace's
(`uftrace report -f call`) function by function and prints one test line:
every function either tool saw must have the same count in both."""
import json, re, subprocess, sys

so_path, uf_dir, label = sys.argv[1:4]
min_funcs = int(sys.argv[4]) if len(sys.argv) > 4 else 1
so = {f["name"]: f["calls"] for f in json.load(open(so_path))["functions"]}
out = subprocess.run(["uftrace", "report", "-d", uf_dir, "-f", "call", "--no-pager", "--demangle=full"],
                     capture_output=True, text=True, check=True).stdout
uf = {}
for l in out.splitlines():
    m = re.match(r"\s*(\d+)\s+(.+?)\s*$", l)
    if m and not m.group(2).startswith("linux:"):
        uf[m.group(2)] = uf.get(m.group(2), 0) + int(m.group(1))
diff = sorted((k, so.get(k), uf.get(k)) for k in set(so) | set(uf) if so.get(k) != uf.get(k))
good = not diff and len(so) >= min_funcs
print(("ok" if good else "not ok") + f" - {label}: {len(so)} functions, {sum(so.values())} calls, all equal to uftrace's"
      + ("" if good else f": differ (name, sonde, uftrace) {diff[:6]}"))
