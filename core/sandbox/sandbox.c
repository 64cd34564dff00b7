/* sandbox.c — the parent's side of the sandbox: sandbox and worker handles.
 *
 * What it is: the implementation of the worker half of sandbox.h. Each call
 * sends one frame and waits for one reply under a wall-clock deadline; whatever
 * goes wrong ends in exactly one classified outcome:
 *   - the worker's own report (FAIL frame) when the request can honestly get
 *     it: compile_error, link_error, invalid_env (LOAD only), out_of_memory;
 *     any other FAIL (bad_call included: requests are checked before they are
 *     sent) is a protocol_violation;
 *   - no reply by the deadline: SIGKILL (pidfd_send_signal where the kernel has
 *     it, else the zygote kills it), then timeout;
 *   - the socket closed: the worker died; its wait status (collected by the
 *     zygote, whose child it is) says how: SIGSYS -> forbidden_syscall,
 *     SIGXCPU -> timeout, SEGV/BUS/FPE/ILL/ABRT/TRAP/other signals -> crash,
 *     a SIGKILL we did not send -> out_of_memory (the kernel's OOM killer), an
 *     exit without a reply -> protocol_violation;
 *   - a malformed frame (ipc.c's decoders): protocol_violation, worker killed.
 * Any failure but bad_call kills and reaps the worker and is sticky: every
 * later call on the handle returns it again. No call leaves a zombie or an fd.
 * What it is not: the zygote (zygote.c), the worker process (worker.c) or the
 * vector env (vecenv.c). Handles are not thread-safe, except that several
 * threads may each drive their own workers of one sandbox.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errbuf.h"
#include "sandbox/internal.h"

/* ---- outcome names ------------------------------------------------------------- */
static const char *const outcome_names[SPADE_OUT_COUNT_] = {
    [SPADE_OUT_OK] = "ok",
    [SPADE_OUT_COMPILE] = "compile_error",
    [SPADE_OUT_LINK] = "link_error",
    [SPADE_OUT_INVALID] = "invalid_env",
    [SPADE_OUT_TIMEOUT] = "timeout",
    [SPADE_OUT_CRASH] = "crash",
    [SPADE_OUT_SYSCALL] = "forbidden_syscall",
    [SPADE_OUT_OOM] = "out_of_memory",
    [SPADE_OUT_PROTOCOL] = "protocol_violation",
    [SPADE_OUT_OUTPUT] = "output_too_large",
    [SPADE_OUT_BAD_CALL] = "bad_call",
    [SPADE_OUT_INTERNAL] = "internal_error",
};

const char *spade_outcome_name(spade_outcome o) {
    if ((int)o < 0 || o >= SPADE_OUT_COUNT_) return "unknown";
    return outcome_names[o];
}

int spade_outcome_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < SPADE_OUT_COUNT_; i++)
        if (strcmp(outcome_names[i], name) == 0) return i;
    return -1;
}

/* ---- options ------------------------------------------------------------------- */
void spade_sandbox_opts_fill(spade_sandbox_opts *o, const spade_sandbox_opts *given) {
    spade_sandbox_opts d = {.compile_timeout_s = 2.0,
                            .call_timeout_s = 1.0,
                            .cpu_limit_s = 10,
                            .mem_limit = (size_t)1 << 30,
                            .max_frame = (size_t)64 << 20};
    if (given) {
        if (given->compile_timeout_s > 0 && isfinite(given->compile_timeout_s))
            d.compile_timeout_s = given->compile_timeout_s;
        if (given->call_timeout_s > 0 && isfinite(given->call_timeout_s)) d.call_timeout_s = given->call_timeout_s;
        if (given->cpu_limit_s > 0) d.cpu_limit_s = given->cpu_limit_s;
        if (given->mem_limit > 0) d.mem_limit = given->mem_limit;
        if (given->max_frame > 0) d.max_frame = given->max_frame;
    }
    /* A frame must hold the largest legitimate reply: the info, or a batch of
     * observations; below 1 MiB nothing useful fits. Above 4 GiB the 32-bit
     * length cannot say it. */
    if (d.max_frame < ((size_t)1 << 20)) d.max_frame = (size_t)1 << 20;
    if (d.max_frame > UINT32_MAX) d.max_frame = UINT32_MAX;
    *o = d;
}

static void vfailf(spade_failure *f, spade_outcome o, int sig, int line, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));
static void vfailf(spade_failure *f, spade_outcome o, int sig, int line, const char *fmt, va_list ap) {
    if (!f) return;
    f->outcome = o;
    f->signal = sig;
    f->line = line;
    vsnprintf(f->message, sizeof f->message, fmt, ap);
}

