/* test_archive.c — Check suite for the run archive and the designer's memory
 * query (core/archive.h).
 *
 * What it is: environments, plays and metrics round-trip (NaN pass rates
 * stay "not played"); a foreign or newer file is refused by name; a killed
 * writer's uncommitted iteration leaves nothing; rollback_after drops exactly
 * the later iterations; memory selection on a hand-filled archive: positives
 * only from the same family, in the pass-rate band, from the top 10 by regret,
 * every one of those reachable, ties at the edge broken at random (not by
 * age), the FIFO window honoured, invalid environments never shown, one
 * negative from outside the band with the same family preferred, and the same
 * draw from the same RNG state. A served designer's replies: read back only
 * for the same iteration, slot and request digest, kept through every
 * rollback; envs.writer round-trips; a schema-1 file gets both on open.
 * What it is not: a test of the self-play loop that fills it.
 */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "archive.h"
#include "testutil.h"

static char dir[4096], db[4200];

static int spade_read_source_for_test(const char *path, char **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    *out = malloc(1 << 16);
    *len = fread(*out, 1, 1 << 16, f);
    fclose(f);
    return 0;
}

static void setup(void) {
    tu_mkdtemp(dir, sizeof dir, "archive");
    snprintf(db, sizeof db, "%s/spade.db", dir);
}
static void teardown(void) { ck_assert_int_eq(tu_rm_rf(dir), 0); }

/* The highest iteration with metrics (-1: none), read as anyone with the
 * sqlite3 library would: the iterations table is the record of what finished. */
static int last_iteration(void) {
    sqlite3 *raw;
    sqlite3_stmt *st;
    int it = -1;
    ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(raw, "SELECT max(iteration) FROM iterations", -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) it = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(raw);
    return it;
}

static spade_archive *open_db(void) {
    char err[1024];
    spade_archive *a;
    ck_assert_msg(spade_archive_open(&a, db, err, sizeof err) == 0, "%s", err);
    return a;
}

static long add(spade_archive *a, int it, const char *family, const char *gate, double pass, double regret) {
    char err[1024];
    spade_archive_env e = {0};
    long id;
    e.iteration = it;
    snprintf(e.family, sizeof e.family, "%s", family);
    snprintf(e.gate, sizeof e.gate, "%s", gate);
    e.source = "ENV(\"x\", \"y\")";
    e.source_len = strlen(e.source);
    e.pass_nohint = pass;
    e.pass_hint = pass + regret;
    e.regret = regret;
    e.reward = 0.5;
    e.plays = 8;
    ck_assert_msg(spade_archive_add_env(a, &e, &id, err, sizeof err) == 0, "%s", err);
    return id;
}

START_TEST(environments_round_trip) {
    char err[1024];
    spade_archive *a = open_db();
    const char src[] = "#include <spade/dsl.h>\nENV(\"t\", \"d\")\n/* it's 'quoted' */\n";
    float emb[4] = {1, 0.5f, -2, 3};
    spade_archive_env e = {0}, got;
    e.iteration = 3;
    snprintf(e.family, sizeof e.family, "math");
    snprintf(e.corpus_item, sizeof e.corpus_item, "stdenv/maze.c");
    e.source = src;
    e.source_len = sizeof src - 1;
    e.hash = 0xfedcba9876543210ULL;
    snprintf(e.gate, sizeof e.gate, "random_agent");
    snprintf(e.reason, sizeof e.reason, "random agent won 9 of 20");
    snprintf(e.hint, sizeof e.hint, "carry the ones");
    e.pass_nohint = e.pass_hint = e.regret = NAN;
    e.reward = -1;
    e.embedding = emb;
    e.embed_dim = 4;
    long id;
    ck_assert_int_eq(spade_archive_begin(a, err, sizeof err), 0);
    ck_assert_msg(spade_archive_add_env(a, &e, &id, err, sizeof err) == 0, "%s", err);
    uint64_t seeds[2] = {7, UINT64_MAX};
    double s0[2] = {0, 1}, s1[2] = {1, 1}, r0[2] = {0, 1}, r1[2] = {1, 0.5};
    ck_assert_int_eq(spade_archive_add_plays(a, id, 2, seeds, s0, s1, r0, r1, err, sizeof err), 0);
    ck_assert_int_eq(spade_archive_add_iteration(a, 3, "{\"valid\":0}", err, sizeof err), 0);
    ck_assert_int_eq(spade_archive_commit(a, err, sizeof err), 0);
    spade_archive_close(a);
    a = open_db();
    ck_assert_int_eq(spade_archive_get_env(a, id, &got, err, sizeof err), 0);
    ck_assert_int_eq(got.iteration, 3);
    ck_assert_str_eq(got.family, "math");
    ck_assert_str_eq(got.corpus_item, "stdenv/maze.c");
    ck_assert_uint_eq(got.source_len, sizeof src - 1);
    ck_assert_mem_eq(got.source, src, sizeof src - 1);
    ck_assert(got.hash == e.hash);
    ck_assert_str_eq(got.gate, "random_agent");
    ck_assert_str_eq(got.reason, e.reason);
    ck_assert_str_eq(got.hint, e.hint);
    ck_assert(isnan(got.pass_nohint) && isnan(got.regret));
    ck_assert_double_eq(got.reward, -1);
    ck_assert_int_eq(got.embed_dim, 4);
    ck_assert_mem_eq(got.embedding, emb, sizeof emb);
    spade_archive_env_clear(&got);
    ck_assert_int_eq(spade_archive_get_env(a, id + 1, &got, err, sizeof err), 1);
    ck_assert_int_eq(last_iteration(), 3);
    spade_archive_close(a);
    /* the plays are readable by anyone with the sqlite3 library */
    sqlite3 *raw;
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_prepare_v2(raw, "SELECT seed, success_hint - success_nohint FROM plays ORDER BY rowid", -1, &st, NULL),
        SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int64(st, 0), 7);
    ck_assert_double_eq(sqlite3_column_double(st, 1), 1);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert((uint64_t)sqlite3_column_int64(st, 0) == UINT64_MAX);
    sqlite3_finalize(st);
    sqlite3_close(raw);
}
END_TEST

