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
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
    /* not corpus files: a build file and a config are skipped */
    write_file("data/local.mk", "EXTRA_DIST += stdenv/maze.c\n");
    write_file("data/run.ini", "[policy]\n");
}

static void teardown(void) { tu_rm_rf(dir); }

START_TEST(test_pretrain_runs_and_resumes) {
    static char out[1 << 16];
    write_config(6, "");
    int rc = run(out, sizeof out);
    ck_assert_msg(rc == 0, "pretrain failed: %s", out);
    ck_assert_ptr_nonnull(strstr(out, "sample at step 3"));
    ck_assert_msg(strstr(out, " in 2 files in "), "only a.txt and b.c are corpus files: %s", out);
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

/* Resume must continue the very trajectory an uninterrupted run takes, not
 * just "start again at step k": same batches, same learning rate, same AdamW
 * moments and step count. Run B is stopped twice, first by SIGINT (it
 * checkpoints and exits 1), then by SIGKILL (it resumes from the last periodic
 * checkpoint and re-does the steps after it), then run to the end; run A goes
 * straight through. Every step's loss and gradient norm must be the same text
 * in both logs (and in B's log each re-done step the same as its first
 * time), and the final checkpoints the same bytes.
 * Stopping B deterministically: its stdout is a pipe shrunk to one page, read
 * unbuffered, and it prints a sample (>= 30 bytes) every step, so it can get
 * at most ~140 steps ahead of what the parent has read; the parent signals on
 * reading an early step's sample, so B stops well before step 200 however the
 * two processes are scheduled. */
static void resume_config(const char *out_name) {
    char text[2048];
    snprintf(text, sizeof text,
             "[policy]\nlayers = 2\nheads = 2\nwidth = 16\ncontext = 32\nbackend = cpu\nseed = 5\n"
             "[pretrain]\ndata = %s/data\nout = %s/%s\nsteps = 200\nbatch = 3\nlr = 3e-3\n"
             "warmup = 10\ncheckpoint_every = 7\nsample_every = 1\nsample_tokens = 8\n"
             "grad_clip = 0.5\n",
             dir, dir, out_name);
    write_file("run.ini", text);
}

/* Runs the command in a child and sends it sig once its stdout shows the
 * sample of step `at`; returns its wait status. */
static int run_child_until(long at, int sig) {
    char ini[512], want[64];
    snprintf(ini, sizeof ini, "%s/run.ini", dir);
    snprintf(want, sizeof want, "--- sample at step %ld ---", at);
    char *argv[] = {"pretrain", ini, NULL};
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    ck_assert_int_ge(fcntl(pfd[1], F_SETPIPE_SZ, 4096), 4096);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(pfd[0]);
        dup2(pfd[1], 1);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        _exit(spade_cmd_pretrain(2, argv));
    }
    close(pfd[1]);
    FILE *in = fdopen(pfd[0], "r");
    setvbuf(in, NULL, _IONBF, 0); /* what B wrote and we did not read stays in the pipe */
    char line[4096];
    int signalled = 0;
    while (fgets(line, sizeof line, in))
        if (!signalled && strstr(line, want)) {
            ck_assert_int_eq(kill(pid, sig), 0);
            signalled = 1;
        }
    fclose(in);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(signalled, "step %ld never sampled", at);
    return status;
}

/* fields[step] = the "loss...grad_norm" text of that step's event; a step
 * logged again (re-done after a crash) must repeat it exactly. Returns the
 * last step seen. */
static long step_fields(const char *path, char (*fields)[96], long max_step, int *redone) {
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[4096], cur[96];
    long last = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "\"event\":\"step\"")) continue;
        long st = atol(strstr(line, "\"step\":") + 7);
        char *a = strstr(line, "\"loss\":"), *b = strstr(line, ",\"tokens_per_s\"");
        ck_assert(a && b && st >= 1 && st <= max_step && b - a < 96);
        memset(cur, 0, sizeof cur);
        memcpy(cur, a, (size_t)(b - a));
        if (fields[st][0]) {
            ck_assert_msg(!strcmp(fields[st], cur), "step %ld re-done differently: %s, then %s", st, fields[st], cur);
            ++*redone;
        }
        memcpy(fields[st], cur, sizeof cur);
        last = st;
    }
    fclose(f);
    return last;
}

