/* flamegraph.c — interactive SVG flame graph (see flamegraph.h).  Width is
 * proportional to inclusive time; the root is at the bottom; children are
 * sorted by name, so the same code path is in the same place in every
 * graph.  Everything (style, script) is inside the one file. */
#include "export/flamegraph.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define FG_WIDTH   1200.0
#define FG_ROW     16
#define FG_TOP     44
#define FG_BOTTOM  30
#define FG_PAD     10.0

struct fnode {
	uint32_t fn, parent, first_child, next_sibling;
	uint64_t ticks, calls;
};

struct ftree {
	struct fnode *n;
	uint32_t count, cap;
	uint32_t *hash;
	uint32_t hcap;
};

static uint32_t hh(uint32_t parent, uint32_t fn)
{
	return (uint32_t)((((uint64_t)parent << 32) | fn) * 0x9e3779b97f4a7c15ull >> 32);
}

/* The child (parent, fn) of the merged tree, created if need be;
 * UINT32_MAX when out of memory. */
static uint32_t ft_child(struct ftree *t, uint32_t parent, uint32_t fn)
{
	if ((uint64_t)(t->count + 1) * 2 > t->hcap) {
		uint32_t hcap = t->hcap ? t->hcap * 2 : 1024;
		uint32_t *hash = hcap ? calloc(hcap, sizeof *hash) : NULL;
		if (!hash)
			return UINT32_MAX;
		free(t->hash);
		t->hash = hash;
		t->hcap = hcap;
		for (uint32_t i = 1; i < t->count; i++) {
			uint32_t h = hh(t->n[i].parent, t->n[i].fn) & (t->hcap - 1);
			while (t->hash[h])
				h = (h + 1) & (t->hcap - 1);
			t->hash[h] = i + 1;
		}
	}
	uint32_t h = hh(parent, fn) & (t->hcap - 1);
	for (; t->hash[h]; h = (h + 1) & (t->hcap - 1)) {
		struct fnode *c = &t->n[t->hash[h] - 1];
		if (c->parent == parent && c->fn == fn)
			return t->hash[h] - 1;
	}
	if (t->count == t->cap) {
		struct fnode *n = t->cap < UINT32_MAX / 2 ? realloc(t->n, sizeof *t->n * t->cap * 2) : NULL;
		if (!n)
			return UINT32_MAX;
		t->n = n;
		t->cap *= 2;
	}
	uint32_t i = t->count++;
	t->n[i] = (struct fnode){ fn, parent, 0, t->n[parent].first_child, 0, 0 };
	t->n[parent].first_child = i;
	t->hash[h] = i + 1;
	return i;
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, f);
		}
	}
}

static void color(const char *name, int *r, int *g, int *b)
{
	uint32_t h = 2166136261u;
	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	*r = 205 + (int)(h % 50);
	*g = 80 + (int)((h >> 8) % 150);
	*b = 40 + (int)((h >> 16) % 50);
}

struct fgctx {
	FILE *out;
	const struct recording *r;
	const struct fn_table *ft;
	struct ftree *t;
	uint64_t total;
	int height, maxdepth, frames;
};

static int by_name(const void *a, const void *b, void *arg)
{
	const struct fgctx *c = arg;
	const struct fnode *x = &c->t->n[*(const uint32_t *)a], *y = &c->t->n[*(const uint32_t *)b];
	return strcmp(c->ft->fns[x->fn].name, c->ft->fns[y->fn].name);
}

