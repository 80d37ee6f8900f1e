/* ihx.c — Intel HEX images (ihx.h). */
#include "sym/ihx.h"

#include <stdio.h>
#include <string.h>

static int hexv(const char *s, int k)
{
	int v = 0;
	for (int i = 0; i < k; i++) {
		int c = s[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return -1;
		v = v << 4 | d;
	}
	return v;
}

int ihx_read(struct ihx_image *im, const char *path, char *err, size_t n)
{
	memset(im, 0, sizeof *im);
	FILE *f = fopen(path, "r");
	char line[600];
	int recs = 0;
	if (!f) {
		snprintf(err, n, "cannot read %s", path);
		return -1;
	}
	while (fgets(line, sizeof line, f)) {
		if (line[0] != ':')
			continue;
		int len = hexv(line + 1, 2), a = hexv(line + 3, 4), t = hexv(line + 7, 2);
		if (len < 0 || a < 0 || t < 0 || strlen(line) < (size_t)(11 + 2 * len)) {
			fclose(f);
			snprintf(err, n, "%s: a record that is not Intel HEX", path);
			return -1;
		}
		if (t != 0)
			continue;
		for (int i = 0; i < len; i++) {
			int b = hexv(line + 9 + 2 * i, 2);
			if (b < 0) {
				fclose(f);
				snprintf(err, n, "%s: a record that is not Intel HEX", path);
				return -1;
			}
			if (a + i < 65536) {
				im->code[a + i] = (uint8_t)b;
				im->used[(a + i) / 8] |= (uint8_t)(1 << ((a + i) & 7));
			}
		}
		recs++;
	}
	fclose(f);
	if (!recs) {
		snprintf(err, n, "%s: no code in it", path);
		return -1;
	}
	return 0;
}
