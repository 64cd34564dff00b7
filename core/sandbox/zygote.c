/* zygote.c — the process every sandbox worker is forked from.
 *
 * What it is: spade_zygote_start starts the zygote early, while the trainer is
 * still small; from then on workers fork from the zygote, so a spawn costs the
 * same whatever the trainer has allocated since (and no worker inherits a CUDA
 * context). The zygote keeps one worker pre-forked and already locked down, so
 * a spawn is one round trip on the control socket: the parent gets the
 * worker's pid, its socket and (where the kernel has pidfd_open) a pidfd,
 * passed with SCM_RIGHTS. Workers are the zygote's children: it reaps them
 * when the parent asks (REAP, which also reports the wait status that
 * classifies a death) and kills them all when the parent's socket closes or the
 * parent dies (PR_SET_PDEATHSIG).
 *
 * The zygote is not a fork of the parent but a fresh exec of the same binary
 * (/proc/self/exe) with an argv of our own and an environment of a few named
 * loader and sanitizer variables (zygote_env_allow): a fork would carry the
 * parent's whole memory into every worker, where environment code can read
 * it: the environment strings and argv on the stack (API keys, tokens), and
 * whatever the trainer holds on its heap. Wiping argv/envp/auxv before the
 * environment runs would still leave the heap and every copy glibc or the
 * trainer made (setenv, getenv'd configs, a parsed key file), so the zygote
 * starts from an empty image instead. The new image runs spade_zygote_entry, a
 * constructor that recognises the zygote's argv before main, reads the
 * options from the control socket (fd 3) and never returns. So any program
 * that links the sandbox works unchanged; one that loads libspade with dlopen
 * (its /proc/self/exe is the interpreter) cannot start a zygote, and
 * spade_sandbox_new says so.
 * What it is not: a place where untrusted code or source ever goes. The
 * zygote reads nothing but fixed-size requests from the parent. Also the
 * parent's side of those requests is here (spade_zygote_spawn / _reap).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errbuf.h"
#include "sandbox/internal.h"
#ifdef SPADE_SHARED_LIB
#include <dlfcn.h>
#endif

#include "paths.h" /* generated: where the build and the installed helper are */

/* What the zygote is: the small `spade-zygote` program (core/sandbox/
 * zygote_helper.c: the sandbox, the JIT and the host, without the policy, BLAS
 * or CUDA, whose libraries' start-up costs ~50 ms), from the build directory
 * when the running program is the uninstalled build, else from
 * $(pkglibexecdir). If it is missing, the static library (the spade program,
 * the tests) executes itself instead, /proc/self/exe, whose constructor below
 * serves as the zygote. libspade.so has no JIT (Debian's libtcc is a static
 * archive that cannot go into a shared object), so its fallback is the
 * installed spade program. */
#define ZYGOTE_HELPER_BUILD SPADE_PATHS_BUILDDIR "/spade-zygote"
#define ZYGOTE_HELPER_INSTALLED SPADE_PATHS_LIBEXECDIR "/spade-zygote"
#ifdef SPADE_SHARED_LIB
#define ZYGOTE_FALLBACK SPADE_PATHS_BINDIR "/spade"
/* The zygote's own side is then the helper's copy, not this one. */
#pragma GCC diagnostic ignored "-Wunused-function"
#else
#define ZYGOTE_FALLBACK "/proc/self/exe"
#endif
#define ZYGOTE_EXE ZYGOTE_HELPER_INSTALLED ", or " ZYGOTE_FALLBACK

enum { Z_SPAWN = 1, Z_REAP = 2, Z_PING = 3 };

/* The zygote's argv[1]: versioned, so that an old binary on disk never takes a
 * newer parent's options for its own. */
#define ZYGOTE_ARG "--spade-zygote-v1"
#define ZYGOTE_FD 3

typedef struct zreq {
    uint32_t op;
    uint32_t seq;
    int32_t pid;
    int32_t grace_ms;
} zreq;

typedef struct zrep {
    uint32_t op;
    uint32_t seq;
    int32_t pid;
    int32_t status; /* REAP: the wait status */
    int32_t err; /* errno of a failure, else 0 */
    int32_t killed; /* REAP: the zygote had to kill it */
    int32_t nfds; /* SPAWN: fds passed (socket, then pidfd when there is one) */
} zrep;

