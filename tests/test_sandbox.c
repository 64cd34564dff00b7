/* test_sandbox.c — the real zygote, workers and JIT, end to end.
 *
 * What it is: Check tests of core/jit and core/sandbox with real worker
 * processes: compile errors carry the user's line; a DSL environment loads,
 * resets, steps, hints and solves; a step that never returns times out within
 * its deadline and the next worker works; crashes and floods are classified;
 * 50 load/kill cycles leak no fd and leave no zombie (and the zygote's only
 * child afterwards is its pre-forked idle worker); the sandbox's processes go
 * away with it; a spawn from a parent holding a lot of touched memory costs
 * about what it costs from a small one; the worker really is locked down.
 * What it is not: the catalogue of hostile programs (test_hostile.c) nor the
 * protocol decoders (test_ipc.c) nor the vector env (test_vecenv.c).
 */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jit/jit.h"
#include "sandbox/internal.h"
#include "sandbox/sandbox.h"
#include "testutil.h"

static spade_sandbox *new_sandbox(double call_timeout) {
    return tu_sandbox(&(spade_sandbox_opts){.call_timeout_s = call_timeout});
}

/* ---- the JIT, in process ------------------------------------------------------- */
static const char *const with_error_on_5 = "#include <spade/dsl.h>\n"
                                           "ENV(\"e\", \"d\")\n"
                                           "STATE { int a; };\n"
                                           "RESET { say(\"hi\"); }\n"
                                           "STEP { int q = ; }\n"
                                           "HINT { say(\"h\"); }\n";

START_TEST(jit_compile_error_line) {
    spade_jit *j = NULL;
    char err[1024];
    int line = -1;
    spade_jit_status kind;
    ck_assert_int_eq(
        spade_jit_compile("bad.c", with_error_on_5, strlen(with_error_on_5), &j, err, sizeof err, &line, &kind), -1);
    ck_assert_ptr_null(j);
    ck_assert_int_eq(kind, SPADE_JIT_COMPILE_ERROR);
    ck_assert_int_eq(line, 5);
    ck_assert_msg(strncmp(err, "bad.c:5:", 8) == 0, "message: %s", err);
}
END_TEST

START_TEST(jit_link_and_include_and_nul) {
    spade_jit *j = NULL;
    char err[1024];
    int line;
    spade_jit_status kind;
    const char *linkerr = "#include <spade/dsl.h>\n"
                          "ENV(\"e\", \"d\")\n"
                          "STATE { int a; };\n"
                          "RESET { say(\"hi\"); }\n"
                          "STEP {\n"
                          "  fork();\n"
                          "}\n"
                          "HINT { say(\"h\"); }\n";
    ck_assert_int_eq(spade_jit_compile("l.c", linkerr, strlen(linkerr), &j, err, sizeof err, &line, &kind), -1);
    ck_assert_int_eq(kind, SPADE_JIT_LINK_ERROR);
    ck_assert_int_eq(line, 6);
    ck_assert_ptr_nonnull(strstr(err, "'fork'"));
    ck_assert_msg(strstr(err, "\n      6 |   fork();") != NULL, "message: %s", err);

    const char *inc = "#include <spade/dsl.h>\n#include <stdio.h>\nENV(\"e\", \"d\")\n";
    ck_assert_int_eq(spade_jit_compile("i.c", inc, strlen(inc), &j, err, sizeof err, &line, &kind), -1);
    ck_assert_int_eq(kind, SPADE_JIT_COMPILE_ERROR);
    ck_assert_int_eq(line, 2);
    ck_assert_ptr_nonnull(strstr(err, "stdio.h"));

    const char nul[] = "int a;\nint b;\0int c;\n";
    ck_assert_int_eq(spade_jit_compile("n.c", nul, sizeof nul - 1, &j, err, sizeof err, &line, &kind), -1);
    ck_assert_int_eq(kind, SPADE_JIT_COMPILE_ERROR);
    ck_assert_int_eq(line, 2);
    ck_assert_ptr_nonnull(strstr(err, "NUL"));
}
END_TEST

