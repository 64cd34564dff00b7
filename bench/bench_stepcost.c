/* bench_stepcost.c — a fixed amount of sandboxed stepping, for counting
 * instructions with valgrind --tool=callgrind rather than timing them.
 *
 *   bench_stepcost ENV.c BATCH ROUNDS [PARAMS [ACTION,ACTION,...]]
 *       the parent's side: a vector env of BATCH instances over one worker of a
 *       real sandbox (auto-reset), reset, then ROUNDS spade_vecenv_step calls,
 *       cycling through the actions (default "go").
 *   bench_stepcost --worker-profile OUT ENV.c BATCH ROUNDS [PARAMS [ACTIONS]]
 *       the worker's side: the same steps through spade_worker_step to a worker
 *       this program forks and runs under its own callgrind (OUT receives that
 *       profile); the worker is the real one (spade_worker_process: lockdown,
 *       serve loop, host, runtime, the JIT'd environment).
 *
 * Run each under callgrind twice with different ROUNDS: the difference of the
 * totals divided by the difference in steps is the user-space instructions of a
 * step on that side, free of start-up, compile and exit. bench/stepcost.sh does
 * exactly that. Instruction counts are the same from run to run on a busy
 * machine, where steps/s (bench_sandbox) are not; kernel time is not in them.
 *
 * Valgrind cannot run a locked-down worker: it does not know the seccomp
 * system call (and its own calls would have to pass the allowlist), and it
 * refuses to lower RLIMIT_NOFILE below the descriptors it keeps for itself. So
 * THIS PROGRAM ONLY replaces libseccomp with a stub whose filter allows every
 * call, and setrlimit with one that leaves RLIMIT_NOFILE alone: definitions in
 * the program take precedence over the shared libraries' when it is linked.
 * Neither changes the user-space instructions of a step. Everything else (the
 * other rlimits, every fd closed but the socket, no new privileges, the frames,
 * every check of the parent) is the real thing.
 * What it is not: a timing benchmark (bench_sandbox is; do not time this one)
 * nor a test.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "registry.h"

/* ---- libseccomp stand-in: every call allowed (see the header comment) ------- */
static int g_stub_ctx;

scmp_filter_ctx seccomp_init(uint32_t def_action) {
    (void)def_action;
    return &g_stub_ctx;
}

void seccomp_release(scmp_filter_ctx ctx) { (void)ctx; }

int seccomp_attr_set(scmp_filter_ctx ctx, enum scmp_filter_attr attr, uint32_t value) {
    (void)ctx;
    (void)attr;
    (void)value;
    return 0;
}

int seccomp_rule_add(scmp_filter_ctx ctx, uint32_t action, int syscall, unsigned int arg_cnt, ...) {
    (void)ctx;
    (void)action;
    (void)syscall;
    (void)arg_cnt;
    return 0;
}

int seccomp_export_bpf(const scmp_filter_ctx ctx, int fd) {
    (void)ctx;
    struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    return write(fd, &allow, sizeof allow) == (ssize_t)sizeof allow ? 0 : -EIO;
}

/* ---- setrlimit stand-in: RLIMIT_NOFILE left as it is (see the header comment) -- */
int setrlimit(__rlimit_resource_t resource, const struct rlimit *limits) {
    if (resource == RLIMIT_NOFILE) return 0;
    return prlimit(0, resource, limits, NULL);
}

/* ---- helpers ---------------------------------------------------------------- */
static void die(const char *what, const char *why) {
    fprintf(stderr, "bench_stepcost: %s: %s\n", what, why);
    exit(1);
}

/* The library's reader (core/registry.h): one copy of the limits and the
 * messages, where two benches had drifted apart. */
static char *read_file(const char *path, size_t *len) {
    char *buf, err[512];
    if (spade_read_source(path, &buf, len, err, sizeof err) != 0) die(path, err);
    return buf;
}

typedef struct job {
    const char *path;
    char *src;
    size_t len;
    int n;
    long rounds;
    const char *params;
    const char *cycle[64];
    int na;
    char *spec;
} job;

static void parse_job(job *j, int argc, char **argv) {
    if (argc < 3) die("usage", "[--worker-profile OUT] ENV.c BATCH ROUNDS [PARAMS [ACTION,...]]");
    j->path = argv[0];
    j->src = read_file(argv[0], &j->len);
    j->n = atoi(argv[1]);
    j->rounds = atol(argv[2]);
    j->params = argc > 3 && argv[3][0] ? argv[3] : NULL;
    j->spec = strdup(argc > 4 ? argv[4] : "go");
    j->na = 0;
    for (char *save, *t = strtok_r(j->spec, ",", &save); t && j->na < 64; t = strtok_r(NULL, ",", &save))
        j->cycle[j->na++] = t;
    if (j->n < 1 || j->rounds < 0 || j->na == 0) die("arguments", "BATCH >= 1, ROUNDS >= 0 and at least one action");
}