static void failf(spade_failure *f, spade_outcome o, int sig, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void failf(spade_failure *f, spade_outcome o, int sig, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfailf(f, o, sig, line, fmt, ap);
    va_end(ap);
}

int spade_bad_call(spade_failure *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfailf(f, SPADE_OUT_BAD_CALL, 0, 0, fmt, ap);
    va_end(ap);
    return -1;
}

void spade_failure_prefix(spade_failure *f, const char *prefix) {
    size_t cap = sizeof f->message;
    size_t pl = strnlen(prefix, cap / 2);
    size_t ml = strnlen(f->message, cap - 1);
    if (pl + 2 + ml > cap - 1) ml = cap - 1 - pl - 2;
    memmove(f->message + pl + 2, f->message, ml);
    memcpy(f->message, prefix, pl);
    f->message[pl] = ':';
    f->message[pl + 1] = ' ';
    f->message[pl + 2 + ml] = '\0';
}

void spade_failure_clear(spade_failure *f) {
    if (f) {
        f->outcome = SPADE_OUT_OK;
        f->signal = 0;
        f->line = 0;
        f->message[0] = '\0';
    }
}

/* ---- the sandbox ------------------------------------------------------------------- */
static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void sandbox_destroy(spade_sandbox *sb) {
    if (sb->owner != getpid()) {
        /* A forked copy of the owner: the zygote is not our child and the
         * control socket is shared with the owner; only our copy of it goes. */
        if (sb->ctl >= 0) close(sb->ctl);
        pthread_mutex_destroy(&sb->mu);
        free(sb);
        return;
    }
    if (sb->ctl >= 0) {
        close(sb->ctl); /* the zygote kills its workers and exits */
        sb->ctl = -1;
    }
    if (sb->zygote > 0) {
        int st;
        pid_t r = 0;
        for (int i = 0; i < 2000 && (r = waitpid(sb->zygote, &st, WNOHANG)) == 0; i++) sleep_ms(1);
        if (r == 0) {
            kill(sb->zygote, SIGKILL);
            while (waitpid(sb->zygote, &st, 0) < 0 && errno == EINTR)
                ;
        }
        /* r < 0 (ECHILD): the caller reaps children itself (SIGCHLD ignored). */
    }
    pthread_mutex_destroy(&sb->mu);
    free(sb);
}

int spade_sandbox_new(spade_sandbox **out, const spade_sandbox_opts *opts, char *err, size_t errlen) {
    char dummy[8];
    if (!err || !errlen) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!out) {
        spade_errf(err, errlen, "spade_sandbox_new: out is NULL");
        return -1;
    }
    *out = NULL;
    spade_sandbox *sb = calloc(1, sizeof *sb);
    if (!sb) {
        spade_errf(err, errlen, "out of memory");
        return -1;
    }
    spade_sandbox_opts_fill(&sb->opts, opts);
    sb->ctl = -1;
    sb->owner = getpid();
    pthread_mutex_init(&sb->mu, NULL);
    if (spade_zygote_start(&sb->opts, &sb->ctl, &sb->zygote, err, errlen) < 0) {
        pthread_mutex_destroy(&sb->mu);
        free(sb);
        return -1;
    }
    /* No round trip here: the exec'd zygote loads its libraries (~0.1 s with
     * CUDA and BLAS linked) while the caller goes on starting up; the first
     * spawn waits for it, and says so if it never came up. */
    *out = sb;
    return 0;
}

void spade_sandbox_free(spade_sandbox *sb) {
    if (!sb) return;
    pthread_mutex_lock(&sb->mu);
    sb->freed = 1;
    int refs = sb->refs;
    pthread_mutex_unlock(&sb->mu);
    if (refs == 0) sandbox_destroy(sb);
}

int spade_sandbox_zygote_pid(const spade_sandbox *sb) { return sb ? sb->zygote : -1; }

static void sandbox_unref(spade_sandbox *sb) {
    pthread_mutex_lock(&sb->mu);
    int last = --sb->refs == 0 && sb->freed;
    pthread_mutex_unlock(&sb->mu);
    if (last) sandbox_destroy(sb);
}

/* ---- a worker's end ------------------------------------------------------------------ */
static int pidfd_dead(int pidfd, int wait_ms) {
    struct pollfd p = {pidfd, POLLIN, 0};
    double end = spade_ipc_now() + wait_ms / 1000.0;
    for (;;) {
        int left = (int)((end - spade_ipc_now()) * 1000.0);
        int r = poll(&p, 1, left > 0 ? left : 0);
        if (r > 0) return 1;
        if (r == 0 || errno != EINTR) return 0;
    }
}

static int send_kill(spade_worker *w) {
#ifdef SYS_pidfd_send_signal
    if (w->pidfd >= 0 && syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0) == 0) return 0;
#endif
    /* No pidfd: kill by pid. While the zygote lives, the pid cannot have been
     * reused: the worker is the zygote's child and stays a zombie until it is
     * reaped, which only we ask for. Once the zygote has died that no longer
     * holds (init reaps orphans, and the pid can go to a new process), so no
     * signal is sent then: the worker got SIGKILL from its PR_SET_PDEATHSIG
     * when the zygote died. An adopted (test) worker is our own child. */
    if (w->sb && w->sb->zygote > 0) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)w->sb->zygote, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid != 0) {
            errno = ESRCH;
            return -1;
        }
    }
    return kill(w->pid, SIGKILL);
}

