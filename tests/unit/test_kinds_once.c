/* test_kinds_once.c — the kinds' setup written once (src/probe/place.h):
 * every engine of the table gives its sites (probe_engine_ops.sites, with
 * its place operation), and every kind it says it runs (its `kinds`) that
 * has a location is set up by kind_place, the one setup of every kind on
 * every engine; a fifth copy of a kind's setup in an engine fails here. */
#include "probe/kind.h"
#include "probe/place.h"
#include "probe/probe_engine.h"

#include <string.h>

#include "unit/unit.h"

static const char *const names[] = { "agent", "ptrace", "ucsim", "remote", "kernel" };

static void every_engine_places_sites(void)
{
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const struct probe_engine_ops *o = probe_engine_find(names[i]);
		CHECK(o);
		if (!o->sites || !o->sites->place)
			printf("  %s: no site operations\n", names[i]);
		CHECK(o->sites && o->sites->place);
	}
}

static void every_kind_set_up_by_kind_place(void)
{
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const struct probe_engine_ops *o = probe_engine_find(names[i]);
		CHECK(o && o->kinds);
		char buf[256];
		snprintf(buf, sizeof buf, "%s", o->kinds);
		int nkinds = 0;
		for (char *save = NULL, *k = strtok_r(buf, " ", &save); k; k = strtok_r(NULL, " ", &save)) {
			const struct kind_ops *ko = o->kind ? o->kind(k) : kind_find(k);
			if (!ko)
				printf("  %s: no kind %s\n", names[i], k);
			CHECK(ko);
			nkinds++;
			if (!ko->needs_location)
				continue; /* sys: a timer, no site */
			if (ko->setup != kind_place)
				printf("  %s: %s has a setup of its own\n", names[i], k);
			CHECK(ko->setup == kind_place);
		}
		CHECK(nkinds >= 5);
	}
}

int main(void)
{
	RUN(every_engine_places_sites);
	RUN(every_kind_set_up_by_kind_place);
	UNIT_END();
}
