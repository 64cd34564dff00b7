/* worker.c — the inside of a sandbox worker process.
 *
 * What it is: the code a worker runs after the zygote forks it. It first locks
 * itself down, in this order and before it has read a single byte of source:
 * rlimits (CPU, address space, core 0, file size 0, no processes), every fd
 * closed but its IPC socket (moved to SPADE_WORKER_FD), no new files,
 * PR_SET_PDEATHSIG, a user namespace (and optionally a network one) where the
 * kernel allows, PR_SET_NO_NEW_PRIVS,
 * not dumpable, and the seccomp allowlist. Then it serves the parent: LOAD
 * (core/jit compile + core/host validation), ADD, BATCH (resets and steps of
 * many instances in one round trip: one read and one write per batch), HINT and
 * SOLVE.
 * What it is not: trusted. The environment code runs in this process, so
 * nothing here is believed by the parent (ipc.c decodes every reply as
 * hostile). The allowlist and why each entry is there are below.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "errbuf.h"
#include "host.h"
#include "jit/jit.h"
#include "sandbox/internal.h"

/* ---- the seccomp allowlist ---------------------------------------------------- */
/* Everything not listed kills the whole process (SIGSYS -> forbidden_syscall).
 * Listed with an errno instead of a kill:
 *  - open/openat -> EACCES: libtcc probes for #include files; the compile must
 *    fail with "include file not found", not kill the worker.
 *  - write/writev on fd 2 -> EBADF: glibc's fatal-error path (heap corruption,
 *    stack smashing) writes its message there before abort(); fd 2 is closed
 *    anyway, and the abort must end as a crash, not as a forbidden syscall.
 *  - rt_sigaction, rt_sigprocmask, getpid, gettid, tgkill, tkill -> EPERM: the
 *    rest of abort()'s path; with them refused abort() ends on its hlt
 *    instruction (SIGSEGV -> crash). Refusing rt_sigaction/rt_sigprocmask also
 *    keeps environment code from catching or blocking SIGXCPU and SIGSEGV.
 *  - sysinfo -> EPERM: glibc's qsort (libtcc sorts the cases of a switch with
 *    it) asks for the machine's memory size first; refused, it assumes plenty.
 *    Killing would fail honest environments with large switches; allowing
 *    would tell the environment the machine's uptime, load and process count.
 *  - madvise with an advice that reaches beyond the worker's own pages, and
 *    mmap of huge or locked pages -> EPERM (madvise_rules, mmap_rules).
 * I/O is allowed on SPADE_WORKER_FD only. Memory calls are what malloc and
 * libtcc (mprotect of the code image) need. Verified with strace on libtcc
 * 0.9.27: compile + relocate use brk, mmap, munmap, mprotect only.
 * A sanitizer build (--enable-sanitizers) adds three entries, at the end and
 * in no other build: see "sanitizer builds" further down. */
/* madvise by advice (its third argument). Allowed: what acts on the worker's
 * own pages alone (malloc uses DONTNEED; ASan DONTDUMP, NOHUGEPAGE). Refused
 * with EPERM (an errno, so a runtime that tries one merely goes without):
 * MERGEABLE (KSM merges identical pages across processes: a timing side
 * channel on other processes' memory), COLD and PAGEOUT (reclaim and swap
 * I/O on the machine's behalf), COLLAPSE, and everything from 26 up, where
 * HWPOISON (100) and SOFT_OFFLINE (101) act on physical pages; they need
 * CAP_SYS_ADMIN, which a root trainer's worker keeps when the kernel refuses
 * it a user namespace, and HWPOISON on a shared file page (libc's text) kills
 * every process that maps it, the parent included. The kernel reads the
 * advice as an int; values with high bits set are refused too. Each value is
 * listed: a rule without a condition would override the conditional ones. */