/* Makes sure the worker is gone and reaped. grace_ms: how long it may take to
 * die by itself (it closed its socket, so it is exiting) before SIGKILL.
 * Returns 1 with *status when the wait status is known; *we_killed says whether
 * a SIGKILL from us (or the zygote on our behalf) may be what ended it. */
static int worker_finish(spade_worker *w, int grace_ms, int *status, int *we_killed) {
    *status = 0;
    *we_killed = 0;
    if (w->reaped || w->pid <= 0) return 0;
    int known = 0;
    if (w->pidfd >= 0) {
        if (!pidfd_dead(w->pidfd, grace_ms)) {
            send_kill(w);
            *we_killed = 1;
        }
        grace_ms = 0;
    }
    if (w->sb) {
        char err[256];
        int killed = 0;
        if (spade_zygote_reap(w->sb, w->pid, grace_ms, status, &killed, err, sizeof err) == 0) {
            known = 1;
            *we_killed |= killed;
        } else if (w->pidfd < 0) {
            /* The zygote is gone; so is the worker (PR_SET_PDEATHSIG), but make sure. */
            send_kill(w);
            *we_killed = 1;
        }
    } else {
        /* An adopted worker is the caller's child: reap it here. */
        pid_t r = 0;
        for (int i = 0; i < grace_ms && (r = waitpid(w->pid, status, WNOHANG)) == 0; i++) sleep_ms(1);
        if (r == 0) {
            kill(w->pid, SIGKILL);
            *we_killed = 1;
            while ((r = waitpid(w->pid, status, 0)) < 0 && errno == EINTR)
                ;
        }
        known = r > 0;
    }
    w->reaped = 1;
    if (w->pidfd >= 0) {
        close(w->pidfd);
        w->pidfd = -1;
    }
    if (w->sock >= 0) {
        close(w->sock);
        w->sock = -1;
    }
    return known;
}

enum end_reason {
    END_DEADLINE, /* no reply in time */
    END_CLOSED, /* the socket closed under us */
    END_KILL, /* we decided: protocol violation, reported failure, our own error */
};

static const char *signal_word(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGKILL: return "SIGKILL";
    case SIGPIPE: return "SIGPIPE";
    default: return "signal";
    }
}

/* The outcome of a death from its wait status. */
static void classify_status(const spade_worker *w, int status, int we_killed, spade_failure *f) {
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (sig == SIGSYS)
            failf(f, SPADE_OUT_SYSCALL, sig, 0,
                  "worker killed by the seccomp filter (SIGSYS): a forbidden system call");
        else if (sig == SIGXCPU)
            failf(f, SPADE_OUT_TIMEOUT, sig, 0, "worker exceeded its CPU limit of %d s (SIGXCPU)", w->opts.cpu_limit_s);
        else if (sig == SIGKILL && we_killed)
            failf(f, SPADE_OUT_PROTOCOL, sig, 0, "worker closed its socket but did not exit; killed");
        else if (sig == SIGKILL)
            failf(f, SPADE_OUT_OOM, sig, 0,
                  "worker killed by a SIGKILL it was not sent by us (the kernel's OOM killer?)");
        else
            failf(f, SPADE_OUT_CRASH, sig, 0, "worker crashed: %s (signal %d)", signal_word(sig), sig);
    } else if (WIFEXITED(status)) {
        int code = WEXITSTATUS(status);
        /* The environment can exit with any status, so a status means only what
         * it can honestly mean at this point: the compiler runs only while
         * loading, and a worker that failed its lockdown is never handed out
         * (the zygote's spawn fails instead), so SPADE_WORKER_EXIT_LOCKDOWN
         * here is the environment's, like every other exit without a reply. */
        if (code == SPADE_WORKER_EXIT_COMPILER && !w->loaded)
            failf(f, SPADE_OUT_OOM, 0, 0, "the compiler gave up (out of memory)");
        else /* not a signal, so not a crash: it broke the protocol by leaving without a reply */
            failf(f, SPADE_OUT_PROTOCOL, 0, 0, "worker exited with status %d without replying", code);
    } else {
        failf(f, SPADE_OUT_INTERNAL, 0, 0, "worker ended with wait status 0x%x", status);
    }
}

/* Ends the worker and records the sticky failure. For END_KILL, given holds the
 * outcome already decided. Returns -1 for the caller to pass on. */
static int worker_end(spade_worker *w, enum end_reason why, const spade_failure *given, spade_failure *f) {
    spade_failure res;
    int status = 0, we_killed = 0;
    int known = worker_finish(w, why == END_CLOSED ? 1000 : 0, &status, &we_killed);
    if (why == END_KILL) {
        res = *given;
    } else if (why == END_DEADLINE) {
        if (known && !we_killed && WIFSIGNALED(status))
            classify_status(w, status, 0, &res); /* it died on its own just as time ran out */
        else
            failf(&res, SPADE_OUT_TIMEOUT, SIGKILL, 0, "no reply within the %g s %s deadline; worker killed",
                  w->loaded ? w->opts.call_timeout_s : w->opts.compile_timeout_s,
                  w->loaded ? "call (call_timeout_s)" : "compile (compile_timeout_s)");
    } else if (known) {
        classify_status(w, status, we_killed, &res);
    } else {
        failf(&res, SPADE_OUT_INTERNAL, 0, 0, "worker closed its socket; its exit status is unknown");
    }
    /* Name the environment in every message. */
    if (w->loaded && w->info.name[0]) spade_failure_prefix(&res, w->info.name);
    w->failed = 1;
    w->fail = res;
    w->pending = 0;
    if (f) *f = res;
    return -1;
}

