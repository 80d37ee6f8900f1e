/* record_patch.c — see record_patch.h. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/record_patch.h"
#include "record/record.h"

static int serve(void *arg)
{
	struct record_patch *p = arg;
	return instr_serve(p->s->hdr, p->s->size, p->plans, p->nplans);
}

int record_patch_plan(const struct cli_opts *o, const char *prog_path, struct session *s, struct record_patch *p,
                      char *err, size_t n)
{
	memset(p, 0, sizeof *p);
	p->s = s;
	if (o->no_patch)
		return 0;
	char why[600];
	struct instr_plan *pl = &p->plans[0];
	int rc = instr_plan(prog_path, pl, why, sizeof why);
	if (rc > 0)
		return 0; /* built with sonde-cc: its sleds are the way */
	if (rc < 0) {
		cli_warn("%s", why);
		return 0;
	}
	p->nplans = 1;
	return instr_publish(s->hdr, s->size, p->plans, p->nplans, err, n);
}

void record_patch_serve_in(struct record_patch *p, struct launched *l)
{
	if (!p->nplans)
		return;
	l->serve = serve;
	l->serve_arg = p;
}

void record_patch_end(struct record_patch *p)
{
	for (size_t i = 0; i < p->nplans; i++)
		instr_plan_free(&p->plans[i]);
	p->nplans = 0;
}