static int madvise_rules(scmp_filter_ctx c) {
    static const int ok[] = {0 /* NORMAL */,
                             1 /* RANDOM */,
                             2 /* SEQUENTIAL */,
                             3 /* WILLNEED */,
                             4 /* DONTNEED */,
                             8 /* FREE */,
                             9 /* REMOVE */,
                             10 /* DONTFORK */,
                             11 /* DOFORK */,
                             13 /* UNMERGEABLE */,
                             14 /* HUGEPAGE */,
                             15 /* NOHUGEPAGE */,
                             16 /* DONTDUMP */,
                             17 /* DODUMP */,
                             18 /* WIPEONFORK */,
                             19 /* KEEPONFORK */,
                             22 /* POPULATE_READ */,
                             23 /* POPULATE_WRITE */,
                             24 /* DONTNEED_LOCKED */};
    static const int no[] = {5, 6, 7, 12 /* MERGEABLE */, 20 /* COLD */, 21 /* PAGEOUT */, 25 /* COLLAPSE */};
    int rc = 0;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        rc |= seccomp_rule_add(c, SCMP_ACT_ALLOW, SCMP_SYS(madvise), 1, SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)ok[i]));
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        rc |=
            seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(madvise), 1, SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)no[i]));
    rc |= seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(madvise), 1, SCMP_A2(SCMP_CMP_GE, 26));
    return rc;
}

/* mmap without MAP_HUGETLB and MAP_LOCKED (its fourth argument, flags):
 * huge pages come from a pool the whole machine shares (a GPU trainer may have
 * reserved it), and locked pages are unswappable memory a root worker refused
 * its user namespace could pin despite RLIMIT_MEMLOCK 0 (CAP_IPC_LOCK). Nothing
 * the worker runs (malloc, libtcc, ASan) asks for either; EPERM if asked. */
static int mmap_rules(scmp_filter_ctx c) {
    const scmp_datum_t hugetlb = MAP_HUGETLB, locked = MAP_LOCKED;
    int rc = seccomp_rule_add(c, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, SCMP_A3(SCMP_CMP_MASKED_EQ, hugetlb | locked, 0));
    rc |= seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mmap), 1, SCMP_A3(SCMP_CMP_MASKED_EQ, hugetlb, hugetlb));
    rc |= seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mmap), 1, SCMP_A3(SCMP_CMP_MASKED_EQ, locked, locked));
    return rc;
}

static int add_rules(scmp_filter_ctx c) {
    int rc = 0;
    const int fd_io[] = {SCMP_SYS(read),     SCMP_SYS(write),  SCMP_SYS(readv),   SCMP_SYS(writev),
                         SCMP_SYS(recvfrom), SCMP_SYS(sendto), SCMP_SYS(recvmsg), SCMP_SYS(sendmsg)};
    for (size_t i = 0; i < sizeof fd_io / sizeof fd_io[0]; i++)
        rc |= seccomp_rule_add(c, SCMP_ACT_ALLOW, fd_io[i], 1, SCMP_A0(SCMP_CMP_EQ, SPADE_WORKER_FD));
    rc |= seccomp_rule_add(c, SCMP_ACT_ERRNO(EBADF), SCMP_SYS(write), 1, SCMP_A0(SCMP_CMP_EQ, 2));
    rc |= seccomp_rule_add(c, SCMP_ACT_ERRNO(EBADF), SCMP_SYS(writev), 1, SCMP_A0(SCMP_CMP_EQ, 2));
    const int allow[] = {
        SCMP_SYS(munmap),     SCMP_SYS(mprotect),     SCMP_SYS(mremap),          SCMP_SYS(brk),          SCMP_SYS(exit),
        SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn), SCMP_SYS(restart_syscall), SCMP_SYS(clock_gettime)};
    for (size_t i = 0; i < sizeof allow / sizeof allow[0]; i++) rc |= seccomp_rule_add(c, SCMP_ACT_ALLOW, allow[i], 0);
    rc |= madvise_rules(c);
    rc |= mmap_rules(c);
    rc |= seccomp_rule_add(c, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 0);
    rc |= seccomp_rule_add(c, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 0);
    const int refuse[] = {SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask), SCMP_SYS(getpid), SCMP_SYS(gettid),
                          SCMP_SYS(tgkill),       SCMP_SYS(tkill),          SCMP_SYS(sysinfo)};
    for (size_t i = 0; i < sizeof refuse / sizeof refuse[0]; i++)
        rc |= seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), refuse[i], 0);
