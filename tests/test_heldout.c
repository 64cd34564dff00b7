/* test_heldout.c — Check suite for the held-out evaluation suite (eval/heldout/)
 * and its guard (core/heldout.h).
 *
 * What it is: the suite has the shape an evaluation needs (at least 12
 * environments, each with difficulty params, a HINT and a SOLVE, none sharing a
 * name or a source with stdenv/ or plugins/), every file of the directory is
 * installed, the registry's default search path does not find it, and the
 * guard refuses its files by directory and by content (a renamed copy
 * elsewhere too) while taking every stdenv file.
 * What it is not: the checker and SOLVE-across-params runs over these files:
 * tests/test_stdenv covers them together with stdenv/ (eval/local.mk adds them
 * to its list).
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heldout.h"
#include "host.h"
#include "jit/jit.h"
#include "registry.h"
#include "testutil.h"

#ifndef SPADE_HELDOUT_FILES
#error "SPADE_HELDOUT_FILES (the installed held-out sources) must come from the build"
#endif

#define MAX_FILES 64

static char files[MAX_FILES][256]; /* relative to the source tree */
static int n_files;

static void list_files(void) {
    char all[] = SPADE_HELDOUT_FILES;
    for (char *tok = strtok(all, " \t\n"); tok && n_files < MAX_FILES; tok = strtok(NULL, " \t\n"))
        snprintf(files[n_files++], sizeof files[0], "%s", tok);
}

static char *read_rel(const char *rel, size_t *len, char *path, size_t cap) { /* path: cap >= 8400 */
    char err[1024];
    char *src = NULL;
    snprintf(path, cap, "%s/%s", tu_srcdir(), rel);
    ck_assert_msg(spade_read_source(path, &src, len, err, sizeof err) == 0, "%s", err);
    return src;
}

/* The stems of every .c under srcdir/sub. */
static int stems(const char *sub, char out[][64], int cap) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", tu_srcdir(), sub);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    int n = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL && n < cap;) {
        size_t len = strlen(de->d_name);
        if (len > 2 && !strcmp(de->d_name + len - 2, ".c")) snprintf(out[n++], 64, "%.*s", (int)len - 2, de->d_name);
    }
    closedir(d);
    return n;
}

START_TEST(suite_has_the_shape_of_an_evaluation) {
    ck_assert_int_ge(n_files, 12);
    for (int i = 0; i < n_files; i++) {
        char path[8400], err[1024];
        size_t len;
        char *src = read_rel(files[i], &len, path, sizeof path);
        spade_jit *jit;
        spade_host *h;
        int line = 0;
        spade_jit_status kind;
        ck_assert_msg(spade_jit_compile(path, src, len, &jit, err, sizeof err, &line, &kind) == 0, "%s", err);
        free(src);
        ck_assert_msg(spade_host_new(&h, spade_jit_symbol, jit, err, sizeof err) == 0, "%s", err);
        const spade_env_info *info = spade_host_info(h);
        const char *stem = strrchr(files[i], '/') + 1;
        ck_assert_msg(!strncmp(info->name, stem, strlen(info->name)) && stem[strlen(info->name)] == '.',
                      "%s: ENV name '%s' differs from the file name", files[i], info->name);
        ck_assert_msg(info->n_params >= 2, "%s: %d params; difficulty needs two knobs", files[i], info->n_params);
        ck_assert_msg(info->has_solve, "%s has no SOLVE (the eval's ceiling column needs it)", files[i]);
        ck_assert_msg(info->family[0], "%s has no family", files[i]);
        spade_host_free(h);
        spade_jit_free(jit);
    }
}
END_TEST

/* Mechanics the agent never trained on: no name and no source is shared. */
START_TEST(suite_shares_nothing_with_the_corpus) {
    static char corpus[256][64];
    int n = stems("stdenv", corpus, 128);
    n += stems("plugins", corpus + n, 128);
    ck_assert_int_ge(n, 16);
    for (int i = 0; i < n_files; i++) {
        const char *stem = strrchr(files[i], '/') + 1;
        for (int k = 0; k < n; k++)
            ck_assert_msg(strncmp(stem, corpus[k], strlen(corpus[k])) || stem[strlen(corpus[k])] != '.',
                          "%s has the name of a stdenv/plugins environment", files[i]);
    }
}
END_TEST

START_TEST(every_file_is_installed) {
    static char here[MAX_FILES][64];
    int n = stems("eval/heldout", here, MAX_FILES);
    for (int k = 0; k < n; k++) {
        char rel[300];
        int listed = 0;
        snprintf(rel, sizeof rel, "eval/heldout/%.63s.c", here[k]);
        for (int i = 0; i < n_files; i++) listed |= !strcmp(files[i], rel);
        ck_assert_msg(listed, "%s is not in heldout_envs (eval/local.mk): it would not be installed", rel);
    }
    ck_assert_int_eq(n, n_files);
}
END_TEST

