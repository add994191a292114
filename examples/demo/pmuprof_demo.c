/* pmuprof-demo: a small multi-threaded workload whose profile looks like the seeds' mysqld.
 *
 * It is not MySQL. It borrows InnoDB's function names so that a perf profile of it shows
 * the same frames, in the same caller order, as the field cases pmuprof must diagnose:
 *
 *   index-dive    connection threads estimate ranges; every page of the dive takes one
 *                 global mutex in fil_space_get, and the waiters spin in ut_delay (PAUSE).
 *   spin          page-cleaner threads flush a few hot pages under an SX rw-lock; the
 *                 waiters spin in ut_delay under rw_lock_sx_lock_func (no index dive).
 *   page-cleaner  the page-cleaner coordinator never sleeps: ut_time_ms (gettimeofday)
 *                 and buf_get_n_pending_read_ios, whose os_rmb is a full mfence.
 *   healthy       connection threads scan rows (row_search_mvcc); no locks, no spinning.
 *   mixed         index-dive and healthy connections plus a busy page cleaner and two
 *                 flush workers.
 *
 * Build: see Makefile (frame pointers on, no inlining of the named functions, no tail calls).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* gcc drops the frame-pointer set-up in leaf functions even with -fno-omit-frame-pointer,
 * which hides the leaf's caller from perf's fp unwinder; asking for the frame keeps it. */
#define KEEP_FRAME() __asm__ __volatile__("" ::"r"(__builtin_frame_address(0)))
#define MAX_THREADS 256
#define FIL_HASH_CELLS 8
#define FIL_N_SPACES 512
#define BUF_POOL_INSTANCES 8
#define HOT_PAGES 2
#define PAGE_SIZE 16384
#define N_PAGES_READ_LIMIT 10
#define REC_FIELDS 8

typedef unsigned long ulint;

/* ------------------------------------------------------------------ configuration */

enum role { ROLE_INDEX_DIVE, ROLE_HEALTHY, ROLE_FLUSH_COORDINATOR, ROLE_FLUSH_WORKER, ROLE_PAGE_CLEANER,
	    ROLE_ROW_LOCK_HOLDER, ROLE_ROW_LOCK_WAITER, ROLE_COMMITTER, ROLE_SPIKE };

struct demo_config {
	const char *scenario;
	int threads;
	double seconds;
	int die_with_parent;
	double spike_at, spike_len; /* scenario spike: index dives from spike_at for spike_len seconds */
	int spike_on_usr1;          /* spike_at counts from SIGUSR1 (pmuprof demo: perf's window opened) */
};

/* The spike window on CLOCK_MONOTONIC, set once in main before the threads start (or, with
 * --spike-on-usr1, at SIGUSR1: demo_spike_signal holds the time it came, in ns; 0 before). */
static double demo_spike_from, demo_spike_to;
static double now_s(void);
static atomic_llong demo_spike_signal;
static double demo_spike_at, demo_spike_len;