/* ---- inside the zygote ----------------------------------------------------------- */
typedef struct zygote {
    int ctl;
    spade_sandbox_opts opts;
    uint64_t vm_base;
    struct sock_fprog filter;
    pid_t *kids;
    size_t nkids, capkids;
    pid_t idle_pid; /* the pre-forked worker, 0 when none */
    int idle_sock, idle_pidfd;
} zygote;

static int pidfd_open_(pid_t pid) {
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

static void kid_add(zygote *z, pid_t pid) {
    if (z->nkids == z->capkids) {
        size_t cap = z->capkids ? z->capkids * 2 : 64;
        pid_t *k = realloc(z->kids, cap * sizeof *k);
        if (!k) return; /* still reaped when the zygote exits (it kills its whole list, then waits for all) */
        z->kids = k;
        z->capkids = cap;
    }
    z->kids[z->nkids++] = pid;
}

static int kid_remove(zygote *z, pid_t pid) {
    for (size_t i = 0; i < z->nkids; i++)
        if (z->kids[i] == pid) {
            z->kids[i] = z->kids[--z->nkids];
            return 0;
        }
    return -1;
}

uint64_t spade_sandbox_vm_size(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void fork_idle(zygote *z) {
    if (z->idle_pid > 0) return;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return;
    /* Bigger buffers: a batch of 256 observations goes in one write. The kernel
     * caps these at net.core.[rw]mem_max; that is fine. */
    int sz = 1 << 20;
    for (int i = 0; i < 2; i++) {
        setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
        setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return;
    }
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        prctl(PR_SET_NAME, "spade-worker", 0, 0, 0);
        spade_worker_process(sv[1], &z->opts, z->vm_base, &z->filter);
    }
    close(sv[1]);
    kid_add(z, pid);
    z->idle_pid = pid;
    z->idle_sock = sv[0];
    z->idle_pidfd = pidfd_open_(pid);
}

static void reply(zygote *z, const zrep *r, const int *fds, int nfds) {
    struct iovec iov = {(void *)r, sizeof *r};
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (nfds > 0) {
        memset(&u, 0, sizeof u);
        m.msg_control = u.buf;
        m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
    }
    while (sendmsg(z->ctl, &m, MSG_NOSIGNAL) < 0 && errno == EINTR)
        ;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void do_reap(zygote *z, const zreq *q) {
    zrep r = {.op = Z_REAP, .seq = q->seq, .pid = q->pid};
    pid_t pid = q->pid;
    int found = 0;
    for (size_t i = 0; i < z->nkids; i++) found |= z->kids[i] == pid;
    if (pid <= 0 || !found || pid == z->idle_pid) {
        r.err = ESRCH;
        reply(z, &r, NULL, 0);
        return;
    }
    int st = 0;
    pid_t w = waitpid(pid, &st, WNOHANG);
    for (int waited = 0; w == 0 && waited < q->grace_ms; waited++) {
        sleep_ms(1);
        w = waitpid(pid, &st, WNOHANG);
    }
    if (w == 0) {
        kill(pid, SIGKILL);
        r.killed = 1;
        while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
            ;
    }
    if (w < 0) r.err = errno;
    r.status = st;
    kid_remove(z, pid);
    reply(z, &r, NULL, 0);
}

/* Drops the idle worker (it failed to get ready): killed and reaped. */
static void drop_idle(zygote *z) {
    kill(z->idle_pid, SIGKILL);
    while (waitpid(z->idle_pid, NULL, 0) < 0 && errno == EINTR)
        ;
    kid_remove(z, z->idle_pid);
    close(z->idle_sock);
    if (z->idle_pidfd >= 0) close(z->idle_pidfd);
    z->idle_pid = 0;
    z->idle_sock = z->idle_pidfd = -1;
}

/* Waits for the idle worker's "locked down" byte. */
static int idle_ready(zygote *z) {
    struct pollfd p = {z->idle_sock, POLLIN, 0};
    int r;
    while ((r = poll(&p, 1, 5000)) < 0 && errno == EINTR)
        ;
    char c = 0;
    if (r != 1 || read(z->idle_sock, &c, 1) != 1 || c != 'R') return -1;
    return 0;
}

static void do_spawn(zygote *z, const zreq *q) {
    zrep r = {.op = Z_SPAWN, .seq = q->seq};
    for (int attempt = 0; attempt < 2; attempt++) {
        fork_idle(z);
        if (z->idle_pid <= 0 || idle_ready(z) == 0) break;
        drop_idle(z);
        errno = ECHILD;
    }
    if (z->idle_pid <= 0) {
        r.err = errno ? errno : EAGAIN;
        reply(z, &r, NULL, 0);
        return;
    }
    int fds[2] = {z->idle_sock, z->idle_pidfd};
    r.pid = z->idle_pid;
    r.nfds = z->idle_pidfd >= 0 ? 2 : 1;
    reply(z, &r, fds, r.nfds);
    close(z->idle_sock);
    if (z->idle_pidfd >= 0) close(z->idle_pidfd);
    z->idle_pid = 0;
    z->idle_sock = z->idle_pidfd = -1;
    fork_idle(z); /* the next spawn finds one ready */
}

static void zygote_exit(zygote *z) __attribute__((noreturn));
static void zygote_exit(zygote *z) {
    for (size_t i = 0; i < z->nkids; i++) kill(z->kids[i], SIGKILL);
    /* Everything we forked, including any the list lost. */
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
        ;
    _exit(0);
}

static void zygote_main(int ctl, const spade_sandbox_opts *opts, pid_t parent) __attribute__((noreturn));
static void zygote_main(int ctl, const spade_sandbox_opts *opts, pid_t parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent) _exit(0);
    prctl(PR_SET_NAME, "spade-zygote", 0, 0, 0);
    /* Out of the parent's process group: a Ctrl-C at the terminal is the
     * parent's to handle; we go when its socket closes. */
    setpgid(0, 0);
    /* Whatever the parent installed or blocked is not ours (a worker must die
     * of SIGSEGV and SIGXCPU, not run the trainer's handler). */
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);

    /* Only the control socket and stderr (for nothing but a last-resort
     * message); stdin/stdout become /dev/null. */
    if (ctl != 3) {
        if (dup2(ctl, 3) < 0) _exit(1);
        ctl = 3;
    }
    int nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nullfd >= 0) {
        dup2(nullfd, 0);
        dup2(nullfd, 1);
    }
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 4u, ~0u, 0u) < 0)
#endif
        for (int fd = 4; fd < 65536; fd++) close(fd);
    fcntl(ctl, F_SETFD, FD_CLOEXEC);

    zygote z = {0};
    z.ctl = ctl;
    z.opts = *opts;
    z.vm_base = spade_sandbox_vm_size();
    z.idle_sock = z.idle_pidfd = -1;
    char err[256];
    if (spade_worker_filter(&z.filter, err, sizeof err) < 0) {
        fprintf(stderr, "spade zygote: %s\n", err);
        _exit(1);
    }
    fork_idle(&z);
    for (;;) {
        zreq q;
        ssize_t n = recv(ctl, &q, sizeof q, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) zygote_exit(&z); /* the parent closed its end or died */
        if ((size_t)n != sizeof q) continue;
        switch (q.op) {
        case Z_SPAWN:
            errno = 0;
            do_spawn(&z, &q);
            break;
        case Z_REAP: do_reap(&z, &q); break;
        case Z_PING: {
            zrep r = {.op = Z_PING, .seq = q.seq, .pid = getpid()};
            reply(&z, &r, NULL, 0);
            break;
        }
        default: break;
        }
    }
}

