// SPDX-License-Identifier: GPL-2.0
/*
 * sonde_kmod — the kernel probes' test module (issue 42, tests/e2e/probe_kernel.sh).
 * Writing "N" to /proc/sonde_kmod runs N rounds: each calls sonde_kmod_step
 * once and, for every third round, sonde_kmod_clamp.  Reading it prints the
 * module's own counts ("step_calls X clamp_calls Y sum Z"), which the test
 * compares with sonde's.
 *
 * Writing "N D" to /proc/sonde_kmod_ret runs N rounds: round i calls
 * sonde_kmod_ret(i, D), which recurses D levels deep; every call (each
 * level) spins SONDE_KMOD_SPIN_NS on the kernel's CLOCK_MONOTONIC (the perf
 * clock sonde reads: every duration is at least that) and returns
 * sonde_kmod_value(i, level): 0, 1, 7, -EINVAL or -ENOENT.  Reading it
 * prints the module's own counts: "calls C spin_ns S" then, per value,
 * "ret V N".
 */
#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/seq_file.h>
#include <linux/mutex.h>
#include <linux/timekeeping.h>

#define SONDE_KMOD_SPIN_NS 200000
#define SONDE_KMOD_NVALUES 5
static const long sonde_kmod_values[SONDE_KMOD_NVALUES] = { 0, 1, 7, -EINVAL, -ENOENT };
static unsigned long sonde_kmod_ret_counts[SONDE_KMOD_NVALUES];
static unsigned long sonde_kmod_ret_calls;

struct sonde_kmod_state {
	int step_calls;
	int clamp_calls;
	long sum;
};

struct sonde_kmod_state sonde_kmod_g;
EXPORT_SYMBOL_GPL(sonde_kmod_g);
static DEFINE_MUTEX(sonde_kmod_lock);

noinline long sonde_kmod_clamp(long v)
{
	sonde_kmod_g.clamp_calls++;
	if (v > 100)
		return 100;
	return v;
}

noinline int sonde_kmod_step(struct sonde_kmod_state *s, int v)
{
	s->step_calls++;
	s->sum += v;
	return v * 2;
}

static int sonde_kmod_value(unsigned long i, int level)
{
	return (int)((i * 3 + (unsigned long)level) % SONDE_KMOD_NVALUES);
}

noinline long sonde_kmod_ret(unsigned long i, int level)
{
	u64 t0 = ktime_get_ns();
	long inner = 0;
	int k = sonde_kmod_value(i, level);

	sonde_kmod_ret_calls++;
	while (ktime_get_ns() - t0 < SONDE_KMOD_SPIN_NS)
		cpu_relax();
	if (level > 0)
		inner = sonde_kmod_ret(i, level - 1);
	sonde_kmod_ret_counts[k]++;
	/* the inner call's value kept alive: no tail call, no loop */
	WRITE_ONCE(sonde_kmod_g.sum, sonde_kmod_g.sum + (inner & 1));
	return sonde_kmod_values[k];
}

static ssize_t sonde_kmod_ret_write(struct file *f, const char __user *buf, size_t len, loff_t *off)
{
	char tmp[32];
	unsigned long n, i;
	int depth;
	size_t k = len < sizeof(tmp) - 1 ? len : sizeof(tmp) - 1;

	if (copy_from_user(tmp, buf, k))
		return -EFAULT;
	tmp[k] = 0;
	if (sscanf(tmp, "%lu %d", &n, &depth) != 2 || n > 100000 || depth < 0 || depth > 16)
		return -EINVAL;
	mutex_lock(&sonde_kmod_lock);
	for (i = 0; i < n; i++)
		sonde_kmod_ret(i, depth);
	mutex_unlock(&sonde_kmod_lock);
	return len;
}

static int sonde_kmod_ret_show(struct seq_file *m, void *v)
{
	int k;

	mutex_lock(&sonde_kmod_lock);
	seq_printf(m, "calls %lu spin_ns %d\n", sonde_kmod_ret_calls, SONDE_KMOD_SPIN_NS);
	for (k = 0; k < SONDE_KMOD_NVALUES; k++)
		seq_printf(m, "ret %ld %lu\n", sonde_kmod_values[k], sonde_kmod_ret_counts[k]);
	mutex_unlock(&sonde_kmod_lock);
	return 0;
}

static int sonde_kmod_ret_open(struct inode *inode, struct file *f)
{
	return single_open(f, sonde_kmod_ret_show, NULL);
}

static const struct proc_ops sonde_kmod_ret_ops = {
	.proc_open = sonde_kmod_ret_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
	.proc_write = sonde_kmod_ret_write,
};

static ssize_t sonde_kmod_write(struct file *f, const char __user *buf, size_t len, loff_t *off)
{
	char tmp[24];
	unsigned long n, i;
	size_t k = len < sizeof(tmp) - 1 ? len : sizeof(tmp) - 1;

	if (copy_from_user(tmp, buf, k))
		return -EFAULT;
	tmp[k] = 0;
	if (kstrtoul(strim(tmp), 10, &n) || n > 10000000)
		return -EINVAL;
	mutex_lock(&sonde_kmod_lock);
	for (i = 0; i < n; i++) {
		sonde_kmod_step(&sonde_kmod_g, (int)i);
		if (i % 3 == 0)
			sonde_kmod_clamp((long)i);
	}
	mutex_unlock(&sonde_kmod_lock);
	return len;
}

static int sonde_kmod_show(struct seq_file *m, void *v)
{
	mutex_lock(&sonde_kmod_lock);
	seq_printf(m, "step_calls %d clamp_calls %d sum %ld\n", sonde_kmod_g.step_calls,
		   sonde_kmod_g.clamp_calls, sonde_kmod_g.sum);
	mutex_unlock(&sonde_kmod_lock);
	return 0;
}

static int sonde_kmod_open(struct inode *inode, struct file *f)
{
	return single_open(f, sonde_kmod_show, NULL);
}

static const struct proc_ops sonde_kmod_ops = {
	.proc_open = sonde_kmod_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
	.proc_write = sonde_kmod_write,
};

static struct proc_dir_entry *sonde_kmod_proc, *sonde_kmod_ret_proc;

static int __init sonde_kmod_init(void)
{
	sonde_kmod_proc = proc_create("sonde_kmod", 0666, NULL, &sonde_kmod_ops);
	if (!sonde_kmod_proc)
		return -ENOMEM;
	sonde_kmod_ret_proc = proc_create("sonde_kmod_ret", 0666, NULL, &sonde_kmod_ret_ops);
	if (!sonde_kmod_ret_proc) {
		proc_remove(sonde_kmod_proc);
		return -ENOMEM;
	}
	return 0;
}

static void __exit sonde_kmod_exit(void)
{
	proc_remove(sonde_kmod_ret_proc);
	proc_remove(sonde_kmod_proc);
}

module_init(sonde_kmod_init);
module_exit(sonde_kmod_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("sonde's kernel-probe test module");