static int worker_kill_with(spade_worker *w, spade_outcome o, const char *msg, spade_failure *f) {
    spade_failure g;
    failf(&g, o, 0, 0, "%s", msg);
    return worker_end(w, END_KILL, &g, f);
}

static int io_failure(spade_worker *w, spade_ipc_io io, const char *msg, spade_failure *f) {
    switch (io) {
    case SPADE_IO_TIMEOUT: return worker_end(w, END_DEADLINE, NULL, f);
    case SPADE_IO_CLOSED: return worker_end(w, END_CLOSED, NULL, f);
    case SPADE_IO_PROTOCOL: return worker_kill_with(w, SPADE_OUT_PROTOCOL, msg, f);
    default: return worker_kill_with(w, SPADE_OUT_INTERNAL, msg, f);
    }
}

/* The first check of every call: a dead worker answers with its failure. */
static int usable(spade_worker *w, spade_failure *f) {
    spade_failure_clear(f);
    if (!w) return spade_bad_call(f, "worker handle is NULL");
    if (w->failed) {
        if (f) *f = w->fail;
        return -1;
    }
    return 0;
}

/* Common entry checks: usable, and a batch in flight must be received first. */
static int enter(spade_worker *w, spade_failure *f, int need_loaded) {
    if (usable(w, f) < 0) return -1;
    if (w->pending)
        return spade_bad_call(f, "a batch is in flight: receive its results first (spade_worker_step_recv)");
    if (need_loaded && !w->loaded) return spade_bad_call(f, "no environment is loaded in this worker");
    return 0;
}

/* Sleeps until the worker's socket is readable or the deadline passes. A
 * reply is almost never there the moment it is asked for (the worker has to
 * wake up and run first), so waiting first saves the receive that would only
 * have said EAGAIN: two system calls per round trip instead of three. Only an
 * optimization: whatever happens here, spade_ipc_recv reads, waits and times
 * out as it always does. */
static void wait_readable(int fd, double deadline) {
    double left = deadline - spade_ipc_now();
    if (left <= 0) return;
    struct pollfd p = {fd, POLLIN, 0};
    (void)poll(&p, 1, left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1);
}

/* Receives one reply of type want. A FAIL frame becomes the failure and ends
 * the worker, when it is one the request can honestly get. */
static int receive(spade_worker *w, double deadline, uint32_t want, size_t want_max, const unsigned char **payload,
                   size_t *len, spade_failure *f) {
    char err[512];
    uint32_t type = 0;
    /* No honest reply is longer than what was asked for allows (a failure
     * message is at most a few KiB). */
    size_t cap = want_max > 16384 ? want_max : 16384;
    if (cap > w->opts.max_frame) cap = w->opts.max_frame;
    wait_readable(w->sock, deadline);
    spade_ipc_io io = spade_ipc_recv(w->sock, &w->in, cap, deadline, &type, len, err, sizeof err);
    w->busy_s += spade_ipc_now() - w->sent_at;
    if (io != SPADE_IO_OK) return io_failure(w, io, err, f);
    *payload = w->in.p + SPADE_IPC_HDR;
    if (type == SPADE_MSG_FAIL) {
        spade_failure g;
        if (spade_ipc_decode_fail(*payload, *len, &g, err, sizeof err) < 0)
            return worker_kill_with(w, SPADE_OUT_PROTOCOL, err, f);
        /* What an honest worker may fail with depends on the request: compile,
         * link and invalid answer only a LOAD, and bad_call nothing (every
         * request is checked here before it is sent). Anything else is the
         * environment's code writing on the socket to pass off a failure as
         * another, or as the caller's. */
        int fits = g.outcome == SPADE_OUT_OOM ||
                   (want == SPADE_MSG_LOADED && g.outcome != SPADE_OUT_BAD_CALL && g.outcome != SPADE_OUT_OUTPUT);
        if (!fits) {
            snprintf(err, sizeof err, "failure '%s' in reply to a request it cannot answer",
                     spade_outcome_name(g.outcome));
            return worker_kill_with(w, SPADE_OUT_PROTOCOL, err, f);
        }
        return worker_end(w, END_KILL, &g, f);
    }
    if (type != want) {
        snprintf(err, sizeof err, "reply of type 0x%x where 0x%x was expected", type, want);
        return worker_kill_with(w, SPADE_OUT_PROTOCOL, err, f);
    }
    return 0;
}