START_TEST(test_pretrain_resume_same_trajectory) {
    static char out[1 << 16];
    char logB[512], logA[512], ckB[512], ckA[512];
    snprintf(logB, sizeof logB, "%s/outB/pretrain.jsonl", dir);
    snprintf(logA, sizeof logA, "%s/outA/pretrain.jsonl", dir);
    snprintf(ckB, sizeof ckB, "%s/outB/policy.ckpt", dir);
    snprintf(ckA, sizeof ckA, "%s/outA/policy.ckpt", dir);
    resume_config("outB");
    /* SIGINT: finishes the step, checkpoints, exits 1 */
    int st = run_child_until(3, SIGINT);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "interrupted run: status %d", st);
    long stopped = 0;
    ck_assert_int_eq(count_lines(logB, "\"event\":\"interrupted\"", &stopped), 1);
    ck_assert_msg(stopped >= 3 && stopped < 200, "interrupted at step %ld", stopped);
    /* SIGKILL: no goodbye; the next run re-does the steps after the last checkpoint */
    st = run_child_until(stopped + 9, SIGKILL);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "killed run: status %d", st);
    long killed = 0;
    count_lines(logB, "\"event\":\"step\"", &killed);
    ck_assert_msg(killed >= stopped + 9 && killed < 200, "killed at step %ld", killed);
    ck_assert_msg(run(out, sizeof out) == 0, "resumed run failed: %s", out);
    ck_assert_ptr_nonnull(strstr(out, "resuming at step"));
    fprintf(stderr, "test_policy_pretrain: interrupted at step %ld, killed at step %ld, resumed to 200\n", stopped,
            killed);
    resume_config("outA");
    ck_assert_msg(run(out, sizeof out) == 0, "run failed: %s", out);
    static char fa[201][96], fb[201][96];
    memset(fa, 0, sizeof fa);
    memset(fb, 0, sizeof fb);
    int redone_a = 0, redone_b = 0;
    ck_assert_int_eq(step_fields(logA, fa, 200, &redone_a), 200);
    ck_assert_int_eq(step_fields(logB, fb, 200, &redone_b), 200);
    ck_assert_int_eq(redone_a, 0);
    ck_assert_msg(killed % 7 == 0 || redone_b > 0, "no step was re-done after the kill at %ld", killed);
    for (int k = 1; k <= 200; k++)
        ck_assert_msg(!strcmp(fa[k], fb[k]), "step %d: uninterrupted %s, resumed %s", k, fa[k], fb[k]);
    FILE *a = fopen(ckA, "rb"), *b = fopen(ckB, "rb");
    ck_assert(a && b);
    int ca, cb;
    long at = 0;
    do {
        ca = fgetc(a);
        cb = fgetc(b);
        ck_assert_msg(ca == cb, "final checkpoints differ at byte %ld", at);
        at++;
    } while (ca != EOF);
    fclose(a);
    fclose(b);
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

/* policy.tokenizer = bpe: trained on the data when no file is named, kept in
 * OUT/tokenizer.txt and in the checkpoint; resumed with it; and a run that names
 * a different tokenizer file cannot resume that checkpoint. */
