/* attach_marker.c — the library tests/e2e/attach_inject.sh injects: its
 * constructor creates $ATTACH_MARKER_DIR/MARK.PID (MARK is set with -DMARK)
 * holding the process id, proof that it ran inside that process.  Built
 * with -DEXIT_CODE=N, the constructor then ends the process with _exit(N). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void attach_marker(void)
{
	const char *dir = getenv("ATTACH_MARKER_DIR");
	if (!dir)
		return;
	char path[4096], text[32];
	snprintf(path, sizeof path, "%s/%s.%d", dir, MARK, (int)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	int n = snprintf(text, sizeof text, "%d\n", (int)getpid());
	if (write(fd, text, (size_t)n) != n)
		unlink(path);
	close(fd);
#ifdef EXIT_CODE
	_exit(EXIT_CODE);
#endif
}