/* ---- the exec'd zygote's entry ------------------------------------------------- */
/* Runs before main in every program that links the sandbox; a no-op unless the
 * process is a zygote that spade_zygote_start exec'd (argv exactly
 * {"spade-zygote", ZYGOTE_ARG, parent pid}). glibc passes argc, argv and envp
 * to ELF constructors. */
int spade_zygote_exec_entry(int argc, char **argv) {
    if (argc != 3 || !argv || !argv[1] || strcmp(argv[1], ZYGOTE_ARG) != 0) return -1;
    char *end = NULL;
    long parent = strtol(argv[2], &end, 10);
    if (!end || *end || parent <= 1) _exit(1);
    spade_sandbox_opts opts;
    ssize_t n;
    while ((n = recv(ZYGOTE_FD, &opts, sizeof opts, 0)) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)sizeof opts) _exit(1);
    zygote_main(ZYGOTE_FD, &opts, (pid_t)parent);
}

#ifndef SPADE_SHARED_LIB
__attribute__((constructor)) static void spade_zygote_entry(int argc, char **argv, char **envp) {
    (void)envp;
    (void)spade_zygote_exec_entry(argc, argv);
}
#endif

/* ---- the parent's side ----------------------------------------------------------- */
/* The only variables the zygote (and so every worker) gets: what the dynamic
 * loader needs to start the same binary the parent is (a trainer started with
 * LD_LIBRARY_PATH for its CUDA libraries), what a sanitizer build reads at
 * start-up, and the sandbox's own switches (worker.c). Paths and options, not
 * credentials; everything else the parent was started with stays with it. */