#if defined(__SANITIZE_ADDRESS__)
    /* Sanitizer builds only (see "sanitizer builds" below): ASan's longjmp
     * interceptor (libtcc's error recovery: every compile error) asks where
     * the signal stack is and CHECK-fails unless it gets an answer. Only the
     * query form, sigaltstack(NULL, &old), is allowed: it changes nothing. */
    rc |= seccomp_rule_add(c, SCMP_ACT_ALLOW, SCMP_SYS(sigaltstack), 1, SCMP_A0(SCMP_CMP_EQ, 0));
    /* UBSan starts its runtime at its first report, which can be in a worker:
     * it reads /proc/self/exe's link and asks whether fd 2 is a terminal
     * before it calls __ubsan_on_report (which then traps, see below). Both
     * are refused, not allowed, as open/openat and fd 2 already are. */
    rc |= seccomp_rule_add(c, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(readlink), 0);
    rc |= seccomp_rule_add(c, SCMP_ACT_ERRNO(EBADF), SCMP_SYS(ioctl), 1, SCMP_A0(SCMP_CMP_EQ, 2));
#endif
    return rc;
}

int spade_worker_filter(struct sock_fprog *out, char *err, size_t errlen) {
    out->len = 0;
    out->filter = NULL;
    scmp_filter_ctx c = seccomp_init(SCMP_ACT_KILL_PROCESS);
    if (!c) {
        spade_errf(err, errlen, "seccomp_init failed");
        return -1;
    }
    int rc = seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    /* We load the program ourselves, after PR_SET_NO_NEW_PRIVS. */
    rc |= add_rules(c);
    if (rc != 0) {
        seccomp_release(c);
        spade_errf(err, errlen, "seccomp rules: %s", strerror(-rc));
        return -1;
    }
    /* Export once, here, so that each worker only runs one prctl: generating
     * the BPF per worker would cost more than the rest of a spawn. */
    int p[2];
    if (pipe(p) < 0) {
        seccomp_release(c);
        spade_errf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    rc = seccomp_export_bpf(c, p[1]);
    close(p[1]);
    seccomp_release(c);
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                rc = -ENOMEM;
                break;
            }
            buf = nb;
        }
        ssize_t r = read(p[0], buf + len, cap - len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        len += (size_t)r;
    }
    close(p[0]);
    if (rc != 0 || len == 0 || len % sizeof(struct sock_filter) != 0 || len / sizeof(struct sock_filter) > 4096) {
        free(buf);
        spade_errf(err, errlen, "seccomp_export_bpf: %s", rc ? strerror(-rc) : "bad program size");
        return -1;
    }
    out->len = (unsigned short)(len / sizeof(struct sock_filter));
    out->filter = (struct sock_filter *)buf;
    return 0;
}

/* ---- lockdown ------------------------------------------------------------------ */
static int limit(int resource, rlim_t soft, rlim_t hard) {
    struct rlimit r = {soft, hard};
    return setrlimit(resource, &r);
}

static int close_all_but(int keep) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 0u, (unsigned)keep - 1, 0u) == 0 &&
        syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0)
        return 0;
#endif
    /* Older kernels: no close_range. Without /proc, close up to the limit. */
    struct rlimit r;
    long max = getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY && r.rlim_cur < 1048576
                   ? (long)r.rlim_cur
                   : 65536;
    for (long fd = 0; fd < max; fd++)
        if (fd != keep) close((int)fd);
    return 0;
}

