/* test_hostile.c — runs every program of tests/hostile/ in the sandbox and checks
 * that it gets exactly the outcome its `expect:` line declares, and that it harmed
 * nothing on the way.
 *
 * What it is: the containment test of core/sandbox. For each program: load it in
 * a fresh worker, add two instances, reset, step them with varied actions (plain
 * text, empty, 1 MB, binary with NULs, a tool call, split-phase), ask for a hint
 * and a solve; the first failure's outcome (or ok) must equal the declared one.
 * Then: no fd leaked, no zombie to reap, the sandbox's process tree back to its
 * idle size, no file created (the run happens in an empty mkdtemp cwd, and no
 * /tmp/spade_hostile_pwned* appears), no /etc/passwd line and no SPADE_PWNED (what a
 * program says when a refused call succeeded) in any returned text, nor the
 * secret this test puts in its own environment, argv and heap before the
 * sandbox starts (scan_secrets.c scans the worker's memory for them; see
 * test_secret_scan), and a well-behaved environment still loads and steps. One line per program is printed
 * (name, expected, got, ms). SPADE_HOSTILE_ONLY=substring runs a subset.
 *
 * What it is not: a test of the environments' semantics (tests of the host and
 * the runtime do that), nor of the sandbox's throughput (bench/).
 *
 * Program files: the first comment holds `expect: WORD` (a spade_outcome_name
 * word), `tries: ...`, and optionally `send: empty` (send 0 bytes instead of the
 * file) or `fill: MARKER COUNT TEXT` lines (the first MARKER after the comment is
 * replaced by COUNT copies of TEXT, with \n \t \\ \0 \xHH escapes): that is how
 * 10 MB sources and 200000 nested parentheses are made without storing them.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "testutil.h"

#define PWNED_GLOB "/tmp/spade_hostile_pwned*"
/* Text no worker may ever return: a line of /etc/passwd, and the word the
 * programs say when an attack that should have been refused succeeded. */
static const char *leak_marks[] = {"root:x:0:0", "SPADE_PWNED", NULL, NULL};
/* The secrets this test plants in its own process before the sandbox starts
 * (main): a random value in the environment variable SPADE_HOSTILE_SECRET, a
 * random argv token after --spade-planted-argv-, and a copy of the secret on
 * its heap. No worker may ever say either value (leak_marks[2] and [3]). */
#define SECRET_VAR "SPADE_HOSTILE_SECRET"
#define ARGV_PREFIX "--spade-planted-argv-"
static char secret[40], argv_token[40];
static char *heap_secret;
#define BIG_ACTION_LEN 1000000 /* under SPADE_ACTION_MAX (1 MiB) */
#define IDLE_WAIT_MS 3000

typedef struct program {
    char name[NAME_MAX + 1];
    int expect; /* spade_outcome, or -1 when the expect line is missing/unknown */
    char word[64]; /* the expect word as written */
    char *src; /* what is sent to the sandbox (after send:/fill:) */
    size_t len;
    char parse_err[256];
} program;

static program *progs;
static int nprogs;
static spade_sandbox *sb;
static char workdir[PATH_MAX];
static int idle_procs = -1;
static pid_t zygote_pid; /* our only child: it must survive every program */
static char *big_action;
static int n_ok, n_bad;

/* A well-behaved environment, kept here rather than in tests/hostile/ so the
 * "parent unharmed" check never depends on a file under test. */
static const char REF_ENV[] = "#include <spade/dsl.h>\n"
                              "ENV(\"ref\", \"Say back the number.\", .max_steps = 5)\n"
                              "STATE { long n; };\n"
                              "RESET { S->n = rand_range(1, 9); say(\"Number %ld.\", S->n); }\n"
                              "STEP { if (parse_int(action) == S->n) win(); else say(\"No.\"); }\n"
                              "HINT { say(\"Repeat it.\"); }\n";

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* ---- reading the programs --------------------------------------------------- */