static void fill_actions(const job *j, long round, const char **acts, size_t *lens) {
    for (int i = 0; i < j->n; i++) {
        acts[i] = j->cycle[(round + i) % j->na];
        lens[i] = strlen(acts[i]);
    }
}

/* Generous deadlines: under valgrind everything is ~50x slower. */
static spade_sandbox_opts slow_opts(void) {
    spade_sandbox_opts o;
    memset(&o, 0, sizeof o);
    o.compile_timeout_s = 120;
    o.call_timeout_s = 120;
    o.cpu_limit_s = 600;
    o.mem_limit = (size_t)8 << 30;
    return o;
}

/* ---- the parent's side: vector env over a real sandbox ----------------------- */
static int run_vecenv(job *j) {
    spade_sandbox_opts o = slow_opts();
    spade_sandbox *sb;
    char err[512];
    if (spade_sandbox_new(&sb, &o, err, sizeof err) < 0) die("spade_sandbox_new", err);
    spade_failure f;
    spade_vecenv *v;
    if (spade_vecenv_new(sb, j->path, j->src, j->len, j->params, j->n, 1, SPADE_AUTORESET_NEXT_STEP, &v, &f) < 0)
        die("spade_vecenv_new", f.message);
    spade_step_result *res = malloc((size_t)j->n * sizeof *res);
    const char **acts = malloc((size_t)j->n * sizeof *acts);
    size_t *lens = malloc((size_t)j->n * sizeof *lens);
    if (!res || !acts || !lens) die("malloc", "out of memory");
    if (spade_vecenv_reset(v, 0, res, &f) < 0) die("spade_vecenv_reset", f.message);
    unsigned long bytes = 0;
    for (long r = 0; r < j->rounds; r++) {
        fill_actions(j, r, acts, lens);
        if (spade_vecenv_step(v, acts, lens, res, &f) < 0) die("spade_vecenv_step", f.message);
        for (int i = 0; i < j->n; i++) bytes += res[i].obs_len;
    }
    printf("vecenv: %d x %ld steps, %lu bytes of observations\n", j->n, j->rounds, bytes);
    spade_vecenv_free(v);
    spade_sandbox_free(sb);
    free(res);
    free(acts);
    free(lens);
    return 0;
}

/* ---- the worker's side ----------------------------------------------------------- */
/* --serve FD: become the worker (exec'd under valgrind by run_worker). */
static int serve(int fd) {
    char err[256];
    struct sock_fprog prog;
    if (spade_worker_filter(&prog, err, sizeof err) < 0) die("filter", err);
    spade_sandbox_opts o = slow_opts();
    spade_worker_process(fd, &o, spade_sandbox_vm_size(), &prog);
}

/* Copies what the worker's callgrind writes into fifo (opened before the fork:
 * callgrind opens its output once at start-up, and a fifo without a reader
 * would block it) to out, until the worker has exited and nothing is left. */
static void copy_fifo(int in, const char *out, pid_t child) {
    FILE *o = fopen(out, "wb");
    if (!o) die(out, strerror(errno));
    char buf[65536];
    int exited = 0;
    for (int idle = 0; idle < 3000;) { /* 5 minutes without a byte or an exit: give up */
        ssize_t r = read(in, buf, sizeof buf);
        if (r > 0) {
            fwrite(buf, 1, (size_t)r, o);
            idle = 0;
            continue;
        }
        if (r < 0 && errno != EAGAIN && errno != EINTR) die("read fifo", strerror(errno));
        if (exited) break; /* exited, and the fifo is drained */
        int st;
        exited = waitpid(child, &st, WNOHANG) == child;
        if (!exited) {
            usleep(100000);
            idle++;
        }
    }
    close(in);
    if (fclose(o) != 0) die(out, "write failed");
    if (!exited) die("worker", "its profile never came");
}