static void demo_on_usr1(int sig)
{
	struct timespec ts;
	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
	atomic_store(&demo_spike_signal, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

/* The server variables the spin loops read, named like InnoDB's. Set once in main. */
ulint srv_spin_wait_delay = 6;
ulint srv_n_spin_wait_rounds = 30;
ulint srv_spin_wait_pause_multiplier = 50;

static atomic_int demo_stop;

static void demo_on_signal(int sig)
{
	(void)sig;
	atomic_store(&demo_stop, 1);
}

static int demo_stopping(void)
{
	return atomic_load_explicit(&demo_stop, memory_order_relaxed);
}

/* ------------------------------------------------------------------ spin primitives */

static __thread uint64_t ut_rnd_state;

NOINLINE ulint ut_rnd_interval(ulint low, ulint high)
{
	KEEP_FRAME();
	uint64_t x = ut_rnd_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	ut_rnd_state = x;
	return high > low ? low + (ulint)(x % (high - low)) : low;
}

/* delay * multiplier PAUSEs. The add after each PAUSE is where perf puts the PAUSE's
 * samples (skid), so an instruction-level view shows them one instruction late. */
NOINLINE ulint ut_delay(ulint delay)
{
	KEEP_FRAME();
	ulint n = delay * srv_spin_wait_pause_multiplier;
	ulint acc = 0;
	for (ulint i = 0; i < n; i++) {
#if defined(__x86_64__) || defined(__i386__)
		__asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
		__asm__ __volatile__("yield" ::: "memory");
#else
		__asm__ __volatile__("" ::: "memory");
#endif
		acc += i;
	}
	return acc;
}

/* A full barrier, as os_rmb becomes when a build falls back to __sync_synchronize().
 * The nop after the fence receives the fence's samples (skid) while the frame is still
 * set up, so the caller stays on the stack; without it they land on the epilogue. */
NOINLINE void os_rmb(void)
{
	KEEP_FRAME();
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("mfence\n\tnop" ::: "memory");
#elif defined(__aarch64__)
	__asm__ __volatile__("dmb ish\n\tnop" ::: "memory");
#else
	__sync_synchronize();
#endif
}

NOINLINE void os_thread_yield(void)
{
	sched_yield();
}

/* ------------------------------------------------------------------ TTAS mutex */

typedef struct ib_mutex {
	atomic_int lock_word;
	atomic_ulong spin_waits;
	atomic_ulong spin_rounds;
	atomic_ulong os_waits;
} ib_mutex_t;

NOINLINE int mutex_try_lock(ib_mutex_t *m)
{
	KEEP_FRAME();
	return atomic_exchange_explicit(&m->lock_word, 1, memory_order_acquire) == 0;
}

/* Test, then test-and-set; between polls wait a random number of PAUSE batches. */
NOINLINE void mutex_spin_wait(ib_mutex_t *m)
{
	atomic_fetch_add_explicit(&m->spin_waits, 1, memory_order_relaxed);
	for (;;) {
		for (ulint round = 0; round < srv_n_spin_wait_rounds; round++) {
			if (atomic_load_explicit(&m->lock_word, memory_order_relaxed) == 0 && mutex_try_lock(m))
				return;
			atomic_fetch_add_explicit(&m->spin_rounds, 1, memory_order_relaxed);
			ut_delay(ut_rnd_interval(0, srv_spin_wait_delay));
		}
		atomic_fetch_add_explicit(&m->os_waits, 1, memory_order_relaxed);
		os_thread_yield();
		if (mutex_try_lock(m))
			return;
	}
}

NOINLINE void mutex_enter_func(ib_mutex_t *m)
{
	if (!mutex_try_lock(m))
		mutex_spin_wait(m);
}

NOINLINE void mutex_exit_func(ib_mutex_t *m)
{
	KEEP_FRAME();
	atomic_store_explicit(&m->lock_word, 0, memory_order_release);
}

/* ------------------------------------------------------------------ SX rw-lock (flush path) */

typedef struct rw_lock {
	ib_mutex_t word; /* SX is exclusive among SX holders: one word is enough here */
	uint32_t frame[PAGE_SIZE / 4];
	uint64_t newest_lsn;
} buf_block_t;

NOINLINE void rw_lock_sx_lock_func(buf_block_t *block, const char *file, unsigned line)
{
	ib_mutex_t *w = &block->word;
	(void)file;
	(void)line;
	if (mutex_try_lock(w))
		return;
	atomic_fetch_add_explicit(&w->spin_waits, 1, memory_order_relaxed);
	for (;;) {
		for (ulint round = 0; round < srv_n_spin_wait_rounds; round++) {
			if (atomic_load_explicit(&w->lock_word, memory_order_relaxed) == 0 && mutex_try_lock(w))
				return;
			atomic_fetch_add_explicit(&w->spin_rounds, 1, memory_order_relaxed);
			ut_delay(ut_rnd_interval(0, srv_spin_wait_delay));
		}
		atomic_fetch_add_explicit(&w->os_waits, 1, memory_order_relaxed);
		os_thread_yield();
		if (mutex_try_lock(w))
			return;
	}
}

NOINLINE void rw_lock_sx_unlock_func(buf_block_t *block)
{
	mutex_exit_func(&block->word);
}

/* ------------------------------------------------------------------ fil_system */

typedef struct fil_space {
	ulint id;
	ulint size;
	ulint flags;
	struct fil_space *hash_next;
} fil_space_t;

typedef struct fil_system {
	ib_mutex_t mutex;
	fil_space_t spaces[FIL_N_SPACES];
	fil_space_t *hash[FIL_HASH_CELLS];
} fil_system_t;

static fil_system_t fil_system;

static void fil_init(void)
{
	for (ulint i = 0; i < FIL_N_SPACES; i++) {
		fil_space_t *s = &fil_system.spaces[i];
		s->id = i;
		s->size = 64 + i;
		s->flags = i & 0x3f;
		s->hash_next = fil_system.hash[i % FIL_HASH_CELLS];
		fil_system.hash[i % FIL_HASH_CELLS] = s;
	}
}

NOINLINE fil_space_t *fil_space_get_by_id(ulint id)
{
	KEEP_FRAME();
	fil_space_t *s = fil_system.hash[id % FIL_HASH_CELLS];
	while (s != NULL && s->id != id)
		s = s->hash_next;
	return s;
}

/* One global mutex around a hash lookup: the 5.7 shape that index dives hammer. */
NOINLINE fil_space_t *fil_space_get(ulint id)
{
	mutex_enter_func(&fil_system.mutex);
	fil_space_t *s = fil_space_get_by_id(id);
	mutex_exit_func(&fil_system.mutex);
	return s;
}

/* ------------------------------------------------------------------ row format work */

typedef struct row_prebuilt {
	uint8_t rec[REC_FIELDS * 8];
	uint8_t mysql_rec[REC_FIELDS * 8];
	uint64_t checksum;
	ulint n_rows;
} row_prebuilt_t;

static inline uint64_t mach_read_from_8(const uint8_t *b)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | b[i];
	return v;
}

/* Convert one big-endian InnoDB record into little-endian "MySQL format": real work. */
NOINLINE int row_sel_store_mysql_rec(row_prebuilt_t *p)
{
	KEEP_FRAME();
	for (int f = 0; f < REC_FIELDS; f++) {
		uint64_t v = mach_read_from_8(p->rec + f * 8) ^ 0x8000000000000000ULL;
		memcpy(p->mysql_rec + f * 8, &v, 8);
		p->checksum = (p->checksum ^ v) * 0x100000001b3ULL;
	}
	return 1;
}

NOINLINE void page_cur_move_to_next(row_prebuilt_t *p)
{
	KEEP_FRAME();
	p->n_rows++;
	for (int f = 0; f < REC_FIELDS; f++) {
		uint64_t v = p->n_rows * 2654435761ULL + (uint64_t)f;
		for (int i = 7; i >= 0; i--) {
			p->rec[f * 8 + i] = (uint8_t)v;
			v >>= 8;
		}
	}
}

NOINLINE int row_search_mvcc(row_prebuilt_t *p)
{
	page_cur_move_to_next(p);
	return row_sel_store_mysql_rec(p);
}

/* ------------------------------------------------------------------ server layer: scans */

NOINLINE int ha_innobase_rnd_next(row_prebuilt_t *p)
{
	return row_search_mvcc(p);
}

NOINLINE int ha_innobase_index_read(row_prebuilt_t *p)
{
	return row_search_mvcc(p);
}

NOINLINE int rr_sequential(row_prebuilt_t *p)
{
	return ha_innobase_rnd_next(p);
}

NOINLINE ulint sub_select(row_prebuilt_t *p, ulint rows, int by_index)
{
	ulint sent = 0;
	for (ulint r = 0; r < rows && !demo_stopping(); r++)
		sent += (ulint)(by_index ? ha_innobase_index_read(p) : rr_sequential(p));
	return sent;
}

NOINLINE ulint JOIN_exec(row_prebuilt_t *p, ulint rows, int by_index)
{
	return sub_select(p, rows, by_index);
}

/* ------------------------------------------------------------------ server layer: index dives */

NOINLINE ulint page_get_n_recs_on_level(const fil_space_t *space, ulint page_no)
{
	KEEP_FRAME();
	/* A little arithmetic standing in for reading one page of the level. */
	ulint n = space->size;
	for (ulint i = 0; i < 16; i++)
		n = n * 31 + page_no + i;
	return 100 + n % 300;
}

NOINLINE ulint btr_estimate_n_rows_in_range_on_level(ulint space_id, ulint first_page)
{
	ulint n_rows = 0;
	for (ulint i = 0; i < N_PAGES_READ_LIMIT; i++) {
		const fil_space_t *space = fil_space_get(space_id);
		n_rows += page_get_n_recs_on_level(space, first_page + i);
	}
	return n_rows;
}

NOINLINE ulint btr_estimate_n_rows_in_range_low(ulint space_id, ulint key)
{
	return btr_estimate_n_rows_in_range_on_level(space_id, key % 1000);
}

NOINLINE ulint btr_estimate_n_rows_in_range(ulint space_id, ulint key)
{
	return btr_estimate_n_rows_in_range_low(space_id, key);
}

NOINLINE ulint ha_innobase_records_in_range(ulint space_id, ulint key)
{
	return btr_estimate_n_rows_in_range(space_id, key);
}

NOINLINE ulint check_quick_select(ulint space_id, ulint key)
{
	return ha_innobase_records_in_range(space_id, key);
}

NOINLINE ulint test_quick_select(ulint space_id, ulint n_ranges)
{
	ulint rows = 0;
	for (ulint r = 0; r < n_ranges; r++)
		rows += check_quick_select(space_id, ut_rnd_interval(0, 1u << 20));
	return rows;
}

NOINLINE ulint get_quick_record_count(ulint space_id)
{
	return test_quick_select(space_id, 4);
}

NOINLINE ulint JOIN_optimize(ulint space_id)
{
	return get_quick_record_count(space_id);
}

/* ------------------------------------------------------------------ connections */

NOINLINE ulint handle_query(row_prebuilt_t *p, enum role role)
{
	if (role == ROLE_INDEX_DIVE) {
		ulint space_id = ut_rnd_interval(0, 16); /* a few hot tables */
		JOIN_optimize(space_id);
		return JOIN_exec(p, 8, 1);
	}
	return JOIN_exec(p, 2000, 0);
}

NOINLINE ulint mysql_execute_command(row_prebuilt_t *p, enum role role)
{
	return handle_query(p, role);
}

NOINLINE ulint dispatch_command(row_prebuilt_t *p, enum role role)
{
	return mysql_execute_command(p, role);
}

NOINLINE ulint do_command(row_prebuilt_t *p, enum role role)
{
	return dispatch_command(p, role);
}

static atomic_ulong demo_queries;

/* ROLE_SPIKE: light healthy queries (a pause after each) but, inside the spike window, index dives flat out. */
static void spike_step(row_prebuilt_t *p, ulint *n)
{
	double t = now_s();
	long long at = atomic_load_explicit(&demo_spike_signal, memory_order_relaxed);
	double from = at ? (double)at / 1e9 + demo_spike_at : demo_spike_from; /* --spike-on-usr1: from the signal */
	double to = at ? from + demo_spike_len : demo_spike_to;
	if (t >= from && t < to) {
		do_command(p, ROLE_INDEX_DIVE);
		return;
	}
	do_command(p, ROLE_HEALTHY);
	if (++*n % 2 == 0) {
		struct timespec nap = {0, 4 * 1000 * 1000};
		nanosleep(&nap, NULL);
	}
}

NOINLINE void handle_connection(enum role role)
{
	row_prebuilt_t p;
	ulint n = 0;
	memset(&p, 0, sizeof(p));
	while (!demo_stopping()) {
		if (role == ROLE_SPIKE)
			spike_step(&p, &n);
		else
			do_command(&p, role);
		atomic_fetch_add_explicit(&demo_queries, 1, memory_order_relaxed);
	}
}

/* ------------------------------------------------------------------ page cleaner */

typedef struct buf_pool {
	atomic_ulong n_pend_reads;
	char pad[56];
} buf_pool_t;

static buf_pool_t buf_pool_ptr[BUF_POOL_INSTANCES];
static buf_block_t buf_hot_blocks[HOT_PAGES];
static atomic_ulong srv_activity_count;
static atomic_ulong demo_cleaner_loops;
static atomic_ulong demo_pages_flushed;

NOINLINE ulint ut_time_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (ulint)tv.tv_sec * 1000 + (ulint)tv.tv_usec / 1000;
}

