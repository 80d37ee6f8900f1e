# gdb_stacks.py — run under gdb -batch -x: break at the first instruction of
# FUNC (env GS_FUNC), print the physical frames (inlined ones left out) of
# the hits numbered in GS_SAMPLES (comma-separated, 1-based), then run to the
# end and print the hit count.  Lines: "stack K pc:name pc:name ...", "hits N".
import gdb, os
gdb.execute('set pagination off')
gdb.execute('set confirm off')
gdb.execute('set backtrace past-main on')
func = os.environ['GS_FUNC']
samples = sorted(int(x) for x in os.environ['GS_SAMPLES'].split(','))
out = open(os.environ['GS_OUT'], 'w')
bp = gdb.Breakpoint('*' + func)
seen = 0
first = True
for k in samples:
    bp.ignore_count = k - seen - 1
    gdb.execute('run' if first else 'continue', to_string=True)
    first = False
    try:
        f = gdb.newest_frame()
    except gdb.error:
        break
    seen = k
    fr = []
    while f is not None:
        if f.type() != gdb.INLINE_FRAME:
            fr.append('%#x:%s' % (f.pc(), f.name() or '?'))
        f = f.older()
    out.write('stack %d %s\n' % (k, ' '.join(fr)))
bp.ignore_count = 1 << 30
try:
    gdb.execute('continue', to_string=True)
except gdb.error:
    pass
out.write('hits %d\n' % bp.hit_count)
out.close()