START_TEST(foreign_and_newer_files_are_refused) {
    char err[1024];
    spade_archive *a;
    sqlite3 *raw;
    ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(raw, "CREATE TABLE mine(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(raw);
    ck_assert_int_eq(spade_archive_open(&a, db, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "not a spade archive"));
    ck_assert_ptr_nonnull(strstr(err, db));
    unlink(db);
    a = open_db();
    spade_archive_close(a);
    ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(raw, "PRAGMA user_version=99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(raw);
    ck_assert_int_eq(spade_archive_open(&a, db, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "newer"));
    unlink(db);
    FILE *f = fopen(db, "w");
    fputs("this is not a database, it is a text file that is long enough to have a header\n", f);
    fclose(f);
    ck_assert_int_eq(spade_archive_open(&a, db, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, db));
}
END_TEST

/* A writer killed in the middle of an iteration leaves nothing of it. */
START_TEST(killed_writer_leaves_only_committed_iterations) {
    char err[1024];
    spade_archive *a = open_db();
    ck_assert_int_eq(spade_archive_begin(a, err, sizeof err), 0);
    add(a, 0, "math", "", 0.5, 0.2);
    ck_assert_int_eq(spade_archive_add_iteration(a, 0, "{}", err, sizeof err), 0);
    ck_assert_int_eq(spade_archive_commit(a, err, sizeof err), 0);
    spade_archive_close(a);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        spade_archive *c;
        if (spade_archive_open(&c, db, err, sizeof err) < 0 || spade_archive_begin(c, err, sizeof err) < 0) _exit(3);
        for (int i = 0; i < 50; i++) add(c, 1, "math", "", 0.5, 0.1);
        raise(SIGKILL);
        _exit(4);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    a = open_db();
    int n = 0;
    spade_archive_env e;
    for (long id = 1; spade_archive_get_env(a, id, &e, err, sizeof err) == 0; id++, n++) spade_archive_env_clear(&e);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(last_iteration(), 0);
    spade_archive_close(a);
}
END_TEST

START_TEST(rollback_after_drops_later_iterations) {
    char err[1024];
    spade_archive *a = open_db();
    for (int it = 0; it < 4; it++) {
        long id = add(a, it, "logic", "", 0.5, 0.1 * it);
        uint64_t s = (uint64_t)it;
        double z = 0;
        ck_assert_int_eq(spade_archive_add_plays(a, id, 1, &s, &z, &z, &z, &z, err, sizeof err), 0);
        ck_assert_int_eq(spade_archive_add_iteration(a, it, "{}", err, sizeof err), 0);
    }
    ck_assert_int_eq(spade_archive_rollback_after(a, 1, err, sizeof err), 0);
    ck_assert_int_eq(last_iteration(), 1);
    spade_archive_env e;
    ck_assert_int_eq(spade_archive_get_env(a, 2, &e, err, sizeof err), 0);
    spade_archive_env_clear(&e);
    ck_assert_int_eq(spade_archive_get_env(a, 3, &e, err, sizeof err), 1);
    spade_archive_close(a);
    sqlite3 *raw;
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(raw, "SELECT count(*) FROM plays", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(st, 0), 2);
    sqlite3_finalize(st);
    sqlite3_close(raw);
}
END_TEST

/* The hand-filled archive: ids by construction, so the expected sets are known. */
static long pos_ids[40], top_ids[10], out_of_band, other_family, invalid_best, neg_same, neg_other, tie_a, tie_b;
static spade_archive *fill(void) {
    spade_archive *a = open_db();
    add(a, 0, "math", "", 0.5, 0.5); /* oldest, low regret: in the band, never in the top 10 */
    other_family = add(a, 0, "logic", "", 0.5, 5.0);
    out_of_band = add(a, 0, "math", "", 0.95, 7.0);
    invalid_best = add(a, 0, "math", "solve", 0.5, 8.0);
    neg_other = add(a, 0, "logic", "", 0.02, 0.0);
    for (int i = 0; i < 20; i++)
        pos_ids[i] = add(a, 1, "math", "", 0.2 + 0.03 * i, 1.0 + 0.1 * i); /* regrets 1.0..2.9 */
    for (int i = 0; i < 10; i++) top_ids[i] = pos_ids[19 - i]; /* the ten highest regrets... */
    tie_a = top_ids[9];
    /* ...except that the 10th place (regret 2.0) is tied with a newer one */
    tie_b = add(a, 2, "math", "", 0.5, 1.0 + 0.1 * 10);
    neg_same = add(a, 2, "math", "", 0.97, 0.0);
    return a;
}

START_TEST(memory_picks_positives_from_the_top_of_the_band) {
    char err[1024];
    spade_archive *a = fill();
    spade_memory_opts o;
    spade_memory_opts_default(&o);
    int seen_a = 0, seen_b = 0, hits[64] = {0};
    for (uint64_t seed = 1; seed <= 400; seed++) {
        uint64_t rng = seed;
        long pos[4], neg;
        int n;
        ck_assert_msg(spade_memory_select(a, "math", &o, &rng, pos, &n, &neg, err, sizeof err) == 0, "%s", err);
        ck_assert_int_eq(n, 2);
        ck_assert(pos[0] != pos[1]);
        for (int k = 0; k < n; k++) {
            int top = pos[k] == tie_b;
            for (int i = 0; i < 9; i++) top |= pos[k] == top_ids[i];
            top |= pos[k] == tie_a;
            ck_assert_msg(top, "seed %llu: positive %ld is not in the top 10 by regret", (unsigned long long)seed,
                          pos[k]);
            ck_assert(pos[k] != out_of_band && pos[k] != other_family && pos[k] != invalid_best);
            seen_a += pos[k] == tie_a;
            seen_b += pos[k] == tie_b;
            hits[pos[k] % 64]++;
        }
        ck_assert(neg == neg_same || neg == out_of_band); /* the same family's negatives (0.97, 0.95) are preferred */
    }
    ck_assert_msg(seen_a > 0 && seen_b > 0, "the tie at 10th place is always broken one way (%d / %d)", seen_a, seen_b);
    for (int i = 0; i < 9; i++) /* each of the nine clear places is drawn about 2/10 of the time */
        ck_assert_msg(hits[top_ids[i] % 64] > 40 && hits[top_ids[i] % 64] < 130, "id %ld drawn %d of 400", top_ids[i],
                      hits[top_ids[i] % 64]);
    /* the same RNG state, the same memory */
    uint64_t r1 = 77, r2 = 77;
    long p1[2], p2[2], n1, n2;
    int c1, c2;
    spade_memory_select(a, "math", &o, &r1, p1, &c1, &n1, err, sizeof err);
    spade_memory_select(a, "math", &o, &r2, p2, &c2, &n2, err, sizeof err);
    ck_assert(c1 == c2 && p1[0] == p2[0] && p1[1] == p2[1] && n1 == n2 && r1 == r2);
    spade_archive_close(a);
}
END_TEST

START_TEST(memory_honours_window_and_falls_back_for_negatives) {
    char err[1024];
    spade_archive *a = fill();
    spade_memory_opts o;
    spade_memory_opts_default(&o);
    uint64_t rng = 5;
    long pos[4], neg;
    int n;
    ck_assert_int_eq(spade_memory_select(a, "logic", &o, &rng, pos, &n, &neg, err, sizeof err), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(pos[0], other_family);
    ck_assert_int_eq(neg, neg_other);
    /* a family with nothing of its own gets no positive and any negative */
    ck_assert_int_eq(spade_memory_select(a, "grid", &o, &rng, pos, &n, &neg, err, sizeof err), 0);
    ck_assert_int_eq(n, 0);
    ck_assert(neg == neg_same || neg == neg_other || neg == out_of_band);
    /* a window of the newest 2 valid environments: tie_b and neg_same */
    o.window = 2;
    ck_assert_int_eq(spade_memory_select(a, "math", &o, &rng, pos, &n, &neg, err, sizeof err), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(pos[0], tie_b);
    ck_assert_int_eq(neg, neg_same);
    spade_archive_close(a);
}
END_TEST

#ifndef SPADE_BUILDDIR
#error "SPADE_BUILDDIR (where the spade binary is built) must come from the build"
#endif

/* Runs the built `spade archive ARGS`, output into out; returns the exit status. */
static int spade_archive_cli(const char *args, char *out, size_t cap) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s/spade' archive %s 2>&1", SPADE_BUILDDIR, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(replies_survive_rollback_and_match_their_request) {
    char err[1024], *text;
    size_t len;
    spade_archive *a = open_db();
    ck_assert_int_eq(spade_archive_put_reply(a, 3, 1, "d1", "http://h:1/v1/chat/completions", "m", "```c\nx\n```", 12,
                                             err, sizeof err),
                     0);
    ck_assert_int_eq(spade_archive_get_reply(a, 3, 1, "d1", &text, &len, err, sizeof err), 0);
    ck_assert_uint_eq(len, 12);
    ck_assert_str_eq(text, "```c\nx\n```");
    free(text);
    ck_assert_int_eq(spade_archive_get_reply(a, 3, 1, "d2", &text, &len, err, sizeof err), 1); /* another request */
    ck_assert_ptr_null(text);
    ck_assert_int_eq(spade_archive_get_reply(a, 3, 0, "d1", &text, &len, err, sizeof err), 1); /* another slot */
    ck_assert_int_eq(spade_archive_rollback_after(a, -1, err, sizeof err), 0);
    ck_assert_int_eq(spade_archive_get_reply(a, 3, 1, "d1", &text, &len, err, sizeof err), 0); /* kept */
    free(text);
    spade_archive_env e = {.iteration = 0,
                           .family = "f",
                           .source = "s",
                           .source_len = 1,
                           .pass_nohint = NAN,
                           .pass_hint = NAN,
                           .regret = NAN,
                           .reward = 0};
    snprintf(e.writer, sizeof e.writer, "remote:http://h:1#m");
    long id;
    ck_assert_int_eq(spade_archive_add_env(a, &e, &id, err, sizeof err), 0);
    spade_archive_env got;
    ck_assert_int_eq(spade_archive_get_env(a, id, &got, err, sizeof err), 0);
    ck_assert_str_eq(got.writer, "remote:http://h:1#m");
    spade_archive_env_clear(&got);
    spade_archive_close(a);
}
END_TEST

/* A schema-1 archive (before envs.writer and replies) is upgraded on open, its rows kept. */
START_TEST(schema_1_is_upgraded) {
    sqlite3 *raw;
    ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_exec(raw,
                     "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                     "CREATE TABLE envs(id INTEGER PRIMARY KEY, iteration INTEGER NOT NULL, family TEXT "
                     "NOT NULL, corpus_item TEXT NOT NULL, source TEXT NOT NULL, hash TEXT NOT NULL, gate "
                     "TEXT NOT NULL, reason TEXT NOT NULL, hint TEXT NOT NULL, pass_nohint REAL, "
                     "pass_hint REAL, regret REAL, reward REAL, plays INTEGER NOT NULL, embedding BLOB);"
                     "CREATE TABLE plays(env_id INTEGER NOT NULL REFERENCES envs(id), seed INTEGER NOT "
                     "NULL, success_nohint REAL NOT NULL, success_hint REAL NOT NULL, return_nohint REAL "
                     "NOT NULL, return_hint REAL NOT NULL);"
                     "CREATE TABLE iterations(iteration INTEGER PRIMARY KEY, metrics TEXT NOT NULL);"
                     "INSERT INTO envs VALUES(1, 0, 'f', '', 'src', '00', '', '', '', 0.5, 0.5, 0, 0, 2, NULL);"
                     "PRAGMA user_version=1;",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(raw);
    char err[1024], *text;
    size_t len;
    spade_archive *a = open_db();
    spade_archive_env got;
    ck_assert_int_eq(spade_archive_get_env(a, 1, &got, err, sizeof err), 0);
    ck_assert_str_eq(got.source, "src");
    ck_assert_str_eq(got.writer, "");
    spade_archive_env_clear(&got);
    ck_assert_int_eq(spade_archive_put_reply(a, 0, 0, "d", "e", "m", "t", 1, err, sizeof err), 0);
    ck_assert_int_eq(spade_archive_get_reply(a, 0, 0, "d", &text, &len, err, sizeof err), 0);
    free(text);
    spade_archive_close(a);
    a = open_db(); /* now schema 2: opened as it is */
    spade_archive_close(a);
}
END_TEST

START_TEST(cli_lists_shows_and_exports) {
    static char out[65536];
    char args[8400], err[1024];
    spade_archive *a = open_db();
    spade_archive_env e = {0};
    const char src[] = "#include <spade/dsl.h>\nENV(\"kept_one\", \"A kept environment.\")\n";
    long id;
    e.iteration = 4;
    snprintf(e.family, sizeof e.family, "pattern");
    e.source = src;
    e.source_len = sizeof src - 1;
    e.pass_nohint = 0.25;
    e.pass_hint = 0.75;
    e.regret = 0.5;
    e.reward = 0.9;
    e.plays = 8;
    ck_assert_int_eq(spade_archive_add_env(a, &e, &id, err, sizeof err), 0);
    add(a, 4, "math", "random_agent", NAN, NAN);
    spade_archive_close(a);
    snprintf(args, sizeof args, "list '%s'", dir);
    ck_assert_int_eq(spade_archive_cli(args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "pattern") && strstr(out, "valid") && strstr(out, "0.500"), "%s", out);
    ck_assert_msg(strstr(out, "random_agent"), "%s", out);
    snprintf(args, sizeof args, "list --valid '%s'", db);
    ck_assert_int_eq(spade_archive_cli(args, out, sizeof out), 0);
    ck_assert_msg(!strstr(out, "random_agent"), "%s", out);
    snprintf(args, sizeof args, "show '%s' %ld", dir, id);
    ck_assert_int_eq(spade_archive_cli(args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "ENV(\"kept_one\"") && strstr(out, "regret 0.500"), "%s", out);
    snprintf(args, sizeof args, "show '%s' 999", dir);
    ck_assert_int_eq(spade_archive_cli(args, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "no environment 999"), "%s", out);
    snprintf(args, sizeof args, "export '%s' %ld --to '%s'", dir, id, dir);
    ck_assert_int_eq(spade_archive_cli(args, out, sizeof out), 0);
    char path[8400], *got;
    size_t len;
    snprintf(path, sizeof path, "%s/kept_one.c", dir);
    ck_assert_int_eq(spade_read_source_for_test(path, &got, &len), 0);
    ck_assert_uint_eq(len, sizeof src - 1);
    ck_assert_mem_eq(got, src, len);
    free(got);
    ck_assert_int_eq(spade_archive_cli(args, out, sizeof out), 1); /* never overwrites */
    ck_assert_msg(strstr(out, "not overwritten"), "%s", out);
    snprintf(args, sizeof args, "frob '%s'", dir);
    ck_assert_int_eq(spade_archive_cli(args, out, sizeof out), 2);
    snprintf(args, sizeof args, "list '%s/none'", dir);
    ck_assert_int_eq(spade_archive_cli(args, out, sizeof out), 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("archive");
    TCase *c = tcase_create("archive");
    tcase_add_checked_fixture(c, setup, teardown);
    tcase_set_timeout(c, 60);
    tcase_add_test(c, environments_round_trip);
    tcase_add_test(c, foreign_and_newer_files_are_refused);
    tcase_add_test(c, killed_writer_leaves_only_committed_iterations);
    tcase_add_test(c, rollback_after_drops_later_iterations);
    tcase_add_test(c, memory_picks_positives_from_the_top_of_the_band);
    tcase_add_test(c, memory_honours_window_and_falls_back_for_negatives);
    tcase_add_test(c, cli_lists_shows_and_exports);
    tcase_add_test(c, replies_survive_rollback_and_match_their_request);
    tcase_add_test(c, schema_1_is_upgraded);
    suite_add_tcase(s, c);
    return tu_run(s);
}