START_TEST(test_pretrain_bpe) {
    static char out[1 << 16];
    write_config(4, "tokenizer_vocab = 300\n[policy]\ntokenizer = bpe\n");
    int rc = run(out, sizeof out);
    ck_assert_msg(rc == 0, "pretrain failed: %s", out);
    ck_assert_msg(strstr(out, "trained a tokenizer of"), "%s", out);
    char tokf[512], ckpt[512], err[1024];
    snprintf(tokf, sizeof tokf, "%s/out/tokenizer.txt", dir);
    snprintf(ckpt, sizeof ckpt, "%s/out/policy.ckpt", dir);
    spade_tokenizer *ft, *ct;
    ck_assert_msg(spade_tokenizer_load(&ft, tokf, err, sizeof err) == 0, "%s", err);
    ck_assert_int_gt(spade_tokenizer_vocab(ft), SPADE_VOCAB);
    ck_assert_int_le(spade_tokenizer_vocab(ft), 300);
    ck_assert_msg(spade_policy_read_tokenizer(ckpt, &ct, err, sizeof err) == 0, "%s", err);
    ck_assert(spade_tokenizer_equal(ft, ct));
    spade_tokenizer_free(ct);
    /* resume, naming the file this time */
    char extra[1024];
    snprintf(extra, sizeof extra, "[policy]\ntokenizer = bpe\ntokenizer_file = %s\n", tokf);
    write_config(6, extra);
    rc = run(out, sizeof out);
    ck_assert_msg(rc == 0, "resume failed: %s", out);
    ck_assert_msg(strstr(out, "resuming at step 4") && strstr(out, "(bpe, "), "%s", out);
    /* another tokenizer file for the same out is refused */
    spade_bpe_trainer *tr;
    spade_tokenizer *other;
    ck_assert_int_eq(spade_bpe_trainer_new(&tr, err, sizeof err), 0);
    ck_assert_int_eq(spade_bpe_trainer_add(tr, "aaaa bbbb aaaa bbbb", 19, err, sizeof err), 0);
    ck_assert_int_eq(spade_bpe_trainer_finish(tr, 300, &other, err, sizeof err), 0);
    char otherf[512];
    snprintf(otherf, sizeof otherf, "%s/other.tok", dir);
    ck_assert_int_eq(spade_tokenizer_save(other, otherf, err, sizeof err), 0);
    snprintf(extra, sizeof extra, "[policy]\ntokenizer = bpe\ntokenizer_file = %s\n", otherf);
    write_config(8, extra);
    ck_assert_int_eq(run(out, sizeof out), 1);
    ck_assert_msg(strstr(out, "cannot resume") && strstr(out, otherf), "%s", out);
    /* and the byte tokenizer for a BPE checkpoint is refused too */
    write_config(8, "");
    ck_assert_int_eq(run(out, sizeof out), 1);
    ck_assert_msg(strstr(out, "tokenizer bpe"), "%s", out);
    spade_bpe_trainer_free(tr);
    spade_tokenizer_free(other);
    spade_tokenizer_free(ft);
}
END_TEST

/* A relative data path is taken from the config file's directory, not the
 * working directory (an installed config names ../stdenv). */
START_TEST(test_pretrain_relative_data) {
    static char out[1 << 16];
    char text[1024];
    snprintf(text, sizeof text,
             "[policy]\nlayers = 1\nheads = 2\nwidth = 16\ncontext = 32\nbackend = cpu\n[pretrain]\ndata = data\n"
             "out = %s/out\nsteps = 1\nbatch = 1\nsample_every = 0\ncheckpoint_every = 0\n",
             dir);
    write_file("run.ini", text);
    char cwd[4096];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir("/"), 0);
    int rc = run(out, sizeof out);
    ck_assert_int_eq(chdir(cwd), 0);
    char want[600];
    snprintf(want, sizeof want, " in 2 files in %s/data", dir);
    ck_assert_msg(rc == 0 && strstr(out, want), "rc %d: %s", rc, out);
}
END_TEST

int main(void) {
    Suite *s = suite_create("policy_pretrain");
    TCase *t = tcase_create("pretrain");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_pretrain_relative_data);
    tcase_set_timeout(t, 300); /* resume_same_trajectory took 22 s with the machine loaded (8 runnable on 2 cores) */
    tcase_add_test(t, test_pretrain_runs_and_resumes);
    tcase_add_test(t, test_pretrain_config_errors);
    tcase_add_test(t, test_pretrain_resume_same_trajectory);
    tcase_add_test(t, test_pretrain_bpe);
    suite_add_tcase(s, t);
    return tu_run(s);
}