static int read_file(const char *path, char **out, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return -1;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(fp);
    if (!buf) return -1;
    *out = buf;
    *len = n;
    return 0;
}

/* Decodes the escapes of a fill TEXT in place; returns its length (may hold NULs). */
static size_t unescape(char *s) {
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r != '\\' || !r[1]) {
            *w++ = *r;
            continue;
        }
        r++;
        switch (*r) {
        case 'n': *w++ = '\n'; break;
        case 't': *w++ = '\t'; break;
        case '0': *w++ = '\0'; break;
        case 'x': {
            unsigned v = 0;
            int k;
            for (k = 0; k < 2 && r[1] && strchr("0123456789abcdefABCDEF", r[1]); k++, r++)
                v = v * 16 + (unsigned)(r[1] <= '9' ? r[1] - '0' : (r[1] | 32) - 'a' + 10);
            *w++ = (char)v;
            break;
        }
        default: *w++ = *r; break;
        }
    }
    return (size_t)(w - s);
}

/* Replaces the first `marker` in buf[from..len) by count copies of text. */
static int apply_fill(char **buf, size_t *len, size_t from, const char *marker, long count, const char *text,
                      size_t tlen) {
    size_t ml = strlen(marker);
    char *at = memmem(*buf + from, *len - from, marker, ml);
    if (!at || count < 0 || count > 100000000L) return -1;
    size_t pre = (size_t)(at - *buf), add = (size_t)count * tlen;
    size_t nlen = *len - ml + add;
    char *nb = malloc(nlen + 1);
    if (!nb) return -1;
    memcpy(nb, *buf, pre);
    for (long i = 0; i < count; i++) memcpy(nb + pre + (size_t)i * tlen, text, tlen);
    memcpy(nb + pre + add, at + ml, *len - pre - ml);
    nb[nlen] = '\0';
    free(*buf);
    *buf = nb;
    *len = nlen;
    return 0;
}

static void parse_program(program *p, const char *path) {
    p->expect = -1;
    if (read_file(path, &p->src, &p->len) != 0) {
        snprintf(p->parse_err, sizeof p->parse_err, "%.100s: cannot read", p->name);
        return;
    }
    /* The header: the first comment, which must start the file. */
    char *end = p->len >= 2 ? memmem(p->src, p->len, "*/", 2) : NULL;
    if (p->len < 2 || memcmp(p->src, "/*", 2) != 0 || !end) {
        snprintf(p->parse_err, sizeof p->parse_err, "%.100s:1: no header comment", p->name);
        return;
    }
    size_t hlen = (size_t)(end - p->src) + 2;
    char *head = strndup(p->src, hlen);
    char *e = strstr(head, "expect:");
    if (e) {
        e += 7;
        while (*e == ' ') e++;
        size_t k = 0;
        while (k + 1 < sizeof p->word && ((e[k] >= 'a' && e[k] <= 'z') || e[k] == '_')) k++;
        memcpy(p->word, e, k);
        p->word[k] = '\0';
        p->expect = spade_outcome_from_name(p->word);
    }
    if (p->expect < 0)
        snprintf(p->parse_err, sizeof p->parse_err, "%.100s:1: missing or unknown `expect:` word '%.60s'", p->name,
                 p->word);
    if (!strstr(head, "tries:")) snprintf(p->parse_err, sizeof p->parse_err, "%.100s:1: no `tries:` line", p->name);

    for (char *line = strtok(head, "\n"); line; line = strtok(NULL, "\n")) {
        char *f = strstr(line, "fill: ");
        if (!f) continue;
        char marker[64];
        long count;
        int off = 0;
        if (sscanf(f + 6, "%63s %ld %n", marker, &count, &off) < 2 || off == 0) {
            snprintf(p->parse_err, sizeof p->parse_err, "%.100s: bad fill line '%.100s'", p->name, line);
            break;
        }
        char *text = strdup(f + 6 + off);
        size_t tl = unescape(text);
        if (apply_fill(&p->src, &p->len, hlen, marker, count, text, tl) != 0)
            snprintf(p->parse_err, sizeof p->parse_err, "%.100s: fill marker %s not found", p->name, marker);
        free(text);
    }
    if (strstr(head, "send: empty")) p->len = 0;
    free(head);
}