/* RLIMIT_CPU counts a process's whole life, but a worker may serve a long
 * run: its soft limit is raised from here (prlimit; the hard limit is
 * unlimited, and the worker itself cannot call setrlimit) so that it stays
 * cpu_limit_s above the CPU the worker can have used, plus the next call's
 * deadline. What it can have used is at most the wall time its calls took (one
 * thread, idle between calls). So one prlimit per cpu_limit_s / 2 seconds of
 * calls keeps the limit a backstop to the deadlines, for a stopped or
 * starved parent. */
static void cpu_refresh(spade_worker *w) {
    if (!w->sb || w->pid <= 0) return;
    double need = w->busy_s + w->opts.call_timeout_s;
    if (need < w->cpu_granted_s - w->opts.cpu_limit_s / 2.0) return;
    struct rlimit r = {(rlim_t)(need + w->opts.cpu_limit_s) + 1, RLIM_INFINITY};
    if (prlimit(w->pid, RLIMIT_CPU, &r, NULL) == 0) w->cpu_granted_s = (double)r.rlim_cur;
}

/* Sends w->out. now: the clock read the caller took its deadline from (one
 * read per request, not two). */
static int transmit_at(spade_worker *w, double now, double deadline, spade_failure *f) {
    char err[256];
    cpu_refresh(w);
    w->sent_at = now;
    spade_ipc_io io = spade_ipc_send(w->sock, w->out.p, w->out.len, deadline, err, sizeof err);
    if (io == SPADE_IO_CLOSED) {
        /* A worker that cannot take the request (no memory for a 1 MiB
         * action) reports out_of_memory and exits while we are still writing:
         * its report is waiting on our side of the socket; read it before
         * calling this a death without a reply. */
        const unsigned char *payload;
        size_t len;
        double until = spade_ipc_now() + 0.2;
        /* Always -1: a FAIL frame ends the worker inside receive, and any
         * other reply or none ends it too. */
        (void)receive(w, until < deadline ? until : deadline, SPADE_MSG_FAIL, 0, &payload, &len, f);
        return -1;
    }
    return io == SPADE_IO_OK ? 0 : io_failure(w, io, err, f);
}

static int transmit(spade_worker *w, double deadline, spade_failure *f) {
    return transmit_at(w, spade_ipc_now(), deadline, f);
}

static spade_worker *worker_alloc(spade_sandbox *sb, const spade_sandbox_opts *opts) {
    spade_worker *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->sb = sb;
    spade_sandbox_opts_fill(&w->opts, opts);
    w->sock = w->pidfd = -1;
    return w;
}

static void worker_release(spade_worker *w) {
    spade_sandbox *sb = w->sb;
    spade_ipc_buf_free(&w->out);
    spade_ipc_buf_free(&w->in);
    free(w);
    if (sb) sandbox_unref(sb);
}

/* ---- the worker handle --------------------------------------------------------------- */
static int load_begin(spade_sandbox *sb, const char *filename, const char *source, size_t len, uint64_t poison,
                      spade_worker **out, spade_failure *f) {
    spade_failure_clear(f);
    if (out) *out = NULL;
    if (!sb || !out || (!source && len)) return spade_bad_call(f, "spade_worker_load: NULL sandbox, source or out");
    const char *name = filename && *filename ? filename : "env.c";
    size_t nlen = strnlen(name, sizeof((spade_worker *)0)->name - 1);
    if (len > sb->opts.max_frame - 16 - nlen)
        return spade_bad_call(f, "%s: source of %zu bytes exceeds the frame cap (%zu)", name, len, sb->opts.max_frame);
    if (sb->owner != getpid())
        return spade_bad_call(
            f, "%s: the sandbox belongs to process %d (create it after fork, in the process that uses it)", name,
            (int)sb->owner);
    double deadline = spade_ipc_now() + sb->opts.compile_timeout_s;
    spade_worker *w = worker_alloc(sb, &sb->opts);
    if (!w) {
        failf(f, SPADE_OUT_INTERNAL, 0, 0, "%s: out of memory", name);
        return -1;
    }
    memcpy(w->name, name, nlen);
    w->name[nlen] = '\0';
    pthread_mutex_lock(&sb->mu);
    int usable = !sb->freed;
    if (usable) sb->refs++;
    pthread_mutex_unlock(&sb->mu);
    if (!usable) {
        w->sb = NULL;
        worker_release(w);
        return spade_bad_call(f, "%s: the sandbox was freed", name);
    }
    char err[256];
    if (spade_zygote_spawn(sb, deadline, &w->pid, &w->sock, &w->pidfd, err, sizeof err) < 0) {
        failf(f, SPADE_OUT_INTERNAL, 0, 0, "%s: %s", name, err);
        w->reaped = 1;
        worker_release(w);
        return -1;
    }
    fcntl(w->sock, F_SETFL, fcntl(w->sock, F_GETFL) | O_NONBLOCK);
    w->cpu_granted_s = w->opts.cpu_limit_s; /* what the worker set itself */

    uint32_t head[4] = {(uint32_t)nlen, (uint32_t)len, (uint32_t)poison, (uint32_t)(poison >> 32)};
    if (spade_ipc_begin(&w->out, SPADE_MSG_LOAD) < 0 || spade_ipc_put(&w->out, head, sizeof head) < 0 ||
        spade_ipc_put(&w->out, name, nlen) < 0 || spade_ipc_put(&w->out, source, len) < 0) {
        worker_kill_with(w, SPADE_OUT_INTERNAL, "out of memory building the load request", f);
    } else {
        spade_ipc_end(&w->out);
        if (transmit(w, deadline, f) == 0) {
            w->pending_deadline = deadline;
            *out = w;
            return 0;
        }
    }
    if (f && strncmp(f->message, name, nlen) != 0) spade_failure_prefix(f, name);
    spade_worker_free(w);
    return -1;
}