/* Sum pending reads over all instances, a full barrier before each read. */
NOINLINE ulint buf_get_n_pending_read_ios(void)
{
	KEEP_FRAME();
	ulint pend = 0;
	for (int i = 0; i < BUF_POOL_INSTANCES; i++) {
		os_rmb();
		pend += atomic_load_explicit(&buf_pool_ptr[i].n_pend_reads, memory_order_relaxed);
	}
	return pend;
}

NOINLINE int srv_check_activity(ulint old_count)
{
	KEEP_FRAME();
	return atomic_load_explicit(&srv_activity_count, memory_order_relaxed) != old_count;
}

/* The sleep that never happens: the event is always set, so it returns at once. */
NOINLINE int pc_sleep_if_needed(ulint next_loop_time)
{
	ulint now = ut_time_ms();
	return next_loop_time <= now;
}

NOINLINE ulint page_cleaner_flush_pages_recommendation(ulint pending, ulint loops)
{
	KEEP_FRAME();
	return (pending + loops) % 200;
}

NOINLINE uint32_t buf_calc_page_crc32(const uint32_t *frame)
{
	KEEP_FRAME();
	uint32_t h = 2166136261u;
	for (int i = 0; i < PAGE_SIZE / 4; i += 4)
		h = (h ^ frame[i]) * 16777619u;
	return h;
}