static const char *const zygote_env_allow[] = {
    "LD_LIBRARY_PATH", "LD_PRELOAD",           "ASAN_OPTIONS",        "UBSAN_OPTIONS",
    "LSAN_OPTIONS",    "SPADE_SANDBOX_USERNS", "SPADE_SANDBOX_NETNS",
};
#define ZYGOTE_ENV_N (sizeof zygote_env_allow / sizeof zygote_env_allow[0])

/* In the forked child, before exec: async-signal-safe calls only (the parent
 * may have threads). Never returns. */
static void exec_zygote(int sock, pid_t parent, const char *helper, const char *fallback, char *const envp[])
    __attribute__((noreturn));
static void exec_zygote(int sock, pid_t parent, const char *helper, const char *fallback, char *const envp[]) {
    if (sock != ZYGOTE_FD) {
        if (dup2(sock, ZYGOTE_FD) < 0) _exit(127);
        close(sock);
    }
    fcntl(ZYGOTE_FD, F_SETFD, 0); /* kept across exec, unlike every other fd */
#ifdef SYS_close_range
    syscall(SYS_close_range, (unsigned)ZYGOTE_FD + 1, ~0u, 2u /* CLOSE_RANGE_CLOEXEC */);
#endif
    /* Set again by the zygote; here so that the parent's death between fork
     * and the constructor is covered too (kept across a non-setuid exec). */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    char pid[24];
    int i = (int)sizeof pid - 1;
    pid[i] = '\0';
    unsigned long v = (unsigned long)parent;
    do {
        pid[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v && i > 0);
    char *const argv[] = {"spade-zygote", ZYGOTE_ARG, pid + i, NULL};
    execve(helper, argv, envp);
    execve(fallback, argv, envp);
    /* after a staged tree's two (see spade_zygote_start), the configured ones; else the same two again */
    execve(ZYGOTE_HELPER_INSTALLED, argv, envp);
    execve(ZYGOTE_FALLBACK, argv, envp);
    static const char msg[] = "spade: cannot start the sandbox zygote: exec of ";
    static const char tail[] = " failed\n";
    if (write(2, msg, sizeof msg - 1) < 0 || write(2, helper, strlen(helper)) < 0 || write(2, ", ", 2) < 0 ||
        write(2, fallback, strlen(fallback)) < 0 || write(2, ", " ZYGOTE_EXE, sizeof(", " ZYGOTE_EXE) - 1) < 0 ||
        write(2, tail, sizeof tail - 1) < 0) {}
    _exit(127);
}

int spade_zygote_start(const spade_sandbox_opts *opts, int *ctl, pid_t *pid, char *err, size_t errlen) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        spade_errf(err, errlen, "socketpair: %s", strerror(errno));
        return -1;
    }
    /* The child's environment, built here: after fork only async-signal-safe
     * calls are allowed, and malloc is not one. */
    size_t ne = 0;
    char *envp[ZYGOTE_ENV_N + 1];
    for (size_t i = 0; i < ZYGOTE_ENV_N; i++) {
        const char *v = getenv(zygote_env_allow[i]);
        if (!v) continue;
        size_t nl = strlen(zygote_env_allow[i]), vl = strlen(v);
        char *kv = malloc(nl + vl + 2);
        if (!kv) continue;
        memcpy(kv, zygote_env_allow[i], nl);
        kv[nl] = '=';
        memcpy(kv + nl + 1, v, vl + 1);
        envp[ne++] = kv;
    }
    envp[ne] = NULL;
    /* The build's helper for the uninstalled build, the installed one else:
     * the running program lives under the build directory when it was built
     * there and not installed (tests, ./spade). */
    const char *helper = ZYGOTE_HELPER_INSTALLED;
    char exe[4096], build[4096];
    ssize_t xl = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (xl > 0 && realpath(SPADE_PATHS_BUILDDIR, build)) {
        exe[xl] = '\0';
        size_t bl = strlen(build);
        if (strncmp(exe, build, bl) == 0 && exe[bl] == '/') helper = ZYGOTE_HELPER_BUILD;
    }
    const char *fallback = ZYGOTE_FALLBACK;