static int cmp_prog(const void *a, const void *b) {
    return strcmp(((const program *)a)->name, ((const program *)b)->name);
}

static int load_programs(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *de;
    const char *only = getenv("SPADE_HOSTILE_ONLY");
    int cap = 0;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 3 || strcmp(de->d_name + n - 2, ".c") != 0) continue;
        if (only && *only && !strstr(de->d_name, only)) continue;
        if (nprogs == cap) {
            cap = cap ? cap * 2 : 64;
            progs = realloc(progs, (size_t)cap * sizeof *progs);
        }
        program *p = &progs[nprogs++];
        memset(p, 0, sizeof *p);
        snprintf(p->name, sizeof p->name, "%s", de->d_name);
        char path[PATH_MAX + NAME_MAX + 2];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        parse_program(p, path);
    }
    closedir(d);
    qsort(progs, (size_t)nprogs, sizeof *progs, cmp_prog);
    return 0;
}

/* ---- observing the parent's state ------------------------------------------- */

/* Entries in the worker's cwd (it must stay empty). */
static int count_workdir(char *first, size_t cap) {
    DIR *d = opendir(workdir);
    int n = 0;
    struct dirent *de;
    if (!d) return -1;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        if (n++ == 0) snprintf(first, cap, "%s", de->d_name);
    }
    closedir(d);
    return n;
}

static int count_pwned(char *first, size_t cap) {
    glob_t g;
    int n = 0;
    if (glob(PWNED_GLOB, 0, NULL, &g) == 0) {
        n = (int)g.gl_pathc;
        if (n > 0) snprintf(first, cap, "%s", g.gl_pathv[0]);
        globfree(&g);
    }
    return n;
}

static void remove_pwned(void) {
    glob_t g;
    if (glob(PWNED_GLOB, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            fprintf(stderr, "test_hostile: removing stale %s (left by an earlier run?)\n", g.gl_pathv[i]);
            unlink(g.gl_pathv[i]);
        }
        globfree(&g);
    }
}

/* ---- driving a worker -------------------------------------------------------- */

typedef struct run {
    int outcome;
    int signal;
    char message[1024];
    int leaked; /* a leak_marks entry seen in some text the worker returned */
    double ms;
    int steps_done;
} run;

static int fail_with(run *r, const spade_failure *f) {
    r->outcome = f->outcome;
    r->signal = f->signal;
    snprintf(r->message, sizeof r->message, "%s", f->message);
    return -1;
}

static void look(run *r, const char *text, size_t len) {
    for (size_t k = 0; text && k < sizeof leak_marks / sizeof leak_marks[0] && leak_marks[k]; k++)
        if (memmem(text, len, leak_marks[k], strlen(leak_marks[k]))) r->leaked = 1;
}

