/* internal.h — what the parts of core/sandbox share and nobody else sees.
 *
 * What it is: the handles' layout (sandbox.c, vecenv.c), the zygote's
 * request interface (zygote.c), the worker's entry point (worker.c), and two
 * hooks for tests: a worker handle around a socket and process the test made
 * itself (a fake worker), and the split-phase batch calls the vector env uses.
 * What it is not: a public API; not installed.
 */
#ifndef SPADE_SANDBOX_INTERNAL_H
#define SPADE_SANDBOX_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/ipc.h"
#include "sandbox/sandbox.h"

/* The fd number of a worker's IPC socket (the seccomp filter is built once, in
 * the zygote, with this number in its argument checks). */
#define SPADE_WORKER_FD 3
/* Exit status of a worker that could not lock itself down (before any source). */
#define SPADE_WORKER_EXIT_LOCKDOWN 121
/* Exit status of a worker whose compiler gave up by calling exit() (libtcc
 * does on allocation failures outside its error recovery). */
#define SPADE_WORKER_EXIT_COMPILER 122

struct spade_sandbox {
    spade_sandbox_opts opts;
    int ctl; /* SOCK_SEQPACKET to the zygote; -1 once closed */
    pid_t zygote; /* our child */
    pid_t owner; /* the process that forked the zygote; only it may use the sandbox */
    uint32_t seq; /* request numbering, to drop late replies */
    int broken; /* the zygote stopped answering */
    int zygote_up; /* it has answered once (spade_sandbox_new does not wait for it) */
    int refs; /* live workers (they talk to the zygote to be reaped) */
    int freed; /* spade_sandbox_free was called; destroy when refs drops to 0 */
    pthread_mutex_t mu;
};

struct spade_worker {
    spade_sandbox *sb; /* NULL for an adopted (test) worker */
    char name[256]; /* the file name, for messages */
    spade_sandbox_opts opts;
    pid_t pid;
    int sock;
    int pidfd; /* -1 when the kernel has no pidfd_open */
    int reaped; /* the process is gone and its status collected */
    int failed; /* fail holds the sticky failure */
    spade_failure fail;
    int loaded;
    spade_env_info info;
    spade_ipc_buf out, in;
    double sent_at; /* when the request in flight was sent */
    double busy_s; /* wall time spent in calls: bounds the worker's CPU time */
    double cpu_granted_s; /* its RLIMIT_CPU soft limit */
    int pending; /* a batch was sent; its results are not received yet */
    uint32_t pending_n;
    double pending_deadline;
};

/* ---- zygote (zygote.c) ---------------------------------------------------- */
/* The exec'd zygote's entry: when argv is the zygote's own (spade_zygote_start
 * passes it), serves as the zygote and never returns; else returns -1. Called
 * by the spade-zygote helper's main and by a constructor before main. */
int spade_zygote_exec_entry(int argc, char **argv);
/* Forks the zygote; in the parent returns its pid and the control socket. */
int spade_zygote_start(const spade_sandbox_opts *opts, int *ctl, pid_t *pid, char *err, size_t errlen);
/* A locked-down worker, waiting for its LOAD frame. */
int spade_zygote_spawn(spade_sandbox *sb, double deadline, pid_t *pid, int *sock, int *pidfd, char *err, size_t errlen);
/* Waits up to grace_ms for worker pid to exit, kills it if it has not, reaps
 * it. *status is the wait status, *killed whether the zygote had to kill it. */
int spade_zygote_reap(spade_sandbox *sb, pid_t pid, int grace_ms, int *status, int *killed, char *err, size_t errlen);
/* Round trip to the zygote: is it alive and answering? */
int spade_zygote_ping(spade_sandbox *sb, double deadline, char *err, size_t errlen);

/* ---- the worker process (worker.c) ------------------------------------------ */
/* Locks the process down (rlimits, fds, no_new_privs, seccomp prog), then
 * serves requests on sock until the parent goes away. Never returns. */
struct sock_fprog;
void spade_worker_process(int sock, const spade_sandbox_opts *opts, uint64_t vm_base, const struct sock_fprog *filter)
    __attribute__((noreturn));
/* The seccomp allowlist as a BPF program (built once with libseccomp). */
int spade_worker_filter(struct sock_fprog *out, char *err, size_t errlen);
/* Bytes of address space this process maps now (/proc/self/statm): the base
 * a worker's mem_limit is added to. */
uint64_t spade_sandbox_vm_size(void);

/* ---- hooks -------------------------------------------------------------------- */
/* A worker handle around a socket and a child process the caller forked (tests:
 * fake workers that send crafted frames). The handle owns sock; freeing it
 * kills and reaps pid with waitpid. info may be NULL (not loaded). */
int spade_worker_adopt(int sock, pid_t pid, const spade_sandbox_opts *opts, const spade_env_info *info,
                       spade_worker **out);

/* spade_worker_load in two halves, so that several workers compile at once
 * (the vector env): begin spawns and sends the source; finish waits for the
 * reply. On failure each frees the worker and fills f. */
int spade_worker_load_begin(spade_sandbox *sb, const char *filename, const char *source, size_t len, spade_worker **out,
                            spade_failure *f);
int spade_worker_load_finish(spade_worker *w, spade_failure *f);
/* begin with the worker's fresh memory poisoned by seed poison (0: off), as
 * spade_worker_load_poisoned. */
int spade_worker_load_begin_poisoned(spade_sandbox *sb, const char *filename, const char *source, size_t len,
                                     uint64_t poison, spade_worker **out, spade_failure *f);

/* ---- failures (sandbox.c; vecenv.c answers with the same words) ---------------- */
/* Puts "prefix: " before f->message, truncating its end if needed. */
void spade_failure_prefix(spade_failure *f, const char *prefix);
/* The caller's mistake: fills f (when not NULL) as a SPADE_OUT_BAD_CALL with
 * the formatted message, touches no worker, and returns -1. */
int spade_bad_call(spade_failure *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* f (when not NULL) says SPADE_OUT_OK: no signal, no line, no message. */
void spade_failure_clear(spade_failure *f);

void spade_sandbox_opts_fill(spade_sandbox_opts *o, const spade_sandbox_opts *given);

#endif /* SPADE_SANDBOX_INTERNAL_H */