NOINLINE void buf_flush_write_block_low(buf_block_t *block)
{
	block->frame[0] = buf_calc_page_crc32(block->frame);
	block->newest_lsn++;
}

NOINLINE void buf_flush_page(buf_block_t *block)
{
	rw_lock_sx_lock_func(block, "buf0flu.cc", 1088);
	buf_flush_write_block_low(block);
	rw_lock_sx_unlock_func(block);
	atomic_fetch_add_explicit(&demo_pages_flushed, 1, memory_order_relaxed);
}

NOINLINE void buf_flush_page_and_try_neighbors(void)
{
	buf_flush_page(&buf_hot_blocks[ut_rnd_interval(0, HOT_PAGES)]);
}

NOINLINE ulint buf_flush_do_batch(ulint n_pages)
{
	ulint n = 0;
	for (; n < n_pages && !demo_stopping(); n++)
		buf_flush_page_and_try_neighbors();
	return n;
}

NOINLINE ulint pc_flush_slot(void)
{
	return buf_flush_do_batch(32);
}

/* ROLE_PAGE_CLEANER: bug 87637's loop. ROLE_FLUSH_COORDINATOR: flushes hot pages. */
NOINLINE void buf_flush_page_cleaner_coordinator(enum role role)
{
	ulint next_loop_time = ut_time_ms() + 1000;
	ulint last_activity = 0;
	ulint loops = 0;
	while (!demo_stopping()) {
		if (role == ROLE_FLUSH_COORDINATOR) {
			pc_flush_slot();
			continue;
		}
		if (pc_sleep_if_needed(next_loop_time))
			next_loop_time = ut_time_ms() + 1000;
		if (srv_check_activity(last_activity))
			last_activity = atomic_load_explicit(&srv_activity_count, memory_order_relaxed);
		ulint pending = buf_get_n_pending_read_ios();
		page_cleaner_flush_pages_recommendation(pending, loops++);
		atomic_fetch_add_explicit(&demo_cleaner_loops, 1, memory_order_relaxed);
	}
}