static void frame(struct fgctx *c, uint32_t v, double x, int depth)
{
	const struct fnode *n = &c->t->n[v];
	double w = (double)n->ticks / (double)c->total * (FG_WIDTH - 2 * FG_PAD);
	if (w < 0.1)
		return;
	if (w > FG_WIDTH - 2 * FG_PAD) /* wider than its root: only a damaged tree has such a node */
		w = FG_WIDTH - 2 * FG_PAD;
	const char *name = v ? c->ft->fns[n->fn].name : "all";
	double y = c->height - FG_BOTTOM - (depth + 1) * FG_ROW;
	double pct = 100.0 * (double)n->ticks / (double)c->total;
	char tm[32];
	double ns = rd_ns(c->r, n->ticks);
	if (ns < 1e3) snprintf(tm, sizeof tm, "%.0f ns", ns);
	else if (ns < 1e6) snprintf(tm, sizeof tm, "%.2f us", ns / 1e3);
	else if (ns < 1e9) snprintf(tm, sizeof tm, "%.2f ms", ns / 1e6);
	else snprintf(tm, sizeof tm, "%.3f s", ns / 1e9);
	int cr, cg, cb;
	color(name, &cr, &cg, &cb);
	if (!v)
		cr = 230, cg = 160, cb = 70;
	FILE *f = c->out;
	fprintf(f, "<g class=\"f\" data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%d\" data-n=\"", (x - FG_PAD) / (FG_WIDTH - 2 * FG_PAD),
	        w / (FG_WIDTH - 2 * FG_PAD), depth);
	xml_text(f, name);
	fputs("\"><title>", f);
	xml_text(f, name);
	fprintf(f, " (%" PRIu64 " call%s, %s, %.2f%%)</title>", n->calls, n->calls == 1 ? "" : "s", tm, pct);
	fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\"/>", x, y, w,
	        FG_ROW - 1, cr, cg, cb);
	int fit = (int)((w - 6) / 7);
	fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FG_ROW - 4.5);
	if (fit >= 3) {
		int len = (int)strlen(name);
		if (len <= fit) {
			xml_text(f, name);
		} else {
			char buf[512];
			int k = fit - 2 < (int)sizeof buf - 3 ? fit - 2 : (int)sizeof buf - 3;
			memcpy(buf, name, (size_t)k);
			strcpy(buf + k, "..");
			xml_text(f, buf);
		}
	}
	fputs("</text></g>\n", f);
	c->frames++;
	/* children, by name, left to right */
	uint32_t nk = 0;
	for (uint32_t k = n->first_child; k; k = c->t->n[k].next_sibling)
		nk++;
	if (!nk)
		return;
	uint32_t *kids = malloc(sizeof *kids * nk);
	if (!kids)
		return;
	nk = 0;
	for (uint32_t k = n->first_child; k; k = c->t->n[k].next_sibling)
		kids[nk++] = k;
	qsort_r(kids, nk, sizeof *kids, by_name, c);
	double cx = x;
	for (uint32_t i = 0; i < nk; i++) {
		frame(c, kids[i], cx, depth + 1);
		cx += (double)c->t->n[kids[i]].ticks / (double)c->total * (FG_WIDTH - 2 * FG_PAD);
	}
	free(kids);
}

static const char *fg_script =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"(function(){\n"
	"var svg=document.documentElement, W=" "%g" ", PAD=" "%g" ";\n"
	"var frames=Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"var details=document.getElementById('details'), reset=document.getElementById('reset');\n"
	"function place(g,x,w){var r=g.querySelector('rect'),t=g.querySelector('text');\n"
	" var px=PAD+x*(W-2*PAD), pw=w*(W-2*PAD); r.setAttribute('x',px.toFixed(2)); r.setAttribute('width',pw.toFixed(2));\n"
	" t.setAttribute('x',(px+3).toFixed(2)); var n=g.getAttribute('data-n'), fit=Math.floor((pw-6)/7);\n"
	" t.textContent = fit<3 ? '' : (n.length<=fit ? n : n.substring(0,fit-2)+'..');}\n"
	"function zoom(g){var x=+g.getAttribute('data-x'),w=+g.getAttribute('data-w'),d=+g.getAttribute('data-d'),e=1e-9;\n"
	" frames.forEach(function(f){var fx=+f.getAttribute('data-x'),fw=+f.getAttribute('data-w'),fd=+f.getAttribute('data-d');\n"
	"  if(fd>=d && fx>=x-e && fx+fw<=x+w+e){f.style.display='';place(f,(fx-x)/w,fw/w);}\n"
	"  else if(fd<d && fx<=x+e && fx+fw>=x+w-e){f.style.display='';place(f,0,1);f.style.opacity=0.6;return;}\n"
	"  else f.style.display='none'; f.style.opacity='';});\n"
	" reset.style.display='';}\n"
	"function unzoom(){frames.forEach(function(f){f.style.display='';f.style.opacity='';\n"
	"  place(f,+f.getAttribute('data-x'),+f.getAttribute('data-w'));}); reset.style.display='none';}\n"
	"frames.forEach(function(f){\n"
	" f.addEventListener('click',function(){zoom(f);});\n"
	" f.addEventListener('mouseover',function(){details.textContent=f.querySelector('title').textContent;});\n"
	" f.addEventListener('mouseout',function(){details.textContent=' ';});});\n"
	"reset.addEventListener('click',unzoom);\n"
	"svg.setAttribute('data-ready',String(frames.length));\n"
	"})();\n"
	"]]></script>\n";

