/* test_policy_pretrain.c — Check suite for `spade pretrain` (cli/cmd_pretrain.c,
 * linked in directly): a short run writes its log and checkpoint, a second run
 * resumes from it, and config mistakes are usage errors naming file, line and key.
 * Not a test of the model itself (tests/test_policy.c).
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../cli/cmd_pretrain.h"
#include "policy/policy.h"
#include "testutil.h"

static char dir[256];

static void write_file(const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void write_config(long steps, const char *extra) {
    char text[2048];
    snprintf(text, sizeof text,
             "; tiny pretraining run\n[policy]\nlayers = 1\nheads = 2\nwidth = 16\ncontext = 32\n"
             "backend = cpu\nseed = 3\n\n[pretrain]\ndata = %s/data\nout = %s/out\nsteps = %ld\n"
             "batch = 2\nlr = 1e-3\nwarmup = 2\ncheckpoint_every = 3\nsample_every = 3\n"
             "sample_tokens = 12\n%s",
             dir, dir, steps, extra);
    write_file("run.ini", text);
}

/* Runs the command with stdout and stderr captured into dir/out.txt. */
static int run(char *captured, size_t cap) {
    char path[512], ini[512];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    snprintf(ini, sizeof ini, "%s/run.ini", dir);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    char *argv[] = {"pretrain", ini, NULL};
    int rc = spade_cmd_pretrain(2, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    FILE *f = fopen(path, "r");
    size_t n = fread(captured, 1, cap - 1, f);
    captured[n] = 0;
    fclose(f);
    return rc;
}

static int count_lines(const char *path, const char *needle, long *last_step) {
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle)) {
            n++;
            char *s = strstr(line, "\"step\":");
            if (s && last_step) *last_step = atol(s + 7);
        }
    fclose(f);
    return n;
}

static void setup(void) {
    tu_mkdtemp(dir, sizeof dir, "pretrain");
    char d[512];
    snprintf(d, sizeof d, "%s/data", dir);
    ck_assert_int_eq(mkdir(d, 0755), 0);
    write_file("data/a.txt", "int main(void) { return 0; }\n/* the maze has four exits */\n");
    write_file("data/b.c", "static int step(int x) { return x + 1; }\nvoid reset(void) {}\n");
}

static void teardown(void) { tu_rm_rf(dir); }

START_TEST(test_pretrain_runs_and_resumes) {
    static char out[1 << 16];
    write_config(6, "");
    int rc = run(out, sizeof out);
    ck_assert_msg(rc == 0, "pretrain failed: %s", out);
    ck_assert_ptr_nonnull(strstr(out, "sample at step 3"));
    char log[512], ckpt[512], err[256];
    snprintf(log, sizeof log, "%s/out/pretrain.jsonl", dir);
    snprintf(ckpt, sizeof ckpt, "%s/out/policy.ckpt", dir);
    long last = 0;
    ck_assert_int_eq(count_lines(log, "\"event\":\"step\"", &last), 6);
    ck_assert_int_eq(last, 6);
    ck_assert_int_eq(count_lines(log, "\"event\":\"checkpoint\"", NULL), 2);
    ck_assert_int_eq(count_lines(log, "\"event\":\"sample\"", NULL), 2);
    spade_policy *p = NULL;
    ck_assert_msg(spade_policy_load(&p, ckpt, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(spade_policy_steps(p), 6);
    spade_policy_free(p);
    /* a longer run with the same out resumes at step 7 */
    write_config(9, "");
    rc = run(out, sizeof out);
    ck_assert_msg(rc == 0, "resume failed: %s", out);
    ck_assert_ptr_nonnull(strstr(out, "resuming at step 6"));
    ck_assert_int_eq(count_lines(log, "\"event\":\"step\"", &last), 9);
    ck_assert_int_eq(last, 9);
    ck_assert(spade_policy_load(&p, ckpt, NULL, err, sizeof err) == 0);
    ck_assert_int_eq(spade_policy_steps(p), 9);
    spade_policy_free(p);
    /* a different model in the same out is refused, not overwritten */
    write_config(12, "");
    char text[2048];
    snprintf(text, sizeof text,
             "[policy]\nlayers = 2\nheads = 2\nwidth = 16\ncontext = 32\n[pretrain]\ndata = %s/data\nout = %s/out\n",
             dir, dir);
    write_file("run.ini", text);
    ck_assert_int_eq(run(out, sizeof out), 1);
    ck_assert_ptr_nonnull(strstr(out, "cannot resume"));
}
END_TEST

START_TEST(test_pretrain_config_errors) {
    static char out[1 << 16];
    write_config(3, "colour = blue\n");
    ck_assert_int_eq(run(out, sizeof out), 2);
    ck_assert_msg(strstr(out, "run.ini:20:") && strstr(out, "colour"), "%s", out);
    write_config(3, "[training]\nx = 1\n");
    ck_assert_int_eq(run(out, sizeof out), 2);
    ck_assert_msg(strstr(out, "[training]"), "%s", out);
    write_config(3, "batch = many\n");
    ck_assert_int_eq(run(out, sizeof out), 2);
    ck_assert_msg(strstr(out, "batch") && strstr(out, "many"), "%s", out);
    /* an integer key given a fraction is an error, not silently truncated */
    write_config(3, "batch = 2.5\n");
    ck_assert_int_eq(run(out, sizeof out), 2);
    ck_assert_msg(strstr(out, "run.ini:20:") && strstr(out, "batch") && strstr(out, "2.5"), "%s", out);
    write_config(3, "seed = 7.9\n");
    ck_assert_int_eq(run(out, sizeof out), 2);
    ck_assert_msg(strstr(out, "seed"), "%s", out);
    char text[1024];
    snprintf(text, sizeof text, "[policy]\nheads = 3\nwidth = 16\n[pretrain]\ndata = %s/data\n", dir);
    write_file("run.ini", text);
    ck_assert_int_eq(run(out, sizeof out), 2);
    ck_assert_msg(strstr(out, "policy.heads"), "%s", out);
    snprintf(text, sizeof text, "[policy]\nlayers = zero\n");
    write_file("run.ini", text);
    ck_assert_int_eq(run(out, sizeof out), 2);
    ck_assert_msg(strstr(out, "run.ini:2:") && strstr(out, "layers"), "%s", out);
    write_file("run.ini", "[pretrain]\ndata = /nonexistent/spade-data\n");
    ck_assert_int_eq(run(out, sizeof out), 1);
    ck_assert_msg(strstr(out, "/nonexistent/spade-data"), "%s", out);
}
END_TEST

int main(void) {
    Suite *s = suite_create("policy_pretrain");
    TCase *t = tcase_create("pretrain");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_pretrain_runs_and_resumes);
    tcase_add_test(t, test_pretrain_config_errors);
    suite_add_tcase(s, t);
    return tu_run(s);
}