static int run_worker(job *j, const char *out, const char *self) {
    char dir[] = "/tmp/spade-stepcost-XXXXXX", fifo[64];
    if (!mkdtemp(dir)) die("mkdtemp", strerror(errno));
    snprintf(fifo, sizeof fifo, "%s/worker.cg", dir);
    if (mkfifo(fifo, 0600) < 0) die("mkfifo", strerror(errno));
    int fifo_in = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fifo_in < 0) die(fifo, strerror(errno));
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) die("socketpair", strerror(errno));
    int sz = 1 << 20; /* as the zygote does */
    for (int i = 0; i < 2; i++) {
        setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
        setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    }
    pid_t pid = fork();
    if (pid < 0) die("fork", strerror(errno));
    if (pid == 0) {
        close(sv[0]);
        char outarg[128], fdarg[16];
        snprintf(outarg, sizeof outarg, "--callgrind-out-file=%s", fifo);
        snprintf(fdarg, sizeof fdarg, "%d", sv[1]);
        setenv("SPADE_SANDBOX_USERNS", "0", 1); /* an unmapped uid could not open the fifo */
        execlp("valgrind", "valgrind", "--tool=callgrind", "-q", outarg, self, "--serve", fdarg, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    spade_sandbox_opts o = slow_opts();
    spade_ipc_buf b = {0};
    char err[512];
    uint32_t head[2] = {(uint32_t)strlen(j->path), (uint32_t)j->len};
    if (spade_ipc_begin(&b, SPADE_MSG_LOAD) < 0 || spade_ipc_put(&b, head, sizeof head) < 0 ||
        spade_ipc_put(&b, j->path, head[0]) < 0 || spade_ipc_put(&b, j->src, j->len) < 0)
        die("load", "out of memory");
    spade_ipc_end(&b);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    double deadline = spade_ipc_now() + o.compile_timeout_s;
    uint32_t type;
    size_t plen;
    spade_env_info info;
    char ready;
    /* The worker says "R" once locked down, as it does to the zygote. */
    struct pollfd p = {sv[0], POLLIN, 0};
    if (poll(&p, 1, 120000) != 1 || read(sv[0], &ready, 1) != 1 || ready != 'R') {
        kill(pid, SIGKILL);
        die("worker", "did not start (is valgrind installed?)");
    }
    if (spade_ipc_send(sv[0], b.p, b.len, deadline, err, sizeof err) != SPADE_IO_OK ||
        spade_ipc_recv(sv[0], &b, o.max_frame ? o.max_frame : (64u << 20), deadline, &type, &plen, err, sizeof err) !=
            SPADE_IO_OK)
        die("load", err);
    if (type != SPADE_MSG_LOADED || spade_ipc_decode_info(b.p + SPADE_IPC_HDR, plen, &info, err, sizeof err) < 0)
        die("load", type == SPADE_MSG_FAIL ? "the worker refused the source" : err);
    spade_ipc_buf_free(&b);
    spade_worker *w;
    if (spade_worker_adopt(sv[0], pid, &o, &info, &w) < 0) die("adopt", "out of memory");

    double values[SPADE_INFO_MAX_PARAMS];
    if (spade_params_parse(&info, j->params, values, err, sizeof err) < 0) die("params", err);
    spade_failure f;
    int first;
    if (spade_worker_add_instances(w, j->n, info.n_params ? values : NULL, &first, &f) < 0)
        die("add_instances", f.message);
    int *ids = malloc((size_t)j->n * sizeof *ids);
    uint64_t *seeds = malloc((size_t)j->n * sizeof *seeds);
    unsigned char *ended = calloc((size_t)j->n, 1);
    spade_step_result *res = malloc((size_t)j->n * sizeof *res);
    const char **acts = malloc((size_t)j->n * sizeof *acts);
    size_t *lens = malloc((size_t)j->n * sizeof *lens);
    uint32_t *ops = malloc((size_t)j->n * sizeof *ops);
    if (!ids || !seeds || !ended || !res || !acts || !lens || !ops) die("malloc", "out of memory");
    for (int i = 0; i < j->n; i++) {
        ids[i] = first + i;
        seeds[i] = (uint64_t)i;
    }
    if (spade_worker_reset(w, j->n, ids, seeds, res, &f) < 0) die("reset", f.message);
    unsigned long bytes = 0;
    for (long r = 0; r < j->rounds; r++) {
        /* Auto-reset as the vector env does: an ended episode restarts. */
        fill_actions(j, r, acts, lens);
        for (int i = 0; i < j->n; i++) {
            ops[i] = ended[i] ? SPADE_OP_RESET : SPADE_OP_STEP;
            seeds[i] = (uint64_t)i + (uint64_t)(r + 1) * (uint64_t)j->n;
        }
        if (spade_worker_batch_send(w, j->n, ids, ops, seeds, acts, lens, &f) < 0 ||
            spade_worker_batch_recv(w, res, &f) < 0)
            die("step", f.message);
        for (int i = 0; i < j->n; i++) {
            ended[i] = res[i].terminated || res[i].truncated;
            bytes += res[i].obs_len;
        }
    }
    printf("worker: %d x %ld steps, %lu bytes of observations\n", j->n, j->rounds, bytes);
    /* End the worker by closing its socket (it exits and callgrind writes its
     * profile); freeing the handle would SIGKILL it first. */
    shutdown(sv[0], SHUT_RDWR);
    copy_fifo(fifo_in, out, pid);
    unlink(fifo);
    rmdir(dir);
    /* copy_fifo reaped the worker: the handle must not signal its pid again. */
    w->reaped = 1;
    close(w->sock);
    w->sock = -1;
    spade_worker_free(w);
    free(ids);
    free(seeds);
    free(ended);
    free(res);
    free(acts);
    free(lens);
    free(ops);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--serve") == 0) return serve(atoi(argv[2]));
    job j;
    if (argc > 2 && strcmp(argv[1], "--worker-profile") == 0) {
        parse_job(&j, argc - 3, argv + 3);
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) die("readlink /proc/self/exe", strerror(errno));
        self[n] = '\0';
        int rc = run_worker(&j, argv[2], self);
        free(j.src);
        free(j.spec);
        return rc;
    }
    parse_job(&j, argc - 1, argv + 1);
    int rc = run_vecenv(&j);
    free(j.src);
    free(j.spec);
    return rc;
}