START_TEST(jit_embedded_headers_and_symbols) {
    size_t len;
    char *src = tu_read_env("counter.c", &len);
    spade_jit *j = NULL;
    char err[1024];
    ck_assert_msg(spade_jit_compile("counter.c", src, len, &j, err, sizeof err, NULL, NULL) == 0, "%s", err);
    ck_assert_ptr_nonnull(spade_jit_symbol(j, "spade_meta"));
    ck_assert_ptr_nonnull(spade_jit_symbol(j, "spade_reset"));
    ck_assert_ptr_null(spade_jit_symbol(j, "no_such_symbol"));
    ck_assert_uint_gt(spade_jit_image_size(j), 0);
    spade_jit_free(j);
    /* The quoted spelling and the ABI header alone work too. */
    const char *quoted = "#include \"spade/env.h\"\nconst spade_env_meta spade_meta = {.abi = SPADE_ENV_ABI};\n";
    ck_assert_msg(spade_jit_compile("q.c", quoted, strlen(quoted), &j, err, sizeof err, NULL, NULL) == 0, "%s", err);
    spade_jit_free(j);
    ck_assert_ptr_nonnull(strstr(spade_jit_dsl_h, "#define SPADE_DSL_H"));
    free(src);
}
END_TEST

/* ---- the sandbox ------------------------------------------------------------------ */
START_TEST(load_and_play) {
    spade_sandbox *sb = new_sandbox(2.0);
    size_t len;
    char *src = tu_read_env("counter.c", &len);
    spade_worker *w = NULL;
    spade_failure f;
    ck_assert_msg(spade_worker_load(sb, "counter.c", src, len, &w, &f) == 0, "%s", f.message);
    ck_assert_int_eq(f.outcome, SPADE_OUT_OK);
    const spade_env_info *info = spade_worker_info(w);
    ck_assert_str_eq(info->name, "counter");
    ck_assert_int_eq(info->max_steps, 20);
    ck_assert_int_eq(info->has_solve, 1);
    int first;
    ck_assert_int_eq(spade_worker_add_instances(w, 3, NULL, &first, &f), 0);
    int ids[3] = {first, first + 1, first + 2};
    uint64_t seeds[3] = {7, 8, 7};
    spade_step_result r[3];
    ck_assert_msg(spade_worker_reset(w, 3, ids, seeds, r, &f) == 0, "%s", f.message);
    ck_assert_ptr_nonnull(strstr(r[0].obs, "Target"));
    ck_assert_str_eq(r[0].obs, r[2].obs); /* same seed, same observation */
    ck_assert_uint_eq(strlen(r[0].obs), r[0].obs_len);
    /* Play instance 0 to the end with the reference actions. */
    int done = 0;
    for (int t = 0; t < 20 && !done; t++) {
        const char *a;
        size_t alen;
        ck_assert_int_eq(spade_worker_solve(w, ids[0], &a, &alen, &f), 0);
        char act[64];
        snprintf(act, sizeof act, "%s", a);
        const char *acts[1] = {act};
        ck_assert_int_eq(spade_worker_step(w, 1, ids, acts, NULL, r, &f), 0);
        done = r[0].terminated;
    }
    ck_assert_int_eq(done, 1);
    ck_assert_int_eq(r[0].success, 1);
    const char *hint;
    size_t hlen;
    ck_assert_int_eq(spade_worker_hint(w, ids[1], &hint, &hlen, &f), 0);
    ck_assert_ptr_nonnull(strstr(hint, "toward"));
    /* The caller's mistakes are bad_call and leave the worker alive. */
    const char *acts[1] = {"+"};
    ck_assert_int_eq(spade_worker_step(w, 1, ids, acts, NULL, r, &f), -1); /* episode ended */
    ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL);
    int nobody = 999;
    ck_assert_int_eq(spade_worker_hint(w, nobody, &hint, &hlen, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL);
    double bad_param = 1000;
    ck_assert_int_eq(spade_worker_add_instances(w, 1, &bad_param, &first, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL);
    ck_assert(spade_worker_alive(w));
    ck_assert_int_eq(spade_worker_reset(w, 1, ids, seeds, r, &f), 0);
    spade_worker_free(w);
    spade_sandbox_free(sb);
    free(src);
}
END_TEST

START_TEST(compile_error_through_worker) {
    spade_sandbox *sb = new_sandbox(1.0);
    spade_worker *w = (spade_worker *)1;
    spade_failure f;
    ck_assert_int_eq(spade_worker_load(sb, "bad.c", with_error_on_5, strlen(with_error_on_5), &w, &f), -1);
    ck_assert_ptr_null(w);
    ck_assert_int_eq(f.outcome, SPADE_OUT_COMPILE);
    ck_assert_int_eq(f.line, 5);
    ck_assert_msg(strncmp(f.message, "bad.c:5:", 8) == 0, "message: %s", f.message);
    /* the message ends with the source up to the line, through the IPC too */
    ck_assert_msg(strstr(f.message, "\n      3 | STATE { int a; };\n      4 | RESET { say(\"hi\"); }\n"
                                    "      5 | STEP { int q = ; }") != NULL,
                  "message: %s", f.message);
    ck_assert_ptr_null(strstr(f.message, "      2 | "));
    spade_sandbox_free(sb);
}
END_TEST

static int moody(spade_sandbox *sb, spade_worker **w, int *id) {
    size_t len;
    char *src = tu_read_env("sb_moody.c", &len);
    spade_failure f;
    int rc = spade_worker_load(sb, "sb_moody.c", src, len, w, &f);
    free(src);
    ck_assert_msg(rc == 0, "%s", f.message);
    ck_assert_int_eq(spade_worker_add_instances(*w, 1, NULL, id, &f), 0);
    uint64_t seed = 1;
    spade_step_result r;
    ck_assert_int_eq(spade_worker_reset(*w, 1, id, &seed, &r, &f), 0);
    return 0;
}

static spade_outcome act_on(spade_worker *w, int id, const char *action, spade_failure *f) {
    spade_step_result r;
    const char *acts[1] = {action};
    return spade_worker_step(w, 1, &id, acts, NULL, &r, f) == 0 ? SPADE_OUT_OK : f->outcome;
}

START_TEST(deadline_then_trainer_goes_on) {
    const double timeout = 0.25;
    spade_sandbox *sb = new_sandbox(timeout);
    spade_worker *w;
    int id;
    moody(sb, &w, &id);
    spade_failure f;
    ck_assert_int_eq(act_on(w, id, "ok", &f), SPADE_OUT_OK);
    double t0 = spade_ipc_now();
    ck_assert_int_eq(act_on(w, id, "loop", &f), SPADE_OUT_TIMEOUT);
    double took = spade_ipc_now() - t0;
    /* Not early; and late only by what it takes to kill and reap the worker, which a loaded
     * machine can stretch to seconds: the bound is there to tell the deadline from the CPU
     * limit (10 s) or no deadline at all. */
    ck_assert_msg(took >= timeout * 0.95 && took < timeout + 5.0, "timeout after %.3f s", took);
    ck_assert_int_eq(f.signal, SIGKILL);
    ck_assert(!spade_worker_alive(w));
    ck_assert_int_eq(act_on(w, id, "ok", &f), SPADE_OUT_TIMEOUT); /* sticky */
    spade_worker_free(w);
    /* A new worker works. */
    moody(sb, &w, &id);
    ck_assert_int_eq(act_on(w, id, "ok", &f), SPADE_OUT_OK);
    spade_worker_free(w);
    spade_sandbox_free(sb);
}
END_TEST

START_TEST(crash_and_flood_classified) {
    spade_sandbox *sb = new_sandbox(2.0);
    spade_worker *w;
    int id;
    spade_failure f;
    moody(sb, &w, &id);
    ck_assert_int_eq(act_on(w, id, "crash", &f), SPADE_OUT_CRASH);
    ck_assert_int_eq(f.signal, SIGSEGV);
    ck_assert_ptr_nonnull(strstr(f.message, "sb-moody"));
    spade_worker_free(w);
    moody(sb, &w, &id);
    ck_assert_int_eq(act_on(w, id, "flood", &f), SPADE_OUT_OUTPUT);
    spade_worker_free(w);
    spade_sandbox_free(sb);
}
END_TEST

/* RLIMIT_CPU is a backstop per call, not a budget for a worker's life: a
 * worker that has used many times cpu_limit_s over many calls lives on. */
START_TEST(cpu_limit_does_not_end_long_lives) {
    spade_sandbox *sb = tu_sandbox(&(spade_sandbox_opts){.call_timeout_s = 1.0, .cpu_limit_s = 1});
    spade_worker *w;
    int id;
    moody(sb, &w, &id);
    spade_failure f;
    double t0 = spade_ipc_now(), busy = 0;
    int calls = 0;
    /* About 2.5 s of CPU in steps of a few ms (a slow machine just takes longer). */
    while (busy < 2.5 && calls < 5000) {
        double c0 = spade_ipc_now();
        ck_assert_msg(act_on(w, id, "busy", &f) == SPADE_OUT_OK, "call %d after %.2f s: %s", calls,
                      spade_ipc_now() - t0, f.message);
        busy += spade_ipc_now() - c0;
        if (++calls % 40 == 0) { /* sb-moody truncates at 50 steps */
            uint64_t seed = (uint64_t)calls;
            spade_step_result r;
            ck_assert_int_eq(spade_worker_reset(w, 1, &id, &seed, &r, &f), 0);
        }
    }
    ck_assert_double_ge(busy, 2.5);
    spade_worker_free(w);
    spade_sandbox_free(sb);
}
END_TEST

START_TEST(no_fd_leak_no_zombie) {
    /* No call here is meant to time out: a deadline a loaded machine cannot miss. */
    spade_sandbox *sb = new_sandbox(5.0);
    size_t len;
    char *walk = tu_read_env("sb_walk.c", &len);
    /* Warm up: the sandbox's own fds are open from here on. */
    int before = tu_count_fds();
    for (int cycle = 0; cycle < 50; cycle++) {
        spade_worker *w = NULL;
        spade_failure f;
        switch (cycle % 5) {
        case 0:
        case 1: { /* a good one, played and killed */
            ck_assert_msg(spade_worker_load(sb, "sb_walk.c", walk, len, &w, &f) == 0, "%s", f.message);
            int id;
            ck_assert_int_eq(spade_worker_add_instances(w, 4, NULL, &id, &f), 0);
            int ids[4] = {id, id + 1, id + 2, id + 3};
            uint64_t seeds[4] = {1, 2, 3, 4};
            spade_step_result r[4];
            ck_assert_int_eq(spade_worker_reset(w, 4, ids, seeds, r, &f), 0);
            break;
        }
        case 2: /* a compile error */
            ck_assert_int_eq(spade_worker_load(sb, "bad.c", with_error_on_5, strlen(with_error_on_5), &w, &f), -1);
            break;
        case 3: { /* a crash */
            int id;
            moody(sb, &w, &id);
            ck_assert_int_eq(act_on(w, id, "crash", &f), SPADE_OUT_CRASH);
            break;
        }
        case 4: { /* freed with a batch in flight */
            int id;
            moody(sb, &w, &id);
            const char *a = "ok";
            ck_assert_int_eq(spade_worker_step_send(w, 1, &id, &a, NULL, &f), 0);
            break;
        }
        }
        spade_worker_free(w);
    }
    ck_assert_int_eq(tu_count_fds(), before);
    /* No zombie of ours: the zygote is our only child, and alive. */
    int st;
    ck_assert_int_eq(waitpid(-1, &st, WNOHANG), 0);
    /* The zygote's only child is its pre-forked idle worker. */
    pid_t zyg = spade_sandbox_zygote_pid(sb), idle = 0;
    ck_assert_int_eq(tu_children_of(zyg, &idle), 1);
    char path[64], buf[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", idle);
    /* It may be a moment old: named and asleep on its socket soon (up to 30 s on a loaded
     * machine). */
    for (int tries = 0; tries < 6000 && !strstr(buf, "(spade-worker) S"); tries++) {
        if (tries) usleep(5000);
        FILE *fp = fopen(path, "r");
        ck_assert_ptr_nonnull(fp);
        ck_assert_ptr_nonnull(fgets(buf, sizeof buf, fp));
        fclose(fp);
    }
    ck_assert_msg(strstr(buf, "(spade-worker) S") != NULL, "idle worker: %s", buf);
    spade_sandbox_free(sb);
    /* Everything is gone with the sandbox. */
    tu_assert_reaped(-1);
    ck_assert_int_eq(kill(zyg, 0), -1);
    ck_assert_int_eq(kill(idle, 0), -1);
    ck_assert_int_eq(tu_count_fds(), before - 1); /* the zygote's control socket */
    free(walk);
}
END_TEST

START_TEST(sandbox_freed_before_its_workers) {
    spade_sandbox *sb = new_sandbox(1.0);
    spade_worker *w;
    int id;
    moody(sb, &w, &id);
    pid_t zyg = spade_sandbox_zygote_pid(sb);
    spade_sandbox_free(sb); /* the zygote stays while a worker needs it */
    spade_failure f;
    ck_assert_int_eq(act_on(w, id, "ok", &f), SPADE_OUT_OK);
    ck_assert_int_eq(kill(zyg, 0), 0);
    spade_worker_free(w);
    ck_assert_int_eq(kill(zyg, 0), -1);
    tu_assert_reaped(-1);
}
END_TEST

/* A forked child of the owner cannot use (or break) the owner's sandbox. */
START_TEST(sandbox_belongs_to_its_process) {
    spade_sandbox *sb = new_sandbox(1.0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        spade_worker *w;
        spade_failure f;
        int rc = spade_worker_load(sb, "x.c", with_error_on_5, strlen(with_error_on_5), &w, &f);
        int ok = rc == -1 && f.outcome == SPADE_OUT_BAD_CALL && strstr(f.message, "belongs") != NULL;
        spade_sandbox_free(sb); /* closes the child's copy only */
        _exit(ok ? 0 : 1);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    spade_worker *w;
    int id;
    moody(sb, &w, &id);
    spade_failure f;
    ck_assert_int_eq(act_on(w, id, "ok", &f), SPADE_OUT_OK);
    spade_worker_free(w);
    spade_sandbox_free(sb);
}
END_TEST

/* The worker as the kernel sees it: its own user namespace or not, but
 * seccomp filter mode, no_new_privs, and only fd 3. */
START_TEST(worker_is_locked_down) {
    spade_sandbox *sb = new_sandbox(1.0);
    pid_t idle = 0;
    /* spade_sandbox_new does not wait for the zygote: its exec and its first fork can take
     * seconds on a loaded machine (this waited 1 s); 30 s, left as soon as the worker is there. */
    for (int i = 0; i < 6000 && tu_children_of(spade_sandbox_zygote_pid(sb), &idle) < 1; i++) usleep(5000);
    ck_assert_int_gt(idle, 0);
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", idle);
    int seccomp = -1, nnp = -1;
    /* Just forked, it may still be locking itself down: give it up to 30 s. */
    for (int tries = 0; tries < 6000 && seccomp != 2; tries++) {
        if (tries) usleep(5000);
        FILE *fp = fopen(path, "r");
        ck_assert_ptr_nonnull(fp);
        while (fgets(line, sizeof line, fp)) {
            sscanf(line, "Seccomp: %d", &seccomp);
            sscanf(line, "NoNewPrivs: %d", &nnp);
        }
        fclose(fp);
    }
    ck_assert_int_eq(seccomp, 2);
    ck_assert_int_eq(nnp, 1);
    snprintf(path, sizeof path, "/proc/%d/fd", idle);
    DIR *d = opendir(path);
    if (d) { /* readable while we share the uid */
        int n = 0, has3 = 0;
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_name[0] != '.') {
                n++;
                has3 |= strcmp(e->d_name, "3") == 0;
            }
        closedir(d);
        ck_assert_int_eq(n, 1);
        ck_assert_int_eq(has3, 1);
    }
    spade_sandbox_free(sb);
}
END_TEST

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The fastest of n loads: what a load costs, without what the machine's load added to
 * some of them (a median of 15 loads on a loaded machine moved by 3x between two runs). */
static double min_load_s(spade_sandbox *sb, const char *src, size_t len, int n) {
    double t[32];
    for (int i = 0; i < n; i++) {
        spade_worker *w;
        spade_failure f;
        double t0 = spade_ipc_now();
        ck_assert_msg(spade_worker_load(sb, "sb_walk.c", src, len, &w, &f) == 0, "%s", f.message);
        t[i] = spade_ipc_now() - t0;
        spade_worker_free(w);
        usleep(2000); /* let the zygote fork its next idle worker, as between real loads */
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    return t[0];
}

/* The reason for the zygote: a parent that grew after spade_sandbox_new does
 * not make spawns slower (a fork of a 1 GiB parent costs many times a load). */
START_TEST(spawn_cost_independent_of_parent_size) {
    spade_sandbox *sb = new_sandbox(2.0);
    size_t len;
    char *src = tu_read_env("sb_walk.c", &len);
    double small = min_load_s(sb, src, len, 15);
    size_t big = (size_t)1 << 30;
    char *mem = malloc(big);
    ck_assert_ptr_nonnull(mem);
    memset(mem, 1, big);
    double large = min_load_s(sb, src, len, 15);
    fprintf(stderr, "fastest load: small parent %.3f ms, parent with 1 GiB touched %.3f ms (ratio %.2f)\n", small * 1e3,
            large * 1e3, large / small);
    ck_assert_msg(large < 3.0 * small + 0.002, "small %.3f ms, large %.3f ms", small * 1e3, large * 1e3);
    free(mem);
    free(src);
    spade_sandbox_free(sb);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("sandbox");
    TCase *j = tcase_create("jit");
    tcase_add_test(j, jit_compile_error_line);
    tcase_add_test(j, jit_link_and_include_and_nul);
    tcase_add_test(j, jit_embedded_headers_and_symbols);
    suite_add_tcase(s, j);
    TCase *t = tcase_create("workers");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, load_and_play);
    tcase_add_test(t, compile_error_through_worker);
    tcase_add_test(t, deadline_then_trainer_goes_on);
    tcase_add_test(t, crash_and_flood_classified);
    tcase_add_test(t, cpu_limit_does_not_end_long_lives);
    tcase_add_test(t, no_fd_leak_no_zombie);
    tcase_add_test(t, sandbox_freed_before_its_workers);
    tcase_add_test(t, worker_is_locked_down);
    tcase_add_test(t, sandbox_belongs_to_its_process);
    tcase_add_test(t, spawn_cost_independent_of_parent_size);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return tu_run(suite()); }