/* The call sequence every program goes through; stops at the first failure. */
static int drive(spade_worker *w, run *r) {
    spade_failure f;
    memset(&f, 0, sizeof f);
    int first;
    if (spade_worker_add_instances(w, 2, NULL, &first, &f) != 0) return fail_with(r, &f);
    int ids[2] = {first, first + 1};
    uint64_t seeds[2] = {11, 12};
    spade_step_result res[2];
    int done[2] = {0, 0};
    if (spade_worker_reset(w, 2, ids, seeds, res, &f) != 0) return fail_with(r, &f);
    for (int i = 0; i < 2; i++) look(r, res[i].obs, res[i].obs_len);

    static const char binary[] = "x\0y\xff\xfe\0\n\x01\x7f 42 \0";
    const char *acts[] = {"I think it is 17.", "", big_action, binary, "probe(7)", "\\boxed{42}", "probe(7)"};
    const size_t lens[] = {17, 0, BIG_ACTION_LEN, sizeof binary - 1, 8, 10, 8};
    const int nacts = (int)(sizeof acts / sizeof acts[0]);
    for (int a = 0; a < nacts; a++) {
        for (int i = 0; i < 2; i++) {
            if (!done[i]) continue;
            uint64_t s = seeds[i] + 100 + (uint64_t)a;
            if (spade_worker_reset(w, 1, &ids[i], &s, &res[i], &f) != 0) return fail_with(r, &f);
            look(r, res[i].obs, res[i].obs_len);
            done[i] = 0;
        }
        const char *pa[2] = {acts[a], acts[a]};
        size_t pl[2] = {lens[a], lens[a]};
        if (a == 3) { /* once through the split-phase path the vector env uses */
            if (spade_worker_step_send(w, 2, ids, pa, pl, &f) != 0 || spade_worker_step_recv(w, res, &f) != 0)
                return fail_with(r, &f);
        } else if (spade_worker_step(w, 2, ids, pa, pl, res, &f) != 0) {
            return fail_with(r, &f);
        }
        r->steps_done++;
        for (int i = 0; i < 2; i++) {
            look(r, res[i].obs, res[i].obs_len);
            done[i] = res[i].terminated || res[i].truncated;
        }
    }
    for (int i = 0; i < 2; i++) {
        if (!done[i]) continue;
        if (spade_worker_reset(w, 1, &ids[i], &seeds[i], &res[i], &f) != 0) return fail_with(r, &f);
        look(r, res[i].obs, res[i].obs_len);
    }
    const char *text;
    size_t len;
    if (spade_worker_hint(w, ids[0], &text, &len, &f) != 0) return fail_with(r, &f);
    look(r, text, len);
    const spade_env_info *info = spade_worker_info(w);
    if (info && info->has_solve) {
        if (spade_worker_solve(w, ids[1], &text, &len, &f) != 0) return fail_with(r, &f);
        look(r, text, len);
    }
    return 0;
}

static void run_source(const char *name, const char *src, size_t len, run *r) {
    memset(r, 0, sizeof *r);
    r->outcome = SPADE_OUT_OK;
    double t0 = now_ms();
    spade_worker *w = NULL;
    spade_failure f;
    memset(&f, 0, sizeof f);
    if (spade_worker_load(sb, name, src, len, &w, &f) != 0) {
        fail_with(r, &f);
        look(r, f.message, strnlen(f.message, sizeof f.message));
    } else {
        if (drive(w, r) != 0) look(r, r->message, strlen(r->message));
        spade_worker_free(w);
    }
    r->ms = now_ms() - t0;
}

/* A fresh well-behaved environment loads and plays a whole episode. */
static int parent_still_serves(char *why, size_t cap) {
    spade_worker *w = NULL;
    spade_failure f;
    memset(&f, 0, sizeof f);
    int id;
    uint64_t seed = 5;
    spade_step_result res;
    if (spade_worker_load(sb, "ref.c", REF_ENV, sizeof REF_ENV - 1, &w, &f) != 0 ||
        spade_worker_add_instances(w, 1, NULL, &id, &f) != 0 || spade_worker_reset(w, 1, &id, &seed, &res, &f) != 0) {
        snprintf(why, cap, "%s: %s", spade_outcome_name(f.outcome), f.message);
        spade_worker_free(w);
        return 0;
    }
    long n = -1;
    if (sscanf(res.obs, "Number %ld.", &n) != 1) {
        snprintf(why, cap, "unexpected first observation '%.60s'", res.obs);
        spade_worker_free(w);
        return 0;
    }
    char act[32];
    snprintf(act, sizeof act, "%ld", n);
    const char *pa = act;
    size_t pl = strlen(act);
    int ok = spade_worker_step(w, 1, &id, &pa, &pl, &res, &f) == 0 && res.terminated && res.success;
    if (!ok)
        snprintf(why, cap, "step: %s %s (terminated %d success %d)", spade_outcome_name(f.outcome), f.message,
                 res.terminated, res.success);
    spade_worker_free(w);
    return ok;
}