static int lockdown(int sock, const spade_sandbox_opts *o, uint64_t vm_base, const struct sock_fprog *filter) {
    if (sock != SPADE_WORKER_FD) {
        if (dup2(sock, SPADE_WORKER_FD) < 0) return -1;
        close(sock);
    }
    /* The socket was CLOEXEC in the zygote; a worker never execs, but keep the
     * flag off so that nothing treats fd 3 specially. */
    fcntl(SPADE_WORKER_FD, F_SETFD, 0);

    /* Soft limit only: SIGXCPU kills (the worker cannot catch or block it) and
     * the parent raises the soft limit as a long-lived worker's life goes on
     * (sandbox.c, cpu_refresh), which an unlimited hard limit lets it do. */
    rlim_t cpu = o->cpu_limit_s > 0 ? (rlim_t)o->cpu_limit_s : 10;
    if (limit(RLIMIT_CPU, cpu, RLIM_INFINITY) < 0 && limit(RLIMIT_CPU, cpu, cpu + 1) < 0) return -1;
    /* mem_limit is what the environment may add to the address space the
     * worker inherits from the zygote (shared libraries alone can be hundreds
     * of MiB of mappings when CUDA and BLAS are linked; in a sanitizer build
     * ASan's shadow and allocator reservations are terabytes of it, already
     * mapped, so the limit still means the same). */
    rlim_t as = (rlim_t)vm_base + (rlim_t)o->mem_limit;
    if (limit(RLIMIT_AS, as, as) < 0) return -1;
    if (limit(RLIMIT_CORE, 0, 0) < 0 || limit(RLIMIT_FSIZE, 0, 0) < 0) return -1;
    limit(RLIMIT_NPROC, 0, 0); /* per user, and root ignores it: seccomp is what stops fork */
    limit(RLIMIT_MEMLOCK, 0, 0);
    limit(RLIMIT_MSGQUEUE, 0, 0);
    if (close_all_but(SPADE_WORKER_FD) < 0) return -1;
    if (limit(RLIMIT_NOFILE, 0, 0) < 0) return -1;

    /* The zygote is our parent: if it dies, so do we. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) return -1;

    /* Outer layers, best effort (refused in many containers; then skipped).
     * A user namespace costs ~10 us and leaves the worker without any
     * capability in ours, even when the trainer runs as root. A network
     * namespace costs ~0.4 ms and adds nothing while seccomp refuses socket(),
     * so it is opt-in: SPADE_SANDBOX_NETNS=1. SPADE_SANDBOX_USERNS=0 turns the
     * user namespace off. */
    const char *userns = getenv("SPADE_SANDBOX_USERNS"), *netns = getenv("SPADE_SANDBOX_NETNS");
    int ns = (userns && strcmp(userns, "0") == 0) ? 0 : CLONE_NEWUSER;
    if (ns && netns && strcmp(netns, "1") == 0) ns |= CLONE_NEWNET;
    if (ns && unshare(ns) < 0 && ns != CLONE_NEWUSER) (void)unshare(CLONE_NEWUSER);

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return -1;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) return -1;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, filter) < 0 &&
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, filter, 0, 0) < 0)
        return -1;
    return 0;
}

/* ---- serving ------------------------------------------------------------------- */
static spade_ipc_buf g_in, g_out, g_text;
static int g_compiling; /* libtcc is running: an exit() now is the compiler giving up */

static void write_all(const struct iovec *iov, int n) {
    struct iovec v[4];
    memcpy(v, iov, (size_t)n * sizeof *v);
    int i = 0;
    while (i < n) {
        ssize_t w = writev(SPADE_WORKER_FD, v + i, n - i);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(0); /* the parent is gone */
        size_t left = (size_t)w;
        while (i < n && left >= v[i].iov_len) {
            left -= v[i].iov_len;
            i++;
        }
        if (i < n) {
            v[i].iov_base = (char *)v[i].iov_base + left;
            v[i].iov_len -= left;
        }
    }
}

static void send_frame(uint32_t type, const void *a, size_t alen, const void *b, size_t blen) {
    uint32_t h[3] = {SPADE_IPC_MAGIC, type, (uint32_t)(alen + blen)};
    struct iovec v[3] = {{h, sizeof h}, {(void *)a, alen}, {(void *)b, blen}};
    write_all(v, 3);
}

static void send_fail(spade_outcome outcome, int line, const char *msg) {
    size_t n = strlen(msg);
    if (n > 1000) n = 1000;
    uint32_t head[3] = {(uint32_t)outcome, (uint32_t)(line > 0 ? line : 0), (uint32_t)n};
    send_frame(SPADE_MSG_FAIL, head, sizeof head, msg, n);
}

static void on_exit_while_compiling(void) {
    /* Registered last, so it runs first: whatever else was registered (in the
     * parent, before the zygote forked) must not run here. */
    if (g_compiling) send_fail(SPADE_OUT_OOM, 0, "the compiler ran out of memory");
    _exit(g_compiling ? SPADE_WORKER_EXIT_COMPILER : 0);
}