int spade_worker_load_finish(spade_worker *w, spade_failure *f) {
    spade_failure_clear(f);
    const unsigned char *payload;
    size_t plen;
    char err[256];
    if (receive(w, w->pending_deadline, SPADE_MSG_LOADED, sizeof(spade_env_info), &payload, &plen, f) == 0) {
        if (spade_ipc_decode_info(payload, plen, &w->info, err, sizeof err) == 0) {
            w->loaded = 1;
            return 0;
        }
        worker_kill_with(w, SPADE_OUT_PROTOCOL, err, f);
    } else if (!w->failed) {
        /* bad_call from a worker asked to load: not what an honest one says. */
        worker_kill_with(w, SPADE_OUT_PROTOCOL, "worker refused the load request", f);
    }
    /* Prefix the file name on failures the worker did not word itself. */
    if (f && f->outcome != SPADE_OUT_COMPILE && f->outcome != SPADE_OUT_LINK &&
        strncmp(f->message, w->name, strlen(w->name)) != 0)
        spade_failure_prefix(f, w->name);
    spade_worker_free(w);
    return -1;
}

int spade_worker_load_begin(spade_sandbox *sb, const char *filename, const char *source, size_t len, spade_worker **out,
                            spade_failure *f) {
    return load_begin(sb, filename, source, len, 0, out, f);
}

int spade_worker_load_begin_poisoned(spade_sandbox *sb, const char *filename, const char *source, size_t len,
                                     uint64_t poison, spade_worker **out, spade_failure *f) {
    return load_begin(sb, filename, source, len, poison, out, f);
}

int spade_worker_load_poisoned(spade_sandbox *sb, const char *filename, const char *source, size_t len, uint64_t poison,
                               spade_worker **out, spade_failure *f) {
    if (load_begin(sb, filename, source, len, poison, out, f) < 0) return -1;
    return spade_worker_load_finish(*out, f);
}

int spade_worker_load(spade_sandbox *sb, const char *filename, const char *source, size_t len, spade_worker **out,
                      spade_failure *f) {
    if (spade_worker_load_begin(sb, filename, source, len, out, f) < 0) return -1;
    if (spade_worker_load_finish(*out, f) < 0) {
        *out = NULL;
        return -1;
    }
    return 0;
}

const spade_env_info *spade_worker_info(const spade_worker *w) { return w && w->loaded ? &w->info : NULL; }

int spade_worker_pid(const spade_worker *w) { return w ? w->pid : -1; }

int spade_worker_alive(const spade_worker *w) { return w && !w->failed && !w->reaped; }

void spade_worker_free(spade_worker *w) {
    if (!w) return;
    int status, killed;
    if (!w->reaped) worker_finish(w, 0, &status, &killed);
    worker_release(w);
}

int spade_worker_adopt(int sock, pid_t pid, const spade_sandbox_opts *opts, const spade_env_info *info,
                       spade_worker **out) {
    spade_worker *w = worker_alloc(NULL, opts);
    if (!w) return -1;
    w->sock = sock;
    w->pid = pid;
    fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
    if (info) {
        w->info = *info;
        w->loaded = 1;
    }
    *out = w;
    return 0;
}

int spade_worker_add_instances(spade_worker *w, int n, const double *param_values, int *first_id, spade_failure *f) {
    if (enter(w, f, 1) < 0) return -1;
    if (n <= 0 || n > (1 << 20) || !first_id)
        return spade_bad_call(f, "add_instances: n = %d (1 .. 1048576) or first_id NULL", n);
    int np = param_values ? w->info.n_params : 0;
    for (int i = 0; i < np; i++) {
        const spade_param_info *p = &w->info.params[i];
        double v = param_values[i];
        if (!isfinite(v) || v < p->min || v > p->max || (p->type == SPADE_PARAM_INT && v != floor(v)))
            return spade_bad_call(f, "add_instances: param %s = %g outside [%g, %g]%s", p->name, v, p->min, p->max,
                                  p->type == SPADE_PARAM_INT ? " or not an integer" : "");
    }
    int32_t head[2] = {n, np};
    if (spade_ipc_begin(&w->out, SPADE_MSG_ADD) < 0 || spade_ipc_put(&w->out, head, sizeof head) < 0 ||
        spade_ipc_put(&w->out, param_values, (size_t)np * sizeof(double)) < 0)
        return worker_kill_with(w, SPADE_OUT_INTERNAL, "out of memory building a request", f);
    spade_ipc_end(&w->out);
    double deadline = spade_ipc_now() + w->opts.call_timeout_s;
    const unsigned char *payload;
    size_t len;
    char err[256];
    if (transmit(w, deadline, f) < 0 || receive(w, deadline, SPADE_MSG_ADDED, 4, &payload, &len, f) < 0) return -1;
    if (spade_ipc_decode_added(payload, len, n, first_id, err, sizeof err) < 0)
        return worker_kill_with(w, SPADE_OUT_PROTOCOL, err, f);
    return 0;
}

