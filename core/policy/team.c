/* team.c — the decoding step's helper threads (see team.h).
 *
 * What it is: a process-wide team of helper threads started on the first
 * job, and the protocol by which the caller hands them jobs:
 *   gen     even: a job is open to join; odd: the caller is replacing it.
 *           Each job bumps it by 2, so a helper joins a job once.
 *   inside  helpers that joined the current job and may still read it. The
 *           caller closes the job (gen odd) and waits for inside = 0 before
 *           it writes the next job's fields, so no helper ever reads a job
 *           being written (a helper rechecks gen after entering).
 *   next    the next item to take; done the items finished. The caller takes
 *           items with the helpers and then waits only for done = n: for
 *           items a helper holds, never for a helper that took none.
 * All atomics are sequentially consistent (the inside/gen handshake is a
 * Dekker pattern: each side writes its flag, then reads the other's).
 * What it is not: a work-stealing pool, or anything the training step uses
 * (its GEMMs are large enough for OpenMP's regions).
 */
#include "policy/team.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define TEAM_MAX 64
/* A helper spins this many pause loops (about 0.1 ms at the 23 ns a pause
 * takes here: longer than the gap between two products of a step, short
 * beside the spin libgomp's default keeps, and spade's commands ask
 * OpenMP to wait passively, docs/performance.md) before it sleeps; the
 * caller waiting on a held item spins as long before it yields its core
 * (on a busy machine the holder may be waiting for that core). */
#define TEAM_SPIN 4000
/* A job whose caller waited longer than this for a helper's item (an item
 * is microseconds of work: a wait this long means the OS descheduled the
 * helper while it held one) makes the next jobs run on the caller alone:
 * 16 of them, or twice as many as after the last stall if that came less
 * than TEAM_CLEAN jobs ago, up to TEAM_SOLO_MAX (tens of tokens). One stall
 * costs the time the team saves over ~50 products, so on a machine busier
 * than its cores, where they come every few milliseconds, the team runs
 * as a probe now and then (bench_llama decode 1, q8_0 weights, load 4-6 on
 * 2 cores: the team without a backoff ran 17-18 tokens/s, one thread
 * 23-28). Which thread computes an item never changes its result, so this
 * changes only the speed. */
#define TEAM_STALL_NS 500000L
#define TEAM_CLEAN 1024
#define TEAM_SOLO_MAX 16384

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static struct {
    pthread_mutex_t mu; /* guards starting the team and the sleepers' wait */
    pthread_cond_t cv;
    atomic_int started; /* set once pid and helpers are final */
    int helpers;
    pid_t pid; /* the process that started the team */
    atomic_uint gen;
    atomic_int inside, next, done, sleepers;
    atomic_flag busy; /* a job is running (one at a time) */
    int solo, backoff, clean; /* jobs left to run alone; the last such run; team jobs since (under busy) */
    /* the job: written only while gen is odd and no helper is inside */
    spade_team_fn fn;
    void *arg;
    int n, want;
} T = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0, ATOMIC_FLAG_INIT, 0, 0, 0, 0, 0, 0, 0};

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void take_items(int worker) {
    for (int i; (i = atomic_fetch_add(&T.next, 1)) < T.n;) {
        T.fn(T.arg, i, worker);
        atomic_fetch_add(&T.done, 1);
    }
}

static void *helper(void *argp) {
    int worker = (int)(long)argp; /* 1.. : the caller is worker 0 */
    unsigned seen = 0;
    for (;;) {
        unsigned g = atomic_load(&T.gen);
        for (int s = 0; (g == seen || (g & 1)) && s < TEAM_SPIN; s++) {
            relax();
            g = atomic_load(&T.gen);
        }
        if (g == seen || (g & 1)) {
            pthread_mutex_lock(&T.mu);
            atomic_fetch_add(&T.sleepers, 1);
            while ((g = atomic_load(&T.gen)) == seen || (g & 1)) pthread_cond_wait(&T.cv, &T.mu);
            atomic_fetch_sub(&T.sleepers, 1);
            pthread_mutex_unlock(&T.mu);
        }
        atomic_fetch_add(&T.inside, 1);
        if (atomic_load(&T.gen) == g) {
            seen = g;
            if (worker < T.want) take_items(worker);
        }
        atomic_fetch_sub(&T.inside, 1);
    }
    return NULL;
}

static int wanted(void) {
#ifdef _OPENMP
    int w = omp_get_max_threads();
#else
    int w = 1;
#endif
    return w < 1 ? 1 : w > TEAM_MAX ? TEAM_MAX : w;
}

/* Starts the helpers once per process; returns how many there are. A
 * forked child sees the parent's team started by another pid and gets 0
 * without touching the mutex (a helper may have held it at the fork). */
static int start(void) {
    if (!atomic_load(&T.started)) {
        pthread_mutex_lock(&T.mu);
        if (!atomic_load(&T.started)) {
            T.pid = getpid();
            int want = wanted();
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            for (int h = 1; h < want; h++) {
                pthread_t t;
                if (pthread_create(&t, &at, helper, (void *)(long)h)) break;
                T.helpers++;
            }
            pthread_attr_destroy(&at);
            atomic_store(&T.started, 1);
        }
        pthread_mutex_unlock(&T.mu);
    }
    return T.pid == getpid() ? T.helpers : 0;
}

int spade_team_size(void) { return wanted(); }

void spade_team_run(spade_team_fn fn, void *arg, int n) {
    int want = wanted();
    int serial = n <= 1 || want <= 1;
#ifdef _OPENMP
    serial = serial || omp_in_parallel();
#endif
    int helpers = serial ? 0 : start();
    if (helpers < 1 || atomic_flag_test_and_set(&T.busy)) {
        for (int i = 0; i < n; i++) fn(arg, i, 0);
        return;
    }
    if (T.solo > 0) {
        T.solo--;
        for (int i = 0; i < n; i++) fn(arg, i, 0);
        atomic_flag_clear(&T.busy);
        return;
    }
    if (want > helpers + 1) want = helpers + 1;
    /* close the last job and wait for any helper still in it */
    unsigned g = atomic_load(&T.gen);
    atomic_store(&T.gen, g + 1);
    for (int s = 0; atomic_load(&T.inside); s++)
        if (s < TEAM_SPIN)
            relax();
        else
            sched_yield();
    T.fn = fn;
    T.arg = arg;
    T.n = n;
    T.want = want;
    atomic_store(&T.next, 0);
    atomic_store(&T.done, 0);
    atomic_store(&T.gen, g + 2);
    if (atomic_load(&T.sleepers)) {
        pthread_mutex_lock(&T.mu);
        pthread_cond_broadcast(&T.cv);
        pthread_mutex_unlock(&T.mu);
    }
    take_items(0);
    long t0 = atomic_load(&T.done) < n ? now_ns() : 0;
    for (int s = 0; atomic_load(&T.done) < n; s++)
        if (s < TEAM_SPIN)
            relax();
        else
            sched_yield();
    if (t0 && now_ns() - t0 > TEAM_STALL_NS) {
        int b = T.backoff && T.clean < TEAM_CLEAN ? 2 * T.backoff : 16;
        T.solo = T.backoff = b < TEAM_SOLO_MAX ? b : TEAM_SOLO_MAX;
        T.clean = 0;
    } else {
        T.clean++;
    }
    atomic_flag_clear(&T.busy);
}
