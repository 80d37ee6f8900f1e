/* formats.c — the table of export formats (the one place that lists them). */
#include <string.h>

#include "export/export.h"

const struct export_ops *const export_formats[] = {
	&export_callgrind,
	&export_folded,
	&export_pprof,
	&export_chrome, &export_perfetto,
	NULL,
};

const struct export_ops *export_find(const char *name)
{
	for (int i = 0; export_formats[i]; i++)
		if (!strcmp(export_formats[i]->name, name))
			return export_formats[i];
	return NULL;
}