/* ---- batches ----------------------------------------------------------------------------- */
/* Validates and encodes in one pass: each record is written at its place
 * (header, count, n records), each action appended after the records as it is
 * measured, so a NUL-terminated action (lens NULL) is measured once. A bad item stops the
 * pass with bad_call before anything is sent (the half-built frame is simply
 * rebuilt by the next call). */
static int batch_send(spade_worker *w, int n, const int *ids, const uint32_t *ops, uint32_t op_all,
                      const uint64_t *seeds, const char *const *actions, const size_t *lens, spade_failure *f) {
    if (enter(w, f, 1) < 0) return -1;
    if (n <= 0 || n > (1 << 20) || !ids)
        return spade_bad_call(f, "batch of %d instances (1 .. 1048576) or ids NULL", n);
    spade_ipc_buf *b = &w->out;
    size_t recs = SPADE_IPC_HDR + 4 + (size_t)n * sizeof(spade_wire_item);
    if (spade_ipc_begin(b, SPADE_MSG_BATCH) < 0 || spade_ipc_buf_reserve(b, recs) < 0)
        return worker_kill_with(w, SPADE_OUT_INTERNAL, "out of memory building a batch", f);
    uint32_t un = (uint32_t)n;
    memcpy(b->p + SPADE_IPC_HDR, &un, sizeof un);
    /* Locals, not b's fields: stores through char pointers would make the
     * compiler reload those after every byte. */
    unsigned char *base = b->p;
    size_t len = recs, cap = b->cap;
    for (int i = 0; i < n; i++) {
        uint32_t op = ops ? ops[i] : op_all;
        spade_wire_item it = {.id = ids[i], .op = op};
        if (op == SPADE_OP_RESET || op == SPADE_OP_POISON) {
            if (!seeds) return spade_bad_call(f, "reset without seeds");
            it.seed = seeds[i];
        } else if (op == SPADE_OP_STEP) {
            const char *a = actions ? actions[i] : NULL;
            size_t l = lens ? lens[i] : a ? strlen(a) : 0;
            if (l > SPADE_ACTION_MAX) return spade_bad_call(f, "action %d of %zu bytes exceeds SPADE_ACTION_MAX", i, l);
            if (l && !a) return spade_bad_call(f, "action %d is NULL", i);
            if (l + 1 > UINT32_MAX - len)
                return spade_bad_call(f, "batch of more than %u bytes is too large for one frame", UINT32_MAX);
            if (cap - len < l + 1) {
                b->len = len;
                if (spade_ipc_buf_reserve(b, len + l + 1) < 0)
                    return worker_kill_with(w, SPADE_OUT_INTERNAL, "out of memory building a batch", f);
                base = b->p;
                cap = b->cap;
            }
            unsigned char *d = base + len;
            if (l <= 16) /* most actions: a call of memcpy would cost more than the bytes */
                for (size_t k = 0; k < l; k++) d[k] = (unsigned char)a[k];
            else
                memcpy(d, a, l);
            d[l] = '\0';
            len += l + 1;
            it.action_len = (uint32_t)l;
        } else if (op != SPADE_OP_HINT && op != SPADE_OP_SOLVE) {
            return spade_bad_call(f, "unknown batch operation %u", op);
        }
        memcpy(base + SPADE_IPC_HDR + 4 + (size_t)i * sizeof it, &it, sizeof it);
    }
    b->len = len;
    spade_ipc_end(b);
    double now = spade_ipc_now(), deadline = now + w->opts.call_timeout_s;
    if (transmit_at(w, now, deadline, f) < 0) return -1;
    w->pending = 1;
    w->pending_n = (uint32_t)n;
    w->pending_deadline = deadline;
    return 0;
}

int spade_worker_batch_send(spade_worker *w, int n, const int *ids, const uint32_t *ops, const uint64_t *seeds,
                            const char *const *actions, const size_t *lens, spade_failure *f) {
    if (!ops) return spade_bad_call(f, "batch without operations");
    return batch_send(w, n, ids, ops, 0, seeds, actions, lens, f);
}

