/* test_registry.c — Check suite for core/registry: spec parsing, lookup by name
 * along SPADE_PATH, listing (with shadowing and broken files), and hot reload:
 * a changed file serves new episodes; a broken change keeps the old version
 * serving and reports the error with its line.
 * Every file is written under a mkdtemp() directory and removed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"
#include "testutil.h"

static char tmp[256];

static void mk_tmp(void) { tu_mkdtemp(tmp, sizeof tmp, "registry"); }

static void rm_tmp(void) {
    if (tmp[0]) tu_rm_rf(tmp);
    tmp[0] = 0;
}

static void write_file(const char *path, const char *text) {
    /* write to a side file and rename: the way editors save, and no reader
     * ever sees half a file */
    char side[1100];
    snprintf(side, sizeof side, "%s.tmp", path);
    FILE *f = fopen(side, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(rename(side, path), 0);
}

static char *path_in(const char *rel) {
    static char buf[8][1024];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 1024, "%s/%s", tmp, rel);
    return p;
}

/* An environment that says "version V, seed N" on reset. */
static void write_env(const char *path, const char *name, int version) {
    char text[2048];
    snprintf(
        text, sizeof text,
        "#include <spade/dsl.h>\n"
        "ENV(\"%s\", \"Test environment version %d.\", .max_steps = 3, .family = \"test\")\n"
        "PARAM(int, k, 1, 0, 9)\n"
        "STATE { long n; };\n"
        "RESET { say(\"version %d k %%d\", k); }\n"
        "STEP { if (action_len == 5 && !memcmp(action, \"crash\", 5)) { volatile long *p = 0; *p = 1; } finish(1); }\n"
        "HINT { say(\"any\"); }\n",
        name, version, version);
    write_file(path, text);
}

/* ---- specs ---------------------------------------------------------------- */

START_TEST(spec_parsing) {
    spade_spec s;
    char err[512];
    struct {
        const char *in, *target, *params;
    } ok[] = {
        {"maze", "maze", ""},
        {"maze:size=9,walls=0.3", "maze", "size=9,walls=0.3"},
        {"maze:", "maze", ""},
        {"stdenv/maze.c:size=9", "stdenv/maze.c", "size=9"},
        {"a:b.c", "a:b.c", ""}, /* ':' inside a path is kept */
        {"dir:with:colons/f.c", "dir:with:colons/f.c", ""}, /* nothing param-like after the last ':' */
        {"/tmp/x:y/z.c:lo=1,hi=2", "/tmp/x:y/z.c", "lo=1,hi=2"},
        {"add:lo=-5", "add", "lo=-5"},
        {"add: lo = 3 ", "add", " lo = 3 "},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        ck_assert_msg(spade_spec_parse(ok[i].in, &s, err, sizeof err) == 0, "%s: %s", ok[i].in, err);
        ck_assert_str_eq(s.target, ok[i].target);
        ck_assert_str_eq(s.params, ok[i].params);
    }
    const char *bad[] = {"", ":x=1", "maze:size=", "maze:size=9,"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        ck_assert_msg(spade_spec_parse(bad[i], &s, err, sizeof err) < 0, "'%s' accepted", bad[i]);
        ck_assert_msg(strlen(err) > 0, "no message for '%s'", bad[i]);
    }
    ck_assert(spade_spec_is_path("x.c"));
    ck_assert(spade_spec_is_path("./x"));
    ck_assert(!spade_spec_is_path("maze"));
    ck_assert(spade_name_valid("maze_2-b"));
    ck_assert(!spade_name_valid("Maze"));
    ck_assert(!spade_name_valid("_x"));
    ck_assert(!spade_name_valid("a/b"));
    ck_assert(!spade_name_valid(""));
}
END_TEST

/* ---- lookup ----------------------------------------------------------------- */