NOINLINE void buf_flush_page_cleaner_worker(void)
{
	while (!demo_stopping())
		pc_flush_slot();
}

/* ------------------------------------------------------------------ blocking (off-CPU) */

/* The "blocking" scenario: threads that wait rather than burn CPU, for the off-CPU view.
 * One transaction holds a hot row lock and thinks for 200 ms between statements; two sessions
 * wait for that lock in lock_wait_suspend_thread (a condition variable: a futex sleep).
 * Two sessions commit with a durable redo write: log_write_up_to takes the log mutex (the other
 * one sleeps on it: a mutex futex sleep) and the holder pwrites and fdatasyncs a file (I/O). */
static pthread_mutex_t lock_sys_wait_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lock_release_event = PTHREAD_COND_INITIALIZER;
static ulint lock_release_generation;
static pthread_mutex_t log_sys_mutex = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;
static atomic_ulong demo_commits, demo_lock_waits, demo_trx_holds;

NOINLINE void trx_think_time(void)
{
	struct timespec t = {0, 200 * 1000 * 1000};
	nanosleep(&t, NULL);
}

/* A transaction holding the hot row for its whole think time; its commit wakes the waiters. */
NOINLINE void trx_hold_row_lock(void)
{
	trx_think_time();
	pthread_mutex_lock(&lock_sys_wait_mutex);
	lock_release_generation++;
	pthread_cond_broadcast(&lock_release_event);
	pthread_mutex_unlock(&lock_sys_wait_mutex);
	atomic_fetch_add_explicit(&demo_trx_holds, 1, memory_order_relaxed);
}