int spade_worker_batch_recv(spade_worker *w, spade_step_result *results, spade_failure *f) {
    if (usable(w, f) < 0) return -1;
    if (!w->pending) return spade_bad_call(f, "no batch in flight");
    if (!results) return spade_bad_call(f, "results array is NULL");
    w->pending = 0;
    const unsigned char *payload;
    size_t len;
    if (receive(w, w->pending_deadline, SPADE_MSG_RESULTS,
                4 + (size_t)w->pending_n * (sizeof(spade_wire_result) + SPADE_OBS_MAX + 1), &payload, &len, f) < 0)
        return -1;
    char err[256];
    int first_bad, bad_status;
    if (spade_ipc_decode_results(payload, len, w->pending_n, results, &first_bad, &bad_status, err, sizeof err) < 0)
        return worker_kill_with(w, SPADE_OUT_PROTOCOL, err, f);
    if (first_bad >= 0 && bad_status == SPADE_HOST_OUTPUT_TOO_LARGE) {
        snprintf(err, sizeof err, "item %d said more than SPADE_OBS_MAX (%d) bytes", first_bad, SPADE_OBS_MAX);
        return worker_kill_with(w, SPADE_OUT_OUTPUT, err, f);
    }
    if (first_bad >= 0 && bad_status == SPADE_HOST_BAD_REWARD) {
        snprintf(err, sizeof err,
                 "item %d: the step called reward() with NaN, an infinity or a value beyond +-%g, or its rewards "
                 "summed past that (a step's reward must be a finite number within +-SPADE_REWARD_MAX)",
                 first_bad, SPADE_REWARD_MAX);
        return worker_kill_with(w, SPADE_OUT_INVALID, err, f);
    }
    if (first_bad >= 0)
        return spade_bad_call(f, "item %d: unknown instance, step before reset, or step after the episode ended",
                              first_bad);
    return 0;
}

int spade_worker_reset(spade_worker *w, int n, const int *ids, const uint64_t *seeds, spade_step_result *results,
                       spade_failure *f) {
    if (batch_send(w, n, ids, NULL, SPADE_OP_RESET, seeds, NULL, NULL, f) < 0) return -1;
    return spade_worker_batch_recv(w, results, f);
}

int spade_worker_step(spade_worker *w, int n, const int *ids, const char *const *actions, const size_t *lens,
                      spade_step_result *results, spade_failure *f) {
    if (batch_send(w, n, ids, NULL, SPADE_OP_STEP, NULL, actions, lens, f) < 0) return -1;
    return spade_worker_batch_recv(w, results, f);
}

int spade_worker_step_send(spade_worker *w, int n, const int *ids, const char *const *actions, const size_t *lens,
                           spade_failure *f) {
    return batch_send(w, n, ids, NULL, SPADE_OP_STEP, NULL, actions, lens, f);
}

int spade_worker_step_recv(spade_worker *w, spade_step_result *results, spade_failure *f) {
    return spade_worker_batch_recv(w, results, f);
}

static int text_call(spade_worker *w, uint32_t type, int id, const char **text, size_t *tlen, spade_failure *f) {
    if (enter(w, f, 1) < 0) return -1;
    if (!text || !tlen) return spade_bad_call(f, "text or len is NULL");
    int32_t id32 = id;
    if (spade_ipc_begin(&w->out, type) < 0 || spade_ipc_put(&w->out, &id32, sizeof id32) < 0)
        return worker_kill_with(w, SPADE_OUT_INTERNAL, "out of memory building a request", f);
    spade_ipc_end(&w->out);
    double deadline = spade_ipc_now() + w->opts.call_timeout_s;
    const unsigned char *payload;
    size_t len;
    if (transmit(w, deadline, f) < 0 ||
        receive(w, deadline, SPADE_MSG_TEXT, 8 + SPADE_OBS_MAX + 1, &payload, &len, f) < 0)
        return -1;
    char err[256];
    int status;
    if (spade_ipc_decode_text(payload, len, &status, text, tlen, err, sizeof err) < 0)
        return worker_kill_with(w, SPADE_OUT_PROTOCOL, err, f);
    if (status == SPADE_HOST_OUTPUT_TOO_LARGE)
        return worker_kill_with(w, SPADE_OUT_OUTPUT,
                                type == SPADE_MSG_HINT ? "the hint exceeds SPADE_OBS_MAX bytes"
                                                       : "the solve action exceeds SPADE_OBS_MAX bytes",
                                f);
    if (status == SPADE_HOST_BAD_CALL)
        return spade_bad_call(f, "%s of instance %d: unknown instance, no episode started%s",
                              type == SPADE_MSG_HINT ? "hint" : "solve", id,
                              type == SPADE_MSG_SOLVE ? ", or the environment has no SOLVE" : "");
    return 0;
}

int spade_worker_hint(spade_worker *w, int id, const char **text, size_t *len, spade_failure *f) {
    return text_call(w, SPADE_MSG_HINT, id, text, len, f);
}

int spade_worker_solve(spade_worker *w, int id, const char **text, size_t *len, spade_failure *f) {
    return text_call(w, SPADE_MSG_SOLVE, id, text, len, f);
}