#ifdef SPADE_SHARED_LIB
    /* A staged install (make install DESTDIR=STAGE, before it is packaged or moved): this
     * library is STAGE + libdir, and the zygote is STAGE + pkglibexecdir, not yet at
     * pkglibexecdir. Found from where the library really is, so a packager's tree works. */
    static char staged_helper[4200], staged_fallback[4200];
    Dl_info di;
    char libreal[4096], libdir_real[4096];
    if (dladdr((void *)&spade_zygote_start, &di) && di.dli_fname && realpath(di.dli_fname, libreal)) {
        char *slash = strrchr(libreal, '/');
        if (slash) *slash = '\0';
        size_t ll = strlen(libreal), cl = strlen(SPADE_PATHS_LIBDIR);
        int configured = realpath(SPADE_PATHS_LIBDIR, libdir_real) && !strcmp(libdir_real, libreal);
        if (!configured && ll > cl && !strcmp(libreal + ll - cl, SPADE_PATHS_LIBDIR)) {
            int root = (int)(ll - cl);
            snprintf(staged_helper, sizeof staged_helper, "%.*s%s", root, libreal, ZYGOTE_HELPER_INSTALLED);
            snprintf(staged_fallback, sizeof staged_fallback, "%.*s%s", root, libreal, ZYGOTE_FALLBACK);
            helper = staged_helper;
            fallback = staged_fallback;
        }
    }
#endif
    pid_t parent = getpid();
    pid_t p = fork();
    if (p < 0) {
        spade_errf(err, errlen, "fork: %s", strerror(errno));
        for (size_t i = 0; i < ne; i++) free(envp[i]);
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (p == 0) exec_zygote(sv[1], parent, helper, fallback, envp);
    for (size_t i = 0; i < ne; i++) free(envp[i]);
    close(sv[1]);
    /* The options are the zygote's first message (SEQPACKET: one record); it
     * reads them once its constructor runs. */
    if (send(sv[0], opts, sizeof *opts, MSG_NOSIGNAL) != (ssize_t)sizeof *opts) {
        spade_errf(err, errlen, "sandbox zygote: send options: %s", strerror(errno));
        close(sv[0]);
        kill(p, SIGKILL);
        while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
            ;
        return -1;
    }
    *ctl = sv[0];
    *pid = p;
    return 0;
}

static void close_fds_of(struct msghdr *m) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int fds[8];
        if (n > 8) n = 8;
        memcpy(fds, CMSG_DATA(c), n * sizeof(int));
        for (size_t i = 0; i < n; i++) close(fds[i]);
    }
}

/* One request, one reply (late replies to earlier, abandoned requests are
 * dropped, with any fds they carry). Called with sb->mu held. */