NOINLINE void os_event_wait_low(void)
{
	pthread_cond_wait(&lock_release_event, &lock_sys_wait_mutex);
}

/* Wait until the lock holder's current transaction commits (each waiter always finds the row locked). */
NOINLINE void lock_wait_suspend_thread(void)
{
	pthread_mutex_lock(&lock_sys_wait_mutex);
	ulint gen = lock_release_generation;
	while (gen == lock_release_generation && !demo_stopping())
		os_event_wait_low();
	pthread_mutex_unlock(&lock_sys_wait_mutex);
	atomic_fetch_add_explicit(&demo_lock_waits, 1, memory_order_relaxed);
}

NOINLINE void row_update_for_mysql(void)
{
	KEEP_FRAME();
	lock_wait_suspend_thread();
}

NOINLINE void ha_innobase_update_row(void)
{
	KEEP_FRAME();
	row_update_for_mysql();
}

NOINLINE void fil_flush(void)
{
	if (log_fd >= 0)
		fdatasync(log_fd);
}

NOINLINE void log_write_flush_to_disk_low(void)
{
	static char block[4096];
	static off_t offset;
	if (log_fd >= 0 && pwrite(log_fd, block, sizeof(block), offset) == (ssize_t)sizeof(block))
		offset = (offset + (off_t)sizeof(block)) % (1 << 20);
	fil_flush();
}

/* Group commit reduced to its waits: one writer at a time under the log mutex. */
NOINLINE void log_write_up_to(void)
{
	pthread_mutex_lock(&log_sys_mutex);
	log_write_flush_to_disk_low();
	pthread_mutex_unlock(&log_sys_mutex);
}

NOINLINE void trx_commit_complete_for_mysql(void)
{
	KEEP_FRAME();
	log_write_up_to();
}

NOINLINE void innobase_commit(void)
{
	KEEP_FRAME();
	trx_commit_complete_for_mysql();
}

NOINLINE void ha_commit_trans(void)
{
	KEEP_FRAME();
	innobase_commit();
	atomic_fetch_add_explicit(&demo_commits, 1, memory_order_relaxed);
}

NOINLINE void handle_blocking_connection(enum role role)
{
	while (!demo_stopping()) {
		if (role == ROLE_ROW_LOCK_HOLDER)
			trx_hold_row_lock();
		else if (role == ROLE_ROW_LOCK_WAITER)
			ha_innobase_update_row();
		else
			ha_commit_trans();
	}
	if (role == ROLE_ROW_LOCK_HOLDER) { /* release the waiters for good */
		pthread_mutex_lock(&lock_sys_wait_mutex);
		lock_release_generation++;
		pthread_cond_broadcast(&lock_release_event);
		pthread_mutex_unlock(&lock_sys_wait_mutex);
	}
}

/* The redo "file": an unlinked file in $TMPDIR (or /tmp), so fdatasync does real I/O and nothing is left. */
static void log_open(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/pmuprof-demo-redo-%d", dir && *dir ? dir : "/tmp", (int)getpid());
	log_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (log_fd >= 0)
		unlink(path);
	else
		fprintf(stderr, "pmuprof-demo: cannot create %s: %s (commits will not fsync)\n", path, strerror(errno));
}

/* ------------------------------------------------------------------ threads */

struct thread_arg {
	enum role role;
	int index;
	pthread_t tid;
};

static void *os_thread_start(void *opaque)
{
	struct thread_arg *a = opaque;
	char name[16];
	ut_rnd_state = 0x9e3779b97f4a7c15ULL * (uint64_t)(a->index + 1) ^ (uint64_t)getpid();
	switch (a->role) {
	case ROLE_INDEX_DIVE:
	case ROLE_HEALTHY:
	case ROLE_SPIKE:
		pthread_setname_np(pthread_self(), "connection");
		handle_connection(a->role);
		break;
	case ROLE_FLUSH_COORDINATOR:
	case ROLE_PAGE_CLEANER:
		pthread_setname_np(pthread_self(), "ib_pg_flush_co");
		buf_flush_page_cleaner_coordinator(a->role);
		break;
	case ROLE_ROW_LOCK_HOLDER:
	case ROLE_ROW_LOCK_WAITER:
	case ROLE_COMMITTER:
		pthread_setname_np(pthread_self(), "connection");
		handle_blocking_connection(a->role);
		break;
	case ROLE_FLUSH_WORKER:
		snprintf(name, sizeof(name), "ib_pg_flush-%d", a->index % 100);
		pthread_setname_np(pthread_self(), name);
		buf_flush_page_cleaner_worker();
		break;
	}
	return NULL;
}