START_TEST(find_along_spade_path) {
    mk_tmp();
    ck_assert_int_eq(mkdir(path_in("one"), 0755), 0);
    ck_assert_int_eq(mkdir(path_in("two"), 0755), 0);
    write_env(path_in("one/foo.c"), "foo", 1);
    write_env(path_in("two/foo.c"), "foo", 2);
    write_env(path_in("two/bar.c"), "bar", 1);
    char sp[2200], path[4096], params[256], err[2048];
    snprintf(sp, sizeof sp, "%s:%s:/nonexistent-spade-dir", path_in("one"), path_in("two"));
    spade_registry *r;
    ck_assert_int_eq(spade_registry_new(&r, sp, SPADE_REGISTRY_NO_DEFAULTS, err, sizeof err), 0);
    ck_assert_int_eq(spade_registry_num_dirs(r), 2); /* the missing directory is skipped */
    ck_assert_int_eq(spade_registry_find(r, "foo", path, sizeof path, err, sizeof err), 0);
    ck_assert_str_eq(path, path_in("one/foo.c"));
    ck_assert_int_eq(spade_registry_find(r, "bar", path, sizeof path, err, sizeof err), 0);
    ck_assert_str_eq(path, path_in("two/bar.c"));
    ck_assert_int_eq(spade_registry_find(r, "nope", path, sizeof path, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "nope") && strstr(err, path_in("two")), "the message says where it looked: %s", err);
    ck_assert_int_eq(spade_registry_find(r, "Bad Name", path, sizeof path, err, sizeof err), -1);
    ck_assert_int_eq(spade_registry_resolve(r, "bar:k=3", path, sizeof path, params, sizeof params, err, sizeof err),
                     0);
    ck_assert_str_eq(path, path_in("two/bar.c"));
    ck_assert_str_eq(params, "k=3");
    /* a path is taken as it is */
    ck_assert_int_eq(spade_registry_find(r, path_in("two/foo.c"), path, sizeof path, err, sizeof err), 0);
    ck_assert_str_eq(path, path_in("two/foo.c"));
    ck_assert_int_eq(spade_registry_find(r, path_in("two/missing.c"), path, sizeof path, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "missing.c"), "%s", err);
    spade_registry_free(r);

    /* from the environment, with the default directories after it */
    setenv("SPADE_PATH", path_in("two"), 1);
    ck_assert_int_eq(spade_registry_new(&r, NULL, 0, err, sizeof err), 0);
    ck_assert_str_eq(spade_registry_dir(r, 0), path_in("two"));
    ck_assert_int_eq(spade_registry_find(r, "foo", path, sizeof path, err, sizeof err), 0);
    ck_assert_str_eq(path, path_in("two/foo.c"));
    /* the source tree's stdenv/plugins are searched (the in-tree fallback); in an
     * in-tree build they are ./stdenv itself, so compare real paths */
    int found_srcdir = 0;
    char real_src[4096], real_dir[4096];
    ck_assert_ptr_nonnull(realpath(SPADE_SRCDIR, real_src));
    for (int i = 0; i < spade_registry_num_dirs(r); i++)
        if (realpath(spade_registry_dir(r, i), real_dir))
            found_srcdir |= strncmp(real_dir, real_src, strlen(real_src)) == 0;
    ck_assert_int_eq(found_srcdir, 1);
    spade_registry_free(r);
    unsetenv("SPADE_PATH");
    rm_tmp();
}
END_TEST