int flame_svg_write(FILE *out, const struct recording *r, const struct fn_table *ft, const struct rd_select *sel,
                    const char *title)
{
	struct ftree t = { calloc(256, sizeof(struct fnode)), 1, 256, NULL, 0 };
	uint32_t *map = NULL;
	if (!t.n)
		return -1;
	for (int i = 0; i < r->nthreads; i++) {
		const struct rd_thread *th = &r->threads[i];
		if (!th->nodes || !rd_thread_selected(r, sel, th))
			continue;
		uint32_t *nm = realloc(map, sizeof *map * ((size_t)th->nnodes + 1));
		if (!nm)
			continue;
		map = nm;
		map[0] = 0;
		for (uint32_t v = 1; v < th->nnodes; v++) {
			const struct rec_node *nd = &th->nodes[v];
			if (nd->parent >= v) { /* not in creation order: skip (never the case for sonde's trees) */
				map[v] = UINT32_MAX;
				continue;
			}
			if (map[nd->parent] == UINT32_MAX) {
				map[v] = UINT32_MAX;
				continue;
			}
			uint32_t m = ft_child(&t, map[nd->parent], fn_of(ft, r, nd->func));
			map[v] = m;
			if (m == UINT32_MAX)
				continue;
			/* sums of many threads: saturating (the reader bounds each tree's) */
			t.n[m].ticks = rd_sat_add(t.n[m].ticks, nd->ticks);
			t.n[m].calls = rd_sat_add(t.n[m].calls, nd->calls);
			if (nd->parent == 0) {
				t.n[0].ticks = rd_sat_add(t.n[0].ticks, nd->ticks);
			}
		}
	}
	free(map);
	free(t.hash);
	/* depth of the tree */
	int maxdepth = 0;
	for (uint32_t v = 1; v < t.count; v++) {
		int d = 0;
		for (uint32_t u = v; u; u = t.n[u].parent)
			d++;
		if (d > maxdepth)
			maxdepth = d;
	}
	struct fgctx c = { out, r, ft, &t, t.n[0].ticks ? t.n[0].ticks : 1, 0, maxdepth, 0 };
	c.height = FG_TOP + (maxdepth + 1) * FG_ROW + FG_BOTTOM;
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
	             "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	             "xmlns=\"http://www.w3.org/2000/svg\">\n",
	        (int)FG_WIDTH, c.height, (int)FG_WIDTH, c.height);
	fputs("<style>text{font-family:Verdana,sans-serif;font-size:12px;fill:#000;pointer-events:none}"
	      "g.f:hover rect{stroke:#000;stroke-width:0.5;cursor:pointer}"
	      "#title{font-size:17px;text-anchor:middle}#reset{cursor:pointer;fill:#06c}</style>\n", out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f0\"/>\n", (int)FG_WIDTH, c.height);
	fprintf(out, "<text id=\"title\" x=\"%g\" y=\"24\">", FG_WIDTH / 2);
	xml_text(out, title);
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"reset\" x=\"%g\" y=\"24\" style=\"display:none;pointer-events:all\">Reset zoom</text>\n",
	        FG_PAD);
	fprintf(out, "<text id=\"details\" x=\"%g\" y=\"%d\"> </text>\n", FG_PAD, c.height - 10);
	if (t.n[0].ticks)
		frame(&c, 0, FG_PAD, 0);
	fprintf(out, fg_script, FG_WIDTH, FG_PAD);
	fputs("</svg>\n", out);
	free(t.n);
	return ferror(out) ? -1 : c.frames;
}
