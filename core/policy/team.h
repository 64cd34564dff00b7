/* team.h — helper threads for the decoding step's products (cpu backend).
 *
 * What it is: spade_team_run(fn, arg, n) runs fn(arg, i, worker) for every i
 * in [0, n) on the calling thread and the team's helpers, each item taken
 * from a shared counter by whichever thread is free, and returns when all
 * are done. Unlike an OpenMP parallel region it never waits for a helper
 * that has not started: the caller takes items itself until none are left,
 * so a helper that the OS has descheduled (a machine busier than its cores)
 * costs at most the item it holds, not a scheduler period per product. One
 * slot's decoding step runs ~120 small products a token; through OpenMP
 * regions each one waited at a barrier for both threads (bench_llama decode
 * 1 at load 4-6 on 2 cores: 1.4-2.3 tokens/s against 25 on one thread).
 * The helpers spin briefly after a job, then sleep on a condition variable.
 * Team size: omp_get_max_threads() at the call (the user's OMP_NUM_THREADS,
 * as every other loop of the cpu backend), capped by the helpers started
 * with the first job; 1 without OpenMP.
 * What it is not: a general scheduler. One job at a time per process: a
 * call made while another runs (another thread, or from inside an OpenMP
 * region) runs its items on the calling thread. worker is in [0, team size)
 * and no two threads of one job run with the same one at once (for a job's
 * per-thread scratch).
 * In a child process after fork() every call runs on the calling thread.
 * Which thread runs an item never changes what it computes: callers give
 * each item its own outputs, so results do not depend on the team size.
 */
#ifndef SPADE_POLICY_TEAM_H
#define SPADE_POLICY_TEAM_H

typedef void (*spade_team_fn)(void *arg, int item, int worker);

void spade_team_run(spade_team_fn fn, void *arg, int n);

/* The most workers a call may use now (its worker indices stay below it). */
int spade_team_size(void);

#endif
