/* format.h — the files of a recording directory (sonde.data/), written by the
 * collector (src/record/) and read only through src/data/.  Documented for
 * users in docs/FORMAT.md; keep both in step and bump SONDE_DATA_VERSION on
 * any incompatible change.
 *
 * Every data file is: a 16-byte file header, then records.  A record is
 *   struct sonde_rec_hdr (type, length of payload, CRC-32 of payload), payload.
 * Records are self-delimiting, so a reader detects truncation (a record that
 * runs past the end of the file) and damage (CRC mismatch) and can say where.
 * All integers are little-endian (the recording machine's order; x86-64 and
 * aarch64 both).
 */
#ifndef SONDE_COMMON_FORMAT_H
#define SONDE_COMMON_FORMAT_H

#include <assert.h>
#include <stdint.h>

#include "common/session.h"

#define SONDE_DATA_MAGIC   "SONDEDAT"
#define SONDE_DATA_VERSION 1u

/* File names inside the recording directory. */
#define SONDE_FILE_PROFILE "profile.sonde"  /* meta, processes, threads, modules, CCTs, locks */
#define SONDE_FILE_EVENTS  "events.sonde"   /* ring chunks (trace / lock events), streamed */
#define SONDE_FILE_DOMAIN  "domain.txt"     /* --domain auto: functions that left records */

struct sonde_file_hdr {
	char     magic[8];
	uint32_t version;
	uint32_t kind;       /* 1 profile, 2 events */
};
static_assert(sizeof(struct sonde_file_hdr) == 16, "format");

struct sonde_rec_hdr {
	uint32_t type;
	uint32_t crc;        /* CRC-32 (IEEE) of the payload */
	uint64_t len;        /* payload bytes */
};
static_assert(sizeof(struct sonde_rec_hdr) == 16, "format");

enum sonde_rec_type {
	REC_META    = 1,  /* text: "key=value\n" lines */
	REC_PROCESS = 2,  /* struct rec_process */
	REC_THREAD  = 3,  /* struct rec_thread */
	REC_MODULE  = 4,  /* struct rec_module, then nfuncs uint64_t link-time addresses */
	REC_CCT     = 5,  /* uint32_t thread index, uint32_t count, then count struct sonde_node */
	REC_LOCKS   = 6,  /* lock statistics (see src/rt/locks.h) */
	REC_CHUNK   = 7,  /* struct sonde_chunk header, then `used` payload bytes */
	REC_END     = 99, /* empty: the file was completed */
};

struct rec_process {
	uint32_t index;          /* process slot */
	int32_t  pid, ppid;
	int32_t  exit_status;    /* exit code, or -signal, or INT32_MIN if unknown */
	uint32_t exec_seq;
	uint32_t flags;          /* REC_PROC_* */
	uint64_t start_tsc, end_tsc;
	char     exe[SONDE_PATH_MAX];
	char     cmdline[SONDE_PATH_MAX]; /* NUL-separated */
	uint32_t cmdline_len;
	uint32_t pad;
};
enum { REC_PROC_ENDED_BY_EXIT = 1, REC_PROC_KILLED = 2 };

struct rec_thread {
	uint32_t index;          /* thread slot */
	uint32_t proc;           /* process slot */
	int32_t  tid;
	uint32_t flags;          /* REC_THREAD_* */
	char     comm[SONDE_COMM_MAX];
	uint64_t start_tsc, end_tsc;
	uint64_t nodes;          /* CCT nodes used */
	uint64_t wait_ticks;     /* time waiting for the collector */
	uint64_t lost[SONDE_LOST_COUNT_];
	uint32_t open_frames;    /* frames still open at the end (closed at end_tsc) */
	uint32_t pad;
};
enum { REC_THREAD_EXITED = 1 };

struct rec_module {
	uint32_t index;          /* module slot (the high bits of a function id) */
	uint32_t proc;
	uint32_t nfuncs;
	uint32_t build_id_len;
	uint64_t load_bias;
	uint64_t numbering_ns;
	uint8_t  build_id[20];
	uint32_t unloaded;
	char     path[SONDE_PATH_MAX];
};

uint32_t crc32_ieee(uint32_t crc, const void *buf, uint64_t len);

#endif
