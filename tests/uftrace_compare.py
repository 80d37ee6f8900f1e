"""uftrace_compare.py SONDE_REPORT_JSON UFTRACE_DATA LABEL [MIN_FUNCS [subset]]

Compares sonde's call counts (report --format=json) with uftrace's
(`uftrace report -f call`) function by function and prints one test line:
every function either tool saw must have the same count in both.  With
"subset" (uftrace record -P ., which patches only the functions it can),
every function uftrace saw must have sonde's count; sonde may see more (the
ones uftrace declines to patch: the line counts and names them)."""
import json, re, subprocess, sys

so_path, uf_dir, label = sys.argv[1:4]
min_funcs = int(sys.argv[4]) if len(sys.argv) > 4 else 1
subset = len(sys.argv) > 5 and sys.argv[5] == "subset"
so = {f["name"]: f["calls"] for f in json.load(open(so_path))["functions"]}
out = subprocess.run(["uftrace", "report", "-d", uf_dir, "-f", "call", "--no-pager", "--demangle=full"],
                     capture_output=True, text=True, check=True).stdout
uf = {}
for l in out.splitlines():
    m = re.match(r"\s*(\d+)\s+(.+?)\s*$", l)
    if m and not m.group(2).startswith("linux:"):
        uf[m.group(2)] = uf.get(m.group(2), 0) + int(m.group(1))
keys = set(uf) if subset else set(so) | set(uf)
diff = sorted((k, so.get(k), uf.get(k)) for k in keys if so.get(k) != uf.get(k))
extra = sorted(k for k in so if k not in uf) if subset else []
good = not diff and len(so) >= min_funcs and (not subset or len(uf) >= min_funcs)
what = (f"the {len(uf)} uftrace counted equal to uftrace's, {len(extra)} it did not patch"
        + (f" ({', '.join(extra[:4])}{', ...' if len(extra) > 4 else ''})" if extra else "")
        if subset else "all equal to uftrace's")
print(("ok" if good else "not ok") + f" - {label}: {len(so)} functions, {sum(so.values())} calls, {what}"
      + ("" if good else f": differ (name, sonde, uftrace) {diff[:6]}"))