/* ---- the test ------------------------------------------------------------------ */

START_TEST(test_program) {
    program *p = &progs[_i];
    ck_assert_msg(p->parse_err[0] == '\0', "%s", p->parse_err);

    int fds_before = tu_count_fds();
    run r;
    run_source(p->name, p->src, p->len, &r);
    int fds_after = tu_count_fds();

    /* Workers are the zygote's children: a dead one may take a moment to be
     * reaped, and the zygote refills its pre-forked spare in the background, so
     * the count may be briefly above or below the idle size. */
    int procs = tu_descendants(getpid(), NULL);
    for (double t = now_ms(); procs != idle_procs && now_ms() - t < IDLE_WAIT_MS;
         procs = tu_descendants(getpid(), NULL))
        usleep(10000);
    pid_t zygote_now = 0;
    tu_descendants(getpid(), &zygote_now);
    int status;
    pid_t reaped = waitpid(-1, &status, WNOHANG);
    char file[NAME_MAX + 1] = "", pwned[PATH_MAX] = "", why[1200] = "";
    int in_cwd = count_workdir(file, sizeof file);
    int n_pwned = count_pwned(pwned, sizeof pwned);
    int serves = parent_still_serves(why, sizeof why);
    int good = r.outcome == p->expect && fds_after == fds_before && procs == idle_procs && reaped <= 0 &&
               zygote_now == zygote_pid && in_cwd == 0 && n_pwned == 0 && serves && !r.leaked;
    good ? n_ok++ : n_bad++;
    printf("hostile: %-28s expect %-18s got %-18s %8.1f ms%s\n", p->name, p->word, spade_outcome_name(r.outcome), r.ms,
           good ? "" : "   <-- FAIL");
    fflush(stdout);

    ck_assert_msg(r.outcome == p->expect, "%s: expected %s, got %s (signal %d, after %d steps): %s", p->name, p->word,
                  spade_outcome_name(r.outcome), r.signal, r.steps_done, r.message);
    ck_assert_msg(
        !r.leaked,
        "%s: some text the worker returned contains '%s', '%s', or this test's planted secret (%s=...) or argv token",
        p->name, leak_marks[0], leak_marks[1], SECRET_VAR);
    ck_assert_msg(fds_after == fds_before, "%s: %d fds open before, %d after", p->name, fds_before, fds_after);
    ck_assert_msg(reaped <= 0, "%s: waitpid reaped pid %d, a child of the test itself", p->name, (int)reaped);
    ck_assert_msg(zygote_now == zygote_pid, "%s: the zygote (pid %d) is gone; our child is now %d", p->name,
                  (int)zygote_pid, (int)zygote_now);
    ck_assert_msg(procs == idle_procs, "%s: %d processes under the test, %d when idle (after %d ms)", p->name, procs,
                  idle_procs, IDLE_WAIT_MS);
    ck_assert_msg(in_cwd == 0, "%s: the worker's cwd now holds %d entries (first: %s)", p->name, in_cwd, file);
    ck_assert_msg(n_pwned == 0, "%s: %s exists", p->name, pwned);
    ck_assert_msg(serves, "%s: afterwards a well-behaved environment fails: %s", p->name, why);
}
END_TEST

/* The set itself: enough programs, each outcome the brief names is exercised, and
 * some must pass, so the runner cannot be "failing everything". */