/* Fill roles[] for the scenario; returns the number of threads. */
static int scenario_roles(const struct demo_config *c, enum role *roles)
{
	int n = 0;
	if (!strcmp(c->scenario, "index-dive") || !strcmp(c->scenario, "healthy")) {
		enum role r = c->scenario[0] == 'i' ? ROLE_INDEX_DIVE : ROLE_HEALTHY;
		for (; n < c->threads; n++)
			roles[n] = r;
	} else if (!strcmp(c->scenario, "spike")) {
		for (; n < c->threads; n++)
			roles[n] = ROLE_SPIKE;
	} else if (!strcmp(c->scenario, "spin")) {
		roles[n++] = ROLE_FLUSH_COORDINATOR;
		for (; n < c->threads; n++)
			roles[n] = ROLE_FLUSH_WORKER;
	} else if (!strcmp(c->scenario, "page-cleaner")) {
		roles[n++] = ROLE_PAGE_CLEANER;
	} else if (!strcmp(c->scenario, "blocking")) {
		enum role fixed[] = {ROLE_ROW_LOCK_HOLDER, ROLE_ROW_LOCK_WAITER, ROLE_ROW_LOCK_WAITER, ROLE_COMMITTER,
				     ROLE_COMMITTER, ROLE_HEALTHY};
		for (; n < (int)(sizeof(fixed) / sizeof(fixed[0])); n++)
			roles[n] = fixed[n];
	} else if (!strcmp(c->scenario, "mixed")) {
		for (; n < c->threads; n++)
			roles[n] = n % 4 == 3 ? ROLE_HEALTHY : ROLE_INDEX_DIVE;
		roles[n++] = ROLE_PAGE_CLEANER;
		roles[n++] = ROLE_FLUSH_WORKER;
		roles[n++] = ROLE_FLUSH_WORKER;
	} else {
		return -1;
	}
	return n;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: pmuprof-demo [--scenario spin|index-dive|page-cleaner|healthy|mixed|blocking|spike]\n"
		"                    [--threads N] [--spin-wait-delay D] [--spin-loops L]\n"
		"                    [--pause-multiplier M] [--seconds S] [--die-with-parent]\n"
		"                    [--spike-at T] [--spike-len L] [--spike-on-usr1]\n"
		"A workload with InnoDB-like symbols for pmuprof; S=0 runs until SIGTERM/SIGINT.\n"
		"spike: light healthy queries, but index dives flat out from T to T+L seconds after the start\n"
		"       (after SIGUSR1 with --spike-on-usr1).\n");
}