START_TEST(default_search_path_does_not_find_it) {
    char dir[4096], cwd[4096], path[4096], err[2048];
    spade_registry *r;
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    tu_mkdtemp(dir, sizeof dir, "heldout");
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_int_eq(spade_registry_new(&r, "", 0, err, sizeof err), 0);
    ck_assert_msg(spade_registry_find(r, "maze", path, sizeof path, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < n_files; i++) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(strrchr(files[i], '/') + 1, "."), strrchr(files[i], '/') + 1);
        ck_assert_msg(spade_registry_find(r, name, path, sizeof path, err, sizeof err) < 0,
                      "the default search path finds the held-out %s at %s", name, path);
    }
    spade_registry_free(r);
    ck_assert_int_eq(chdir(cwd), 0);
    ck_assert_int_eq(tu_rm_rf(dir), 0);
}
END_TEST

START_TEST(guard_refuses_heldout_files_by_place_and_by_content) {
    char err[2048], why[2048], dir[4096], suite[4096], copy[4200];
    spade_heldout_guard *g;
    unsetenv("SPADE_HELDOUT");
    ck_assert_msg(spade_heldout_dir(suite, sizeof suite, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(spade_heldout_guard_new(&g, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(spade_heldout_guard_count(g), n_files);
    tu_mkdtemp(dir, sizeof dir, "heldout-copy");
    for (int i = 0; i < n_files; i++) {
        char path[8400];
        size_t len;
        char *src = read_rel(files[i], &len, path, sizeof path);
        ck_assert_msg(spade_heldout_guard_refuses(g, path, NULL, 0, why, sizeof why) == 1, "%s passed by place", path);
        ck_assert_ptr_nonnull(strstr(why, "held-out"));
        /* a renamed copy, reformatted, in a directory without the marker */
        snprintf(copy, sizeof copy, "%s/mine%d.c", dir, i);
        FILE *f = fopen(copy, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "// my environment\n");
        for (size_t k = 0; k < len; k++) fputs(src[k] == '\n' ? "\n    " : (char[2]){src[k], 0}, f); /* re-indented */
        fclose(f);
        char *c2;
        size_t l2;
        ck_assert_int_eq(spade_read_source(copy, &c2, &l2, err, sizeof err), 0);
        ck_assert(!spade_path_is_heldout(copy));
        ck_assert_msg(spade_heldout_guard_refuses(g, copy, c2, l2, why, sizeof why) == 1, "a copy of %s passed", path);
        ck_assert_ptr_nonnull(strstr(why, "copy of the held-out"));
        free(c2);
        free(src);
    }
    static char corpus[128][64];
    int n = stems("stdenv", corpus, 128);
    for (int k = 0; k < n; k++) {
        char rel[300], path[8400];
        size_t len;
        snprintf(rel, sizeof rel, "stdenv/%.63s.c", corpus[k]);
        char *src = read_rel(rel, &len, path, sizeof path);
        ck_assert_msg(spade_heldout_guard_refuses(g, path, src, len, why, sizeof why) == 0, "%s refused: %s", rel, why);
        free(src);
    }
    spade_heldout_guard_free(g);
    ck_assert_int_eq(tu_rm_rf(dir), 0);
}
END_TEST

START_TEST(a_missing_suite_is_an_error_not_an_open_door) {
    char dir[4096], err[2048], out[4096];
    spade_heldout_guard *g = NULL;
    tu_mkdtemp(dir, sizeof dir, "heldout-none");
    setenv("SPADE_HELDOUT", dir, 1);
    ck_assert_int_eq(spade_heldout_dir(out, sizeof out, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "HELDOUT"));
    ck_assert_int_eq(spade_heldout_guard_new(&g, NULL, err, sizeof err), -1);
    ck_assert_ptr_null(g);
    unsetenv("SPADE_HELDOUT");
    ck_assert_int_eq(spade_heldout_guard_new(&g, dir, err, sizeof err), -1); /* no .c files */
    ck_assert_ptr_nonnull(strstr(err, "no .c files"));
    ck_assert_int_eq(tu_rm_rf(dir), 0);
}
END_TEST

START_TEST(fingerprint_ignores_layout_not_code) {
    const char *a = "int x = 1; /* c */ say(\"a  b\");\n", *b = "int  x=1;\n// other\nsay(\"a  b\");",
               *c = "int x = 1; say(\"a b\");", *d = "int x = 2; say(\"a  b\");";
    uint64_t fa = spade_source_fingerprint(a, strlen(a));
    ck_assert(fa == spade_source_fingerprint(b, strlen(b)));
    ck_assert(fa != spade_source_fingerprint(c, strlen(c))); /* whitespace inside a literal is code */
    ck_assert(fa != spade_source_fingerprint(d, strlen(d)));
}
END_TEST

int main(void) {
    list_files();
    Suite *s = suite_create("heldout");
    TCase *c = tcase_create("suite");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, suite_has_the_shape_of_an_evaluation);
    tcase_add_test(c, suite_shares_nothing_with_the_corpus);
    tcase_add_test(c, every_file_is_installed);
    tcase_add_test(c, default_search_path_does_not_find_it);
    tcase_add_test(c, guard_refuses_heldout_files_by_place_and_by_content);
    tcase_add_test(c, a_missing_suite_is_an_error_not_an_open_door);
    tcase_add_test(c, fingerprint_ignores_layout_not_code);
    suite_add_tcase(s, c);
    return tu_run(s);
}
