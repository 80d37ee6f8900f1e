/* proc_stat.h — a process's start time and whether it is the same one
 * still (pid reuse), from /proc/PID/stat (proc_stat.c). */
#ifndef SONDE_COMMON_PROC_STAT_H
#define SONDE_COMMON_PROC_STAT_H

#include <stdint.h>

/* Start time of process pid (/proc/PID/stat field 22), 0 if unknown. */
uint64_t proc_start_time(int pid);
/* Is process pid alive (not a zombie) and the one that started at start_time (0: any)? */
int proc_alive(int pid, uint64_t start_time);

#endif