START_TEST(test_coverage) {
    int per[SPADE_OUT_COUNT_] = {0};
    for (int i = 0; i < nprogs; i++)
        if (progs[i].expect >= 0 && progs[i].expect < SPADE_OUT_COUNT_) per[progs[i].expect]++;
    if (getenv("SPADE_HOSTILE_ONLY") && *getenv("SPADE_HOSTILE_ONLY")) return;
    ck_assert_int_ge(nprogs, 45);
    ck_assert_int_ge(per[SPADE_OUT_OK], 5);
    const spade_outcome must[] = {SPADE_OUT_COMPILE, SPADE_OUT_LINK,     SPADE_OUT_INVALID,
                                  SPADE_OUT_TIMEOUT, SPADE_OUT_CRASH,    SPADE_OUT_SYSCALL,
                                  SPADE_OUT_OOM,     SPADE_OUT_PROTOCOL, SPADE_OUT_OUTPUT};
    for (size_t k = 0; k < sizeof must / sizeof must[0]; k++)
        ck_assert_msg(per[must[k]] > 0, "no program expects %s", spade_outcome_name(must[k]));
}
END_TEST

static int resolve_dir(char *out, size_t cap) {
    char base[PATH_MAX];
    const char *s = getenv("srcdir");
    if (s && *s && realpath(s, base)) {
        snprintf(out, cap, "%s/tests/hostile", base);
        if (access(out, R_OK) == 0) return 0;
    }
#ifdef SPADE_SRCDIR
    snprintf(out, cap, "%s/tests/hostile", SPADE_SRCDIR);
    if (access(out, R_OK) == 0) return 0;
#endif
    return -1;
}

/* ---- the parent's secrets ------------------------------------------------------ */

