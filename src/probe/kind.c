/* kind.c — the table of every probe kind (kind.h). */
#include "probe/kind.h"

#include <string.h>

const struct kind_ops *kind_find(const char *name)
{
	static const struct kind_ops *const all[] = {
		&kind_func, &kind_line, &kind_branch, &kind_var, &kind_assert, &kind_time, &kind_sys,
		&kind_plugin, &kind_stack,
	};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}