/* Reads one frame; exits when the parent closes the socket. */
static void read_frame(uint32_t *type, unsigned char **payload, size_t *len) {
    size_t need = SPADE_IPC_HDR;
    g_in.len = 0;
    for (;;) {
        if (g_in.len >= SPADE_IPC_HDR) {
            uint32_t h[3];
            memcpy(h, g_in.p, sizeof h);
            if (h[0] != SPADE_IPC_MAGIC) _exit(0);
            need = SPADE_IPC_HDR + (size_t)h[2];
            *type = h[1];
            if (g_in.len >= need) {
                *payload = g_in.p + SPADE_IPC_HDR;
                *len = h[2];
                return;
            }
        }
        if (spade_ipc_buf_reserve(&g_in, need) < 0) {
            send_fail(SPADE_OUT_OOM, 0, "out of memory reading a request");
            _exit(0);
        }
        /* The parent sends one request and waits, so reading only what this
         * frame needs never swallows the next one. */
        size_t want = need > g_in.len ? need - g_in.len : 0;
        if (g_in.len < SPADE_IPC_HDR)
            want = g_in.cap - g_in.len; /* header unknown: take what came (usually the whole frame) */
        ssize_t r = read(SPADE_WORKER_FD, g_in.p + g_in.len, want);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) _exit(0);
        g_in.len += (size_t)r;
    }
}

static uint32_t get_u32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void serve_load(const unsigned char *p, size_t len, spade_host **host, spade_jit **jit) {
    char err[1024];
    if (*host || len < 16 || (size_t)get_u32(p) + get_u32(p + 4) != len - 16 || get_u32(p) > 255) {
        send_fail(SPADE_OUT_INTERNAL, 0, *host ? "environment already loaded" : "malformed load request");
        return;
    }
    uint32_t nlen = get_u32(p), slen = get_u32(p + 4);
    uint64_t poison = (uint64_t)get_u32(p + 8) | (uint64_t)get_u32(p + 12) << 32;
    p += 8; /* the rest as before: name, then source, after the 16-byte head */
    char name[256];
    memcpy(name, p + 8, nlen);
    name[nlen] = '\0';
    int line = 0;
    spade_jit_status kind = SPADE_JIT_OK;
    g_compiling = 1;
    int rc = spade_jit_compile(name, (const char *)p + 8 + nlen, slen, jit, err, sizeof err, &line, &kind);
    g_compiling = 0;
    if (rc < 0) {
        spade_outcome o = kind == SPADE_JIT_LINK_ERROR      ? SPADE_OUT_LINK
                          : kind == SPADE_JIT_OUT_OF_MEMORY ? SPADE_OUT_OOM
                                                            : SPADE_OUT_COMPILE;
        send_fail(o, line, err);
        return;
    }
    if (spade_host_new(host, spade_jit_symbol, *jit, err, sizeof err) < 0) {
        *host = NULL;
        send_fail(SPADE_OUT_INVALID, 0, err);
        return;
    }
    spade_host_set_poison(*host, poison);
    const spade_env_info *info = spade_host_info(*host);
    send_frame(SPADE_MSG_LOADED, info, sizeof *info, NULL, 0);
}

static void serve_add(const unsigned char *p, size_t len, spade_host *h) {
    if (!h || len < 8) {
        send_fail(SPADE_OUT_BAD_CALL, 0, h ? "malformed add request" : "no environment loaded");
        return;
    }
    int32_t n, nv;
    memcpy(&n, p, 4);
    memcpy(&nv, p + 4, 4);
    const spade_env_info *info = spade_host_info(h);
    if (n <= 0 || (nv != 0 && nv != info->n_params) || len != 8 + (size_t)nv * sizeof(double)) {
        send_fail(SPADE_OUT_BAD_CALL, 0, "add: bad count or parameter values");
        return;
    }
    double values[SPADE_INFO_MAX_PARAMS];
    if (nv) memcpy(values, p + 8, (size_t)nv * sizeof(double));
    int32_t first = -1;
    for (int32_t i = 0; i < n; i++) {
        int id = spade_host_add_instance(h, nv ? values : NULL);
        if (id < 0) {
            send_fail(SPADE_OUT_OOM, 0, "out of memory adding instances");
            return;
        }
        if (i == 0) first = id;
    }
    send_frame(SPADE_MSG_ADDED, &first, sizeof first, NULL, 0);
}