static int parse_ulong(const char *s, ulint lo, ulint hi, ulint *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -1;
	*out = (ulint)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct demo_config *c)
{
	static const struct option opts[] = {
		{"scenario", required_argument, NULL, 's'}, {"threads", required_argument, NULL, 't'},
		{"spin-wait-delay", required_argument, NULL, 'd'}, {"spin-loops", required_argument, NULL, 'l'},
		{"pause-multiplier", required_argument, NULL, 'm'}, {"seconds", required_argument, NULL, 'S'},
		{"die-with-parent", no_argument, NULL, 'P'}, {"help", no_argument, NULL, 'h'},
		{"spike-at", required_argument, NULL, 'A'}, {"spike-len", required_argument, NULL, 'L'},
		{"spike-on-usr1", no_argument, NULL, 'U'}, {NULL, 0, NULL, 0}};
	ulint v;
	char *end;
	int ch;
	while ((ch = getopt_long(argc, argv, "s:t:d:l:m:S:PhA:L:U", opts, NULL)) != -1) {
		switch (ch) {
		case 's': c->scenario = optarg; break;
		case 't': if (parse_ulong(optarg, 1, MAX_THREADS - 3, &v)) return -1; c->threads = (int)v; break;
		case 'd': if (parse_ulong(optarg, 0, 6000, &v)) return -1; srv_spin_wait_delay = v; break;
		case 'l': if (parse_ulong(optarg, 1, 100000, &v)) return -1; srv_n_spin_wait_rounds = v; break;
		case 'm': if (parse_ulong(optarg, 0, 1000, &v)) return -1; srv_spin_wait_pause_multiplier = v; break;
		case 'S':
			c->seconds = strtod(optarg, &end);
			if (*end || end == optarg || c->seconds < 0) return -1;
			break;
		case 'P': c->die_with_parent = 1; break;
		case 'U': c->spike_on_usr1 = 1; break;
		case 'A':
		case 'L':
			*(ch == 'A' ? &c->spike_at : &c->spike_len) = strtod(optarg, &end);
			if (*end || end == optarg || (ch == 'A' ? c->spike_at : c->spike_len) < 0) return -1;
			break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	return optind == argc ? 0 : -1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void print_summary(double elapsed)
{
	printf("pmuprof-demo: stopped after %.1f s: queries=%lu cleaner_loops=%lu pages_flushed=%lu\n", elapsed,
	       atomic_load(&demo_queries), atomic_load(&demo_cleaner_loops), atomic_load(&demo_pages_flushed));
	printf("pmuprof-demo: fil_system mutex: spin_waits=%lu rounds=%lu os_waits=%lu\n",
	       atomic_load(&fil_system.mutex.spin_waits), atomic_load(&fil_system.mutex.spin_rounds),
	       atomic_load(&fil_system.mutex.os_waits));
	ulint waits = 0, rounds = 0, os_waits = 0;
	for (int i = 0; i < HOT_PAGES; i++) {
		waits += atomic_load(&buf_hot_blocks[i].word.spin_waits);
		rounds += atomic_load(&buf_hot_blocks[i].word.spin_rounds);
		os_waits += atomic_load(&buf_hot_blocks[i].word.os_waits);
	}
	printf("pmuprof-demo: RW-sx block locks: spin_waits=%lu rounds=%lu os_waits=%lu\n", waits, rounds, os_waits);
	printf("pmuprof-demo: blocking: row-lock holds=%lu lock waits=%lu commits=%lu\n", atomic_load(&demo_trx_holds),
	       atomic_load(&demo_lock_waits), atomic_load(&demo_commits));
}

int main(int argc, char **argv)
{
	struct demo_config c = {"mixed", 4, 10.0, 0, 5.0, 3.0, 0};
	static enum role roles[MAX_THREADS];
	static struct thread_arg args[MAX_THREADS];
	if (parse_args(argc, argv, &c) != 0) {
		usage(stderr);
		return 2;
	}
	int n = scenario_roles(&c, roles);
	if (n < 0) {
		fprintf(stderr, "pmuprof-demo: unknown scenario '%s'\n", c.scenario);
		usage(stderr);
		return 2;
	}
	if (c.die_with_parent && (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() == 1))
		return 1;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = demo_on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = demo_on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	fil_init();
	if (!strcmp(c.scenario, "blocking"))
		log_open();
	double start = now_s();
	demo_spike_at = c.spike_at, demo_spike_len = c.spike_len;
	demo_spike_from = c.spike_on_usr1 ? 1e300 : start + c.spike_at; /* with --spike-on-usr1: none before it */
	demo_spike_to = demo_spike_from + c.spike_len;
	for (int i = 0; i < n; i++) {
		args[i].role = roles[i];
		args[i].index = i;
		if (pthread_create(&args[i].tid, NULL, os_thread_start, &args[i]) != 0) {
			fprintf(stderr, "pmuprof-demo: cannot create thread %d\n", i);
			atomic_store(&demo_stop, 1);
			n = i;
			break;
		}
	}
	printf("pmuprof-demo: pid %d scenario %s threads %d spin_wait_delay %lu seconds %g\n", (int)getpid(),
	       c.scenario, n, srv_spin_wait_delay, c.seconds);
	fflush(stdout);
	while (!demo_stopping() && (c.seconds == 0 || now_s() - start < c.seconds)) {
		struct timespec tick = {0, 20 * 1000 * 1000};
		nanosleep(&tick, NULL);
	}
	atomic_store(&demo_stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(args[i].tid, NULL);
	print_summary(now_s() - start);
	return 0;
}
