/* kernel_target.c — the timer of bench/kernel_probe_bench.sh, run in the
 * guest (built static: the guest runs the host's files in a chroot).
 *   kernel_target N [B]
 * writes "N" to /proc/sonde_kmod in one write(2), which makes the test
 * module (tests/kmod/sonde_kmod.c) call sonde_kmod_step N times inside the
 * kernel, and prints the write's time per step on CLOCK_MONOTONIC, so that
 * no tool's start-up or placement is in the figure.  With B: N/B writes of
 * "B" steps, 20 ms apart (a tool draining its rings runs then: the guest has
 * one CPU), only the writes timed. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	long n = atol(argv[1]);
	long b = argc > 2 ? atol(argv[2]) : n;
	if (n <= 0 || b <= 0 || b > n)
		return 2;
	int fd = open("/proc/sonde_kmod", O_WRONLY);
	if (fd < 0) {
		perror("/proc/sonde_kmod");
		return 1;
	}
	char buf[24];
	long long t = 0;
	long done = 0;
	while (done < n) {
		long k = n - done < b ? n - done : b;
		int len = snprintf(buf, sizeof(buf), "%ld", k);
		if (done) {
			struct timespec ts = { 0, 20000000 };
			nanosleep(&ts, NULL);
		}
		long long t0 = now_ns();
		ssize_t w = write(fd, buf, (size_t)len);
		t += now_ns() - t0;
		if (w != len) {
			perror("write /proc/sonde_kmod");
			return 1;
		}
		done += k;
	}
	close(fd);
	printf("%.3f ns per step (%ld steps, writes of %ld, %lld ns)\n", (double)t / (double)n, n, b, t);
	return 0;
}