static int zcall(spade_sandbox *sb, zreq *q, double deadline, zrep *r, int *fds, int *nfds, char *err, size_t errlen) {
    if (sb->broken || sb->ctl < 0) {
        spade_errf(err, errlen, "the sandbox zygote is gone");
        return -1;
    }
    q->seq = ++sb->seq;
    while (send(sb->ctl, q, sizeof *q, MSG_NOSIGNAL) < 0) {
        if (errno == EINTR) continue;
        spade_errf(err, errlen, "zygote: send: %s", strerror(errno));
        sb->broken = 1;
        return -1;
    }
    for (;;) {
        double left = deadline - spade_ipc_now();
        if (left <= 0) {
            spade_errf(err, errlen, "zygote did not answer in time");
            return -1;
        }
        struct pollfd p = {sb->ctl, POLLIN, 0};
        int pr = poll(&p, 1, (int)(left * 1000.0) + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) continue;
        union {
            char buf[CMSG_SPACE(4 * sizeof(int))];
            struct cmsghdr align;
        } u;
        struct iovec iov = {r, sizeof *r};
        struct msghdr m = {0};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = u.buf;
        m.msg_controllen = sizeof u.buf;
        ssize_t n = recvmsg(sb->ctl, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) {
            spade_errf(err, errlen, "zygote: %s", n == 0 ? "closed its socket" : strerror(errno));
            sb->broken = 1;
            return -1;
        }
        if ((size_t)n != sizeof *r || r->seq != q->seq || r->op != q->op || (m.msg_flags & MSG_CTRUNC)) {
            close_fds_of(&m);
            if ((size_t)n == sizeof *r && r->seq != q->seq) continue; /* a late reply */
            spade_errf(err, errlen, "zygote: malformed reply%s",
                       (m.msg_flags & MSG_CTRUNC) ? " (fds truncated: out of file descriptors?)" : "");
            return -1;
        }
        int got = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (fds && got < 2)
                    fds[got++] = fd;
                else
                    close(fd);
            }
        }
        if (nfds)
            *nfds = got;
        else
            for (int i = 0; i < got; i++) close(fds[i]);
        return 0;
    }
}

int spade_zygote_spawn(spade_sandbox *sb, double deadline, pid_t *pid, int *sock, int *pidfd, char *err,
                       size_t errlen) {
    zreq q = {.op = Z_SPAWN};
    zrep r;
    int fds[2] = {-1, -1}, nfds = 0;
    pthread_mutex_lock(&sb->mu);
    /* The first spawn is also the first word from the zygote (spade_sandbox_new
     * does not wait for it), which may still be loading: give it the time a
     * start-up takes, whatever the call's own deadline. */
    double d = sb->zygote_up ? deadline : spade_ipc_now() + 10.0;
    int rc = zcall(sb, &q, d > deadline ? d : deadline, &r, fds, &nfds, err, errlen);
    if (rc == 0) sb->zygote_up = 1;
    pthread_mutex_unlock(&sb->mu);
    if (rc < 0) {
        if (!sb->zygote_up) {
            size_t n = strlen(err);
            snprintf(err + n, errlen > n ? errlen - n : 0,
                     " (the sandbox zygote did not start: it is " ZYGOTE_EXE
                     " executed again, which must exist; a program must link libspade, not dlopen it)");
        }
        return -1;
    }
    if (r.err || r.pid <= 0 || nfds != r.nfds || nfds < 1) {
        for (int i = 0; i < nfds; i++) close(fds[i]);
        if (r.err == ECHILD)
            spade_errf(err, errlen, "workers fail to lock themselves down (rlimits, seccomp or prctl refused)");
        else
            spade_errf(err, errlen, "zygote could not fork a worker: %s", strerror(r.err ? r.err : EPROTO));
        return -1;
    }
    *pid = r.pid;
    *sock = fds[0];
    *pidfd = nfds > 1 ? fds[1] : -1;
    return 0;
}

int spade_zygote_reap(spade_sandbox *sb, pid_t pid, int grace_ms, int *status, int *killed, char *err, size_t errlen) {
    zreq q = {.op = Z_REAP, .pid = pid, .grace_ms = grace_ms};
    zrep r;
    /* A killed process is gone within milliseconds; the grace is the worker's
     * own time to finish exiting. */
    double deadline = spade_ipc_now() + grace_ms / 1000.0 + 5.0;
    pthread_mutex_lock(&sb->mu);
    int rc = zcall(sb, &q, deadline, &r, NULL, NULL, err, errlen);
    pthread_mutex_unlock(&sb->mu);
    if (rc < 0) return -1;
    if (r.err) {
        spade_errf(err, errlen, "zygote could not reap worker %d: %s", (int)pid, strerror(r.err));
        return -1;
    }
    *status = r.status;
    *killed = r.killed;
    return 0;
}

int spade_zygote_ping(spade_sandbox *sb, double deadline, char *err, size_t errlen) {
    zreq q = {.op = Z_PING};
    zrep r;
    pthread_mutex_lock(&sb->mu);
    int rc = zcall(sb, &q, deadline, &r, NULL, NULL, err, errlen);
    pthread_mutex_unlock(&sb->mu);
    return rc;
}