START_TEST(read_source_limits) {
    mk_tmp();
    char *src, err[1024];
    size_t len;
    write_file(path_in("small.c"), "int x;\n");
    ck_assert_int_eq(spade_read_source(path_in("small.c"), &src, &len, err, sizeof err), 0);
    ck_assert_uint_eq(len, 7);
    ck_assert_str_eq(src, "int x;\n");
    free(src);
    FILE *f = fopen(path_in("big.c"), "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < SPADE_SOURCE_MAX / 8 + 1; i++) fputs("/*....*/", f);
    fclose(f);
    ck_assert_int_eq(spade_read_source(path_in("big.c"), &src, &len, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "big.c") && strstr(err, "limit"), "%s", err);
    ck_assert_int_eq(spade_read_source(path_in("none.c"), &src, &len, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "none.c"), "%s", err);
    rm_tmp();
}
END_TEST

/* ---- with a sandbox ------------------------------------------------------------ */

static spade_sandbox *sb;

static void sb_setup(void) {
    sb = tu_sandbox(&(spade_sandbox_opts){.compile_timeout_s = 5.0, .call_timeout_s = 2.0});
    mk_tmp();
}
static void sb_teardown(void) {
    spade_sandbox_free(sb);
    sb = NULL;
    rm_tmp();
}

START_TEST(list_loads_every_file) {
    ck_assert_int_eq(mkdir(path_in("one"), 0755), 0);
    ck_assert_int_eq(mkdir(path_in("two"), 0755), 0);
    write_env(path_in("one/foo.c"), "foo", 1);
    write_env(path_in("two/foo.c"), "foo", 2);
    write_env(path_in("two/bar.c"), "bar", 1);
    write_file(path_in("two/broken.c"), "#include <spade/dsl.h>\nENV(\"broken\", \"x\")\nthis is not C;\n");
    write_file(path_in("two/notes.txt"), "not an environment\n");
    char sp[2200], err[1024];
    snprintf(sp, sizeof sp, "%s:%s", path_in("one"), path_in("two"));
    spade_registry *r;
    ck_assert_int_eq(spade_registry_new(&r, sp, SPADE_REGISTRY_NO_DEFAULTS, err, sizeof err), 0);
    spade_env_listing *L;
    int n;
    ck_assert_int_eq(spade_registry_list(r, sb, &L, &n, err, sizeof err), 0);
    ck_assert_int_eq(n, 4);
    /* search order, then names sorted within a directory */
    ck_assert_str_eq(L[0].name, "foo");
    ck_assert_int_eq(L[0].shadowed, 0);
    ck_assert_int_eq(L[0].ok, 1);
    ck_assert_str_eq(L[0].info.description, "Test environment version 1.");
    ck_assert_str_eq(L[0].info.family, "test");
    ck_assert_int_eq(L[0].info.n_params, 1);
    ck_assert_str_eq(L[0].info.params[0].name, "k");
    ck_assert(L[0].info.params[0].max == 9);
    ck_assert_str_eq(L[1].name, "bar");
    ck_assert_int_eq(L[1].ok, 1);
    ck_assert_str_eq(L[2].name, "broken");
    ck_assert_int_eq(L[2].ok, 0);
    ck_assert_msg(strstr(L[2].error, "broken.c:3"), "the error names file and line: %s", L[2].error);
    ck_assert_str_eq(L[3].name, "foo");
    ck_assert_int_eq(L[3].shadowed, 1);
    free(L);
    /* without a sandbox: names only */
    ck_assert_int_eq(spade_registry_list(r, NULL, &L, &n, err, sizeof err), 0);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(L[1].ok, 0);
    free(L);
    spade_registry_free(r);
}
END_TEST

/* The first observation of a fresh episode on the version h serves now. */
static void episode_obs(spade_hotenv *h, char *out, size_t cap, int *reloaded, int *generation) {
    spade_hotenv_version *v;
    ck_assert_int_eq(spade_hotenv_acquire(h, &v, reloaded), 0);
    int id;
    spade_failure f;
    ck_assert_int_eq(spade_worker_add_instances(v->worker, 1, v->param_values, &id, &f), 0);
    uint64_t seed = 1;
    spade_step_result r;
    ck_assert_msg(spade_worker_reset(v->worker, 1, &id, &seed, &r, &f) == 0, "%s", f.message);
    snprintf(out, cap, "%.*s", (int)r.obs_len, r.obs);
    if (generation) *generation = v->generation;
    spade_hotenv_release(h, v);
}

static int callback_calls;
static char callback_msg[1200];
static void on_error(void *ctx, const char *path, const spade_failure *f) {
    (void)ctx;
    (void)path;
    callback_calls++;
    snprintf(callback_msg, sizeof callback_msg, "%s", f->message);
}

START_TEST(hot_reload) {
    const char *p = path_in("hot.c");
    write_env(p, "hot", 1);
    spade_hotenv *h;
    spade_failure f;
    ck_assert_msg(spade_hotenv_new(&h, sb, p, "k=4", &f) == 0, "%s", f.message);
    spade_hotenv_set_error_callback(h, on_error, NULL);
    char obs[256];
    int reloaded = -1, gen = 0;
    episode_obs(h, obs, sizeof obs, &reloaded, &gen);
    ck_assert_str_eq(obs, "version 1 k 4");
    ck_assert_int_eq(reloaded, 0);
    ck_assert_int_eq(gen, 1);

    /* An episode that started on version 1 keeps running on it after a reload. */
    spade_hotenv_version *old;
    ck_assert_int_eq(spade_hotenv_acquire(h, &old, NULL), 0);
    int old_id;
    ck_assert_int_eq(spade_worker_add_instances(old->worker, 1, old->param_values, &old_id, &f), 0);

    /* changed file: new behaviour for new episodes, without a restart */
    write_env(p, "hot", 2);
    episode_obs(h, obs, sizeof obs, &reloaded, &gen);
    ck_assert_str_eq(obs, "version 2 k 4");
    ck_assert_int_eq(reloaded, 1);
    ck_assert_int_eq(gen, 2);
    ck_assert_str_eq(spade_hotenv_last_error(h), "");
    uint64_t seed = 3;
    spade_step_result r;
    ck_assert_int_eq(spade_worker_reset(old->worker, 1, &old_id, &seed, &r, &f), 0);
    ck_assert_int_eq(strncmp(r.obs, "version 1", 9), 0);
    spade_hotenv_release(h, old);

    /* unchanged file: no reload */
    episode_obs(h, obs, sizeof obs, &reloaded, &gen);
    ck_assert_int_eq(reloaded, 0);
    ck_assert_int_eq(gen, 2);

    /* broken change: the old version keeps serving, the error names the line */
    write_file(p, "#include <spade/dsl.h>\n"
                  "ENV(\"hot\", \"Broken.\", .max_steps = 3)\n"
                  "STATE { long n; };\n"
                  "RESET { say(\"version 3\"); }\n"
                  "STEP { finish(1) }\n"
                  "HINT { say(\"any\"); }\n");
    episode_obs(h, obs, sizeof obs, &reloaded, &gen);
    ck_assert_str_eq(obs, "version 2 k 4");
    ck_assert_int_eq(reloaded, 0);
    ck_assert_int_eq(gen, 2);
    const char *e = spade_hotenv_last_error(h);
    ck_assert_msg(strstr(e, "hot.c:5"), "the error names the file and line: %s", e);
    ck_assert_int_eq(spade_hotenv_last_failure(h)->outcome, SPADE_OUT_COMPILE);
    ck_assert_int_eq(callback_calls, 1);
    ck_assert_msg(strstr(callback_msg, "hot.c:5"), "%s", callback_msg);
    /* the same broken content is not compiled again on every episode */
    episode_obs(h, obs, sizeof obs, &reloaded, &gen);
    ck_assert_int_eq(callback_calls, 1);
    ck_assert_msg(strstr(spade_hotenv_last_error(h), "hot.c:5"), "the error stands");

    /* params that the new version rejects are a failed reload too */
    write_file(p, "#include <spade/dsl.h>\n"
                  "ENV(\"hot\", \"No k.\", .max_steps = 3)\n"
                  "STATE { long n; };\n"
                  "RESET { say(\"version 4\"); }\n"
                  "STEP { finish(1); }\n"
                  "HINT { say(\"any\"); }\n");
    episode_obs(h, obs, sizeof obs, &reloaded, &gen);
    ck_assert_str_eq(obs, "version 2 k 4");
    ck_assert_msg(strstr(spade_hotenv_last_error(h), "k"), "%s", spade_hotenv_last_error(h));
    ck_assert_int_eq(callback_calls, 2);

    /* fixed: reloads */
    write_env(p, "hot", 5);
    episode_obs(h, obs, sizeof obs, &reloaded, &gen);
    ck_assert_str_eq(obs, "version 5 k 4");
    ck_assert_int_eq(reloaded, 1);
    ck_assert_int_eq(gen, 3);
    ck_assert_str_eq(spade_hotenv_last_error(h), "");

    /* removed file: the last version keeps serving */
    ck_assert_int_eq(unlink(p), 0);
    episode_obs(h, obs, sizeof obs, &reloaded, &gen);
    ck_assert_str_eq(obs, "version 5 k 4");
    ck_assert_msg(strstr(spade_hotenv_last_error(h), "hot.c"), "%s", spade_hotenv_last_error(h));
    spade_hotenv_free(h);
}
END_TEST

START_TEST(hot_reload_survives_a_crash) {
    const char *p = path_in("crashy.c");
    write_env(p, "crashy", 1);
    spade_hotenv *h;
    spade_failure f;
    ck_assert_msg(spade_hotenv_new(&h, sb, p, NULL, &f) == 0, "%s", f.message);
    spade_hotenv_version *v;
    ck_assert_int_eq(spade_hotenv_acquire(h, &v, NULL), 0);
    int id;
    ck_assert_int_eq(spade_worker_add_instances(v->worker, 1, NULL, &id, &f), 0);
    uint64_t seed = 0;
    spade_step_result r;
    ck_assert_int_eq(spade_worker_reset(v->worker, 1, &id, &seed, &r, &f), 0);
    const char *a = "crash";
    size_t al = 5;
    ck_assert_int_ne(spade_worker_step(v->worker, 1, &id, &a, &al, &r, &f), 0);
    ck_assert_int_eq(f.outcome, SPADE_OUT_CRASH);
    spade_hotenv_release(h, v);
    /* the next episode gets a live worker running the same source */
    char obs[256];
    int gen;
    episode_obs(h, obs, sizeof obs, NULL, &gen);
    ck_assert_str_eq(obs, "version 1 k 1");
    ck_assert_int_eq(gen, 1);
    spade_hotenv_free(h);
}
END_TEST

START_TEST(hot_new_reports_errors) {
    spade_hotenv *h = NULL;
    spade_failure f;
    ck_assert_int_eq(spade_hotenv_new(&h, sb, path_in("missing.c"), NULL, &f), -1);
    ck_assert_ptr_null(h);
    ck_assert_msg(strstr(f.message, "missing.c"), "%s", f.message);
    write_file(path_in("bad.c"), "#include <spade/dsl.h>\n\nint x = nope;\n");
    ck_assert_int_eq(spade_hotenv_new(&h, sb, path_in("bad.c"), NULL, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_COMPILE);
    ck_assert_msg(strstr(f.message, "bad.c:3"), "%s", f.message);
    write_env(path_in("ok.c"), "ok", 1);
    ck_assert_int_eq(spade_hotenv_new(&h, sb, path_in("ok.c"), "k=99", &f), -1);
    ck_assert_msg(strstr(f.message, "k"), "%s", f.message);
}
END_TEST

/* A change within the file system's timestamp tick: same size, same mtime
 * (restored with utimensat, as a coarse clock would leave it). Only the
 * registry's "racy" rule (compare content while the mtime is recent) sees it;
 * with that rule disabled this test fails (issue 10: nothing caught it). */
START_TEST(hot_reload_same_tick_change) {
    char *p = path_in("racy.c");
    write_env(p, "racy", 1);
    spade_hotenv *h = NULL;
    spade_failure f;
    ck_assert_msg(spade_hotenv_new(&h, sb, p, NULL, &f) == 0, "%s", f.message);
    char obs[256];
    int reloaded = 0, gen = 0;
    episode_obs(h, obs, sizeof obs, &reloaded, &gen);
    ck_assert_msg(strstr(obs, "version 1"), "%s", obs);
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    write_env(p, "racy", 2); /* same length: one digit changed */
    struct stat st2;
    ck_assert_int_eq(stat(p, &st2), 0);
    ck_assert_int_eq(st2.st_size, st.st_size);
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    ck_assert_int_eq(utimensat(AT_FDCWD, p, times, 0), 0);
    episode_obs(h, obs, sizeof obs, &reloaded, &gen);
    ck_assert_msg(strstr(obs, "version 2") && reloaded && gen == 2,
                  "a same-size change with the old mtime was missed: '%s' (generation %d)", obs, gen);
    spade_hotenv_free(h);
}
END_TEST

int main(void) {
    Suite *s = suite_create("registry");
    TCase *t = tcase_create("paths");
    tcase_add_test(t, spec_parsing);
    tcase_add_test(t, find_along_spade_path);
    tcase_add_test(t, read_source_limits);
    suite_add_tcase(s, t);
    TCase *u = tcase_create("sandboxed");
    tcase_add_checked_fixture(u, sb_setup, sb_teardown);
    tcase_set_timeout(u, 60);
    tcase_add_test(u, list_loads_every_file);
    tcase_add_test(u, hot_reload);
    tcase_add_test(u, hot_reload_survives_a_crash);
    tcase_add_test(u, hot_reload_same_tick_change);
    tcase_add_test(u, hot_new_reports_errors);
    suite_add_tcase(s, u);
    return tu_run(s);
}