static void serve_batch(const unsigned char *p, size_t len, spade_host *h) {
    if (!h || len < 4) {
        send_fail(SPADE_OUT_BAD_CALL, 0, h ? "malformed batch" : "no environment loaded");
        return;
    }
    uint32_t n = get_u32(p);
    if ((len - 4) / sizeof(spade_wire_item) < n) {
        send_fail(SPADE_OUT_BAD_CALL, 0, "batch shorter than its count");
        return;
    }
    const unsigned char *items = p + 4;
    const char *act = (const char *)items + (size_t)n * sizeof(spade_wire_item);
    size_t act_left = len - 4 - (size_t)n * sizeof(spade_wire_item);

    /* Records first (header + count + n records), texts after: one writev. */
    g_out.len = 0;
    g_text.len = 0;
    if (spade_ipc_buf_reserve(&g_out, 4 + (size_t)n * sizeof(spade_wire_result)) < 0) {
        send_fail(SPADE_OUT_OOM, 0, "out of memory for the results");
        return;
    }
    memcpy(g_out.p, &n, 4);
    unsigned char *rec = g_out.p + 4;
    for (uint32_t i = 0; i < n; i++, rec += sizeof(spade_wire_result)) {
        spade_wire_item it;
        memcpy(&it, items + (size_t)i * sizeof it, sizeof it);
        spade_step_result r = {0};
        spade_host_status st;
        if (it.op == SPADE_OP_RESET) {
            st = spade_host_reset(h, it.id, it.seed, &r);
        } else if (it.op == SPADE_OP_STEP && act_left >= (size_t)it.action_len + 1) {
            st = spade_host_step(h, it.id, act, it.action_len, &r);
            act += (size_t)it.action_len + 1;
            act_left -= (size_t)it.action_len + 1;
        } else if (it.op == SPADE_OP_POISON) {
            spade_host_set_poison(h, it.seed);
            st = SPADE_HOST_OK;
        } else if (it.op == SPADE_OP_HINT || it.op == SPADE_OP_SOLVE) {
            const char *text = NULL;
            size_t tl = 0;
            st = it.op == SPADE_OP_SOLVE ? spade_host_solve(h, it.id, &text, &tl)
                                         : spade_host_hint(h, it.id, &text, &tl);
            if (st == SPADE_HOST_OK && (!text || tl > SPADE_OBS_MAX)) st = SPADE_HOST_OUTPUT_TOO_LARGE;
            r.obs = text;
            r.obs_len = tl;
        } else {
            st = SPADE_HOST_BAD_CALL;
        }
        spade_wire_result w = {0};
        w.status = (uint8_t)st;
        size_t ol = 0;
        if (st == SPADE_HOST_OK) {
            w.reward = r.reward;
            w.episode_return = r.episode_return;
            w.terminated = r.terminated ? 1 : 0;
            w.truncated = r.truncated ? 1 : 0;
            w.success = r.success ? 1 : 0;
            ol = r.obs && r.obs_len <= SPADE_OBS_MAX ? r.obs_len : 0;
            w.obs_len = (uint32_t)ol;
        }
        /* The observation and its NUL, with one room check (a call of
         * spade_ipc_put per piece cost more than the copy). */
        if (g_text.cap - g_text.len < ol + 1 && spade_ipc_buf_reserve(&g_text, g_text.len + ol + 1) < 0) {
            send_fail(SPADE_OUT_OOM, 0, "out of memory for the observations");
            return;
        }
        unsigned char *t = g_text.p + g_text.len;
        if (ol <= 16) /* short observations: a call of memcpy would cost more than the bytes */
            for (size_t k = 0; k < ol; k++) t[k] = (unsigned char)r.obs[k];
        else
            memcpy(t, r.obs, ol);
        t[ol] = '\0';
        g_text.len += ol + 1;
        memcpy(rec, &w, sizeof w);
    }
    send_frame(SPADE_MSG_RESULTS, g_out.p, 4 + (size_t)n * sizeof(spade_wire_result), g_text.p, g_text.len);
}