static void random_hex(char *out, size_t n) {
    unsigned char b[16];
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    for (size_t i = got; i < sizeof b; i++) /* no urandom: still unlike anything else in memory */
        b[i] = (unsigned char)(rand() ^ (int)getpid() ^ (int)i);
    for (size_t i = 0; i < sizeof b && 2 * i + 2 < n; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* Puts a random secret in our environment and a random token in our argv by
 * re-executing ourselves once; returns only in the re-executed test. */
static void plant_secrets(int argc, char **argv) {
    const char *have = getenv(SECRET_VAR);
    if (argc == 2 && have && strncmp(argv[1], ARGV_PREFIX, strlen(ARGV_PREFIX)) == 0) {
        snprintf(secret, sizeof secret, "%s", have);
        snprintf(argv_token, sizeof argv_token, "%s", argv[1] + strlen(ARGV_PREFIX));
        heap_secret = strdup(have); /* what a trainer holding an API key in a config struct has */
        leak_marks[2] = secret;
        leak_marks[3] = argv_token;
        return;
    }
    char s[40], t[40], arg[80];
    random_hex(s, sizeof s);
    random_hex(t, sizeof t);
    snprintf(arg, sizeof arg, "%s%s", ARGV_PREFIX, t);
    setenv(SECRET_VAR, s, 1);
    char *nargv[] = {argv[0], arg, NULL};
    execv("/proc/self/exe", nargv);
    perror("test_hostile: re-exec with planted secrets");
    exit(1);
}

/* One step of the scanner; its text is checked by look() and appended to all. */
static int scan_step(spade_worker *w, int id, const char *act, run *r, char **all, size_t *alllen) {
    spade_failure f;
    memset(&f, 0, sizeof f);
    spade_step_result res;
    size_t len = strlen(act);
    if (spade_worker_step(w, 1, &id, &act, &len, &res, &f) != 0) return fail_with(r, &f);
    look(r, res.obs, res.obs_len);
    char *na = realloc(*all, *alllen + res.obs_len + 1);
    if (!na) return -1;
    memcpy(na + *alllen, res.obs, res.obs_len);
    *alllen += res.obs_len;
    na[*alllen] = '\0';
    *all = na;
    return 0;
}

/* scan_secrets.c over every readable mapping of the zygote (the worker is a
 * fork of it), in steps of at most 8 MiB each so that each meets the call
 * deadline; a planted control value must be found, the secrets must not. */
START_TEST(test_secret_scan) {
    const program *p = NULL;
    for (int i = 0; i < nprogs; i++)
        if (strcmp(progs[i].name, "scan_secrets.c") == 0) p = &progs[i];
    if (!p) {
        printf("hostile: secret scan skipped (scan_secrets.c not selected)\n");
        return;
    }
    ck_assert_msg(secret[0] && argv_token[0], "the secrets were not planted");
    spade_worker *w = NULL;
    spade_failure f;
    memset(&f, 0, sizeof f);
    ck_assert_msg(spade_worker_load(sb, p->name, p->src, p->len, &w, &f) == 0, "load: %s", f.message);
    int id;
    uint64_t seed = 1;
    spade_step_result res;
    ck_assert_msg(spade_worker_add_instances(w, 1, NULL, &id, &f) == 0 &&
                      spade_worker_reset(w, 1, &id, &seed, &res, &f) == 0,
                  "reset: %s", f.message);
    run r;
    memset(&r, 0, sizeof r);
    char *all = NULL;
    size_t alllen = 0;
    char control[40], act[4096];
    random_hex(control, sizeof control);
    snprintf(act, sizeof act, "plant %s=%s", SECRET_VAR, control);
    ck_assert_msg(scan_step(w, id, act, &r, &all, &alllen) == 0, "plant: %s", r.message);

    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", spade_sandbox_zygote_pid(sb));
    FILE *m = fopen(path, "r");
    ck_assert_msg(m != NULL, "cannot read %s", path);
    char line[4096];
    int nregions = 0, nsteps = 0;
    size_t len = (size_t)snprintf(act, sizeof act, "scan");
    unsigned long batch = 0, total = 0;
    while (fgets(line, sizeof line, m)) {
        unsigned long lo, hi;
        char perms[8] = "";
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r') continue;
        /* [vvar] pages can fault when read; [vsyscall] is not the worker's memory;
         * a region over 256 MiB is a reservation (ASan's shadow), not data. */
        if (strstr(line, "[vvar") || strstr(line, "[vsyscall]") || hi - lo > (256ul << 20)) continue;
        nregions++;
        for (unsigned long at = lo; at < hi;) {
            unsigned long end = hi - at > (8ul << 20) - batch ? at + (8ul << 20) - batch : hi;
            len += (size_t)snprintf(act + len, sizeof act - len, " %lx-%lx", at, end);
            batch += end - at;
            total += end - at;
            at = end;
            if (batch >= (8ul << 20) || len > sizeof act - 64) {
                ck_assert_msg(scan_step(w, id, act, &r, &all, &alllen) == 0, "scan: %s", r.message);
                nsteps++;
                batch = 0;
                len = (size_t)snprintf(act, sizeof act, "scan");
            }
        }
    }
    fclose(m);
    ck_assert_msg(scan_step(w, id, act, &r, &all, &alllen) == 0, "scan: %s", r.message);
    nsteps++;
    spade_worker_free(w);
    printf("hostile: secret scan: %d regions, %.1f MiB in %d steps\n", nregions, total / 1048576.0, nsteps);
    ck_assert_msg(!strstr(all, secret), "the parent's secret environment variable reached the worker:\n%.2000s", all);
    ck_assert_msg(!strstr(all, argv_token), "the parent's argv reached the worker:\n%.2000s", all);
    ck_assert_msg(!r.leaked, "a leak mark in the scanner's text:\n%.2000s", all);
    ck_assert_msg(strstr(all, control) != NULL,
                  "the scan did not find the control value planted in its own heap:\n%.2000s", all);
    ck_assert_msg(nregions > 3, "only %d readable regions in %s", nregions, path);
    free(all);
}
END_TEST

int main(int argc, char **argv) {
    plant_secrets(argc, argv);
    char dir[PATH_MAX + 32];
    if (resolve_dir(dir, sizeof dir) != 0) {
        fprintf(stderr, "test_hostile: cannot find tests/hostile (set srcdir)\n");
        return 1;
    }
    /* Every deadline is the sandbox's; this only stops a hung sandbox from hanging make check. */
    alarm(240);
    if (load_programs(dir) != 0) {
        fprintf(stderr, "test_hostile: cannot read %s\n", dir);
        return 1;
    }
    big_action = malloc(BIG_ACTION_LEN);
    memset(big_action, 'a', BIG_ACTION_LEN);
    memcpy(big_action + BIG_ACTION_LEN - 12, " answer: 42 ", 12);

    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return 1;
    snprintf(workdir, sizeof workdir, "/tmp/spade_hostile_cwd_XXXXXX");
    if (!mkdtemp(workdir) || chdir(workdir) != 0) {
        perror("test_hostile: mkdtemp");
        return 1;
    }
    remove_pwned();

    spade_sandbox_opts opts = {
        /* Not the default 2 s: a 10 MB source took 1.1 s of it with a loaded machine's share
         * of the CPU (and the macro bomb, once, all of it), so its outcome depended on the load.
         * 5 s: what loop_state_size.c, whose load never ends, costs. */
        .compile_timeout_s = 5.0,
        /* short, for the loop programs, but 2 s, not 0.5: ok_every_helper.c (expect ok) once
         * timed out at 0.5 s with the machine loaded (12 runnable on 2 cores) */
        .call_timeout_s = 2.0,
        .cpu_limit_s = 10,
        .mem_limit = (size_t)256 << 20, /* memory bombs hit it in a fraction of a second */
        .max_frame = (size_t)64 << 20,
    };
    char err[512];
    if (spade_sandbox_new(&sb, &opts, err, sizeof err) != 0) {
        fprintf(stderr, "test_hostile: spade_sandbox_new: %s\n", err);
        return 1;
    }
    /* Warm up, then take the idle size of the process tree. */
    char why[1200];
    if (!parent_still_serves(why, sizeof why)) {
        fprintf(stderr, "test_hostile: the reference environment fails before any hostile program: %s\n", why);
        spade_sandbox_free(sb);
        return 1;
    }
    usleep(50000);
    idle_procs = tu_descendants(getpid(), &zygote_pid);
    if (idle_procs < 0) {
        fprintf(stderr, "test_hostile: cannot count this process's descendants in /proc\n");
        spade_sandbox_free(sb);
        return 1;
    }
    printf("hostile: %d programs from %s, cwd %s, %d processes idle, zygote %d\n", nprogs, dir, workdir, idle_procs,
           (int)zygote_pid);

    Suite *s = suite_create("hostile");
    TCase *tc = tcase_create("programs");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, test_coverage);
    tcase_add_loop_test(tc, test_program, 0, nprogs);
    tcase_add_test(tc, test_secret_scan);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    /* No fork: the sandbox (its zygote is our child) must outlive every test. */
    srunner_set_fork_status(sr, CK_NOFORK);
    double t0 = now_ms();
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    printf("hostile: %d contained as declared, %d not, %.1f s\n", n_ok, n_bad, (now_ms() - t0) / 1e3);

    spade_sandbox_free(sb);
    char left[NAME_MAX + 1] = "";
    int n_left = count_workdir(left, sizeof left);
    if (n_left != 0)
        fprintf(stderr, "test_hostile: %s is not empty (%s); left in place for inspection\n", workdir, left);
    else
        rmdir(workdir);
    if (chdir(cwd) != 0) return 1;
    for (int i = 0; i < nprogs; i++) free(progs[i].src);
    free(progs);
    free(big_action);
    return failed == 0 && n_left == 0 ? 0 : 1;
}
