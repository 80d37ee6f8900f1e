/* folded.c — folded stacks ("main;parse;lex 1234", exclusive nanoseconds per
 * calling context), the input of flamegraph.pl, speedscope and inferno. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"

static int write_folded(struct export_ctx *x)
{
	for (int i = 0; i < x->r->nthreads; i++) {
		const struct rd_thread *t = &x->r->threads[i];
		if (!t->nodes || !rd_thread_selected(x->r, &x->sel, t))
			continue;
		for (uint32_t v = 1; v < t->nnodes; v++) {
			uint64_t kids = 0;
			for (uint32_t c = t->nodes[v].first_child; c; c = t->nodes[c].next_sibling)
				kids += t->nodes[c].ticks;
			int64_t ex = (int64_t)(rd_ns(x->r, t->nodes[v].ticks - kids) + 0.5);
			if (ex <= 0)
				continue;
			/* path root..v */
			uint32_t path[REC_STACK_MAX + 64];
			int d = 0;
			for (uint32_t u = v; u && d < (int)(sizeof path / sizeof path[0]); u = t->nodes[u].parent)
				path[d++] = u;
			while (d-- > 0) {
				const char *name = x->ft->fns[fn_of(x->ft, x->r, t->nodes[path[d]].func)].name;
				for (const char *c = name; *c; c++)
					fputc(*c == ';' ? ':' : *c == ' ' ? '_' : *c, x->out);
				if (d)
					fputc(';', x->out);
			}
			fprintf(x->out, " %" PRId64 "\n", ex);
		}
	}
	return 0;
}

const struct export_ops export_folded = {
	"folded", "folded stacks, exclusive ns per context (flamegraph.pl, speedscope)", 0, write_folded,
};