static void serve_text(const unsigned char *p, size_t len, spade_host *h, int solve) {
    if (!h || len != 4) {
        send_fail(SPADE_OUT_BAD_CALL, 0, h ? "malformed hint/solve request" : "no environment loaded");
        return;
    }
    int32_t id;
    memcpy(&id, p, 4);
    const char *text = NULL;
    size_t tl = 0;
    spade_host_status st = solve ? spade_host_solve(h, id, &text, &tl) : spade_host_hint(h, id, &text, &tl);
    if (st != SPADE_HOST_OK || !text || tl > SPADE_OBS_MAX) {
        text = "";
        tl = 0;
        if (st == SPADE_HOST_OK) st = SPADE_HOST_OUTPUT_TOO_LARGE;
    }
    uint32_t head[2] = {(uint32_t)st, (uint32_t)tl};
    /* text is NUL-terminated by the host: send the NUL with it. */
    send_frame(SPADE_MSG_TEXT, head, sizeof head, text, tl + 1);
}

/* ---- sanitizer builds ---------------------------------------------------------- */
/* --enable-sanitizers builds ASan and UBSan together. A worker is a fork of
 * the same program, so both runtimes live on in it and check the helpers the
 * JIT'd code calls (memset, strlen, say, parse_ints, ...), though not that code
 * itself. Besides the filter entries in add_rules (a sigaltstack query,
 * which changes nothing, and readlink and ioctl on fd 2 refused with an
 * errno), two things keep its outcomes those of a normal build:
 *  - A report in a locked-down worker ends at once in a trap (SIGILL ->
 *    `crash`, what the same memory error is, or becomes, in a normal build;
 *    tests/hostile/smash_return.c and ub_in_helper.c). A whole report would
 *    make calls the filter kills (it starts with an isatty ioctl on fd 2, and
 *    a stack trace wants the binary's file), so a memory error in a helper
 *    would read as `forbidden_syscall`. The report itself is lost, since a
 *    worker has nowhere to print it: reproduce in-process (core/host.h).
 *  - malloc returns NULL when the worker's address-space limit is reached, as
 *    glibc's does, so tcc's "memory full" and the runtime's own checks give
 *    `out_of_memory`; by default ASan would report (and so `crash`) instead.
 *    This is a process-wide default of ASan in every program that links the
 *    sandbox; ASAN_OPTIONS set in the environment still wins.
 * None of this is compiled into a normal build. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>

static volatile int g_locked_down; /* set in the worker only, after lockdown */

void __asan_on_error(void) {
    if (g_locked_down) __builtin_trap();
}

void __ubsan_on_report(void); /* libubsan's hook; it has no public header */
void __ubsan_on_report(void) {
    if (g_locked_down) __builtin_trap();
}

const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#define SPADE_WORKER_LOCKED_DOWN() (g_locked_down = 1)
#else
#define SPADE_WORKER_LOCKED_DOWN() ((void)0)
#endif

void spade_worker_process(int sock, const spade_sandbox_opts *opts, uint64_t vm_base, const struct sock_fprog *filter) {
    if (lockdown(sock, opts, vm_base, filter) < 0) _exit(SPADE_WORKER_EXIT_LOCKDOWN);
    SPADE_WORKER_LOCKED_DOWN();
    /* From here on, seccomp: only the IPC socket, memory, and exit. Tell the
     * zygote, which hands out only workers that said so (and so never one
     * whose own setrlimit could still undo a later prlimit of the parent). */
    if (write(SPADE_WORKER_FD, "R", 1) != 1) _exit(0);
    atexit(on_exit_while_compiling);
    spade_host *host = NULL;
    spade_jit *jit = NULL;
    for (;;) {
        uint32_t type;
        unsigned char *payload;
        size_t len;
        read_frame(&type, &payload, &len);
        switch (type) {
        case SPADE_MSG_LOAD: serve_load(payload, len, &host, &jit); break;
        case SPADE_MSG_ADD: serve_add(payload, len, host); break;
        case SPADE_MSG_BATCH: serve_batch(payload, len, host); break;
        case SPADE_MSG_HINT: serve_text(payload, len, host, 0); break;
        case SPADE_MSG_SOLVE: serve_text(payload, len, host, 1); break;
        default: send_fail(SPADE_OUT_INTERNAL, 0, "unknown request"); break;
        }
    }
}
