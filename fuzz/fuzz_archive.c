/* fuzz_archive.c — libFuzzer harness for reading the archive's rows back
 * (core/archive.c): the input is decoded into rows of any SQLite type and
 * size (NULL, integer, real, text, blob) for the envs, plays and iterations
 * tables, written by a connection of the harness's own into an in-memory
 * database (shared cache, so the archive opens the same one), under either
 * the archive's real schema or a loose one without types or NOT NULL (what
 * a hand-edited or foreign spade.db may hold); then the archive opens it and
 * reads it every way it can: the last iteration, the walk (valid only or not,
 * by family), each environment by id, and the designer's memory.
 * What it is not: a fuzzer of SQLite's file format (that is SQLite's own
 * work); the rows are fuzzed, the file is SQLite's.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "archive.h"

#define URI(name) "file:spade-fuzz-archive-" name "?mode=memory&cache=shared"

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static unsigned get8(rd *r) {
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

/* One value: a tag byte, then its bytes (short of input: what is left). */
static void bind_value(sqlite3_stmt *st, int i, rd *r) {
    unsigned tag = get8(r) % 6;
    uint64_t u = 0;
    size_t len;
    switch (tag) {
    case 0: sqlite3_bind_null(st, i); break;
    case 1:
    case 2:
        for (int k = 0; k < 8; k++) u = u << 8 | get8(r);
        if (tag == 1)
            sqlite3_bind_int64(st, i, (sqlite3_int64)u);
        else {
            double d;
            memcpy(&d, &u, sizeof d);
            sqlite3_bind_double(st, i, d);
        }
        break;
    case 3: sqlite3_bind_int64(st, i, (sqlite3_int64)(int8_t)get8(r)); break; /* small ints: ids, iterations */
    default:
        len = get8(r);
        if (len == 255) len = 255 + get8(r) * 64u; /* now and then a long one */
        if (len > r->n) len = r->n;
        if (tag == 4)
            sqlite3_bind_text(st, i, (const char *)r->p, (int)len, SQLITE_TRANSIENT);
        else
            sqlite3_bind_blob(st, i, r->p, (int)len, SQLITE_TRANSIENT);
        r->p += len, r->n -= len;
        break;
    }
}

static const char LOOSE[] =
    "CREATE TABLE meta(key, value);"
    "CREATE TABLE envs(id INTEGER PRIMARY KEY, iteration, family, corpus_item, source, hash, gate, reason, hint,"
    " pass_nohint, pass_hint, regret, reward, plays, embedding, writer);"
    "CREATE TABLE plays(env_id, seed, success_nohint, success_hint, return_nohint, return_hint);"
    "CREATE TABLE iterations(iteration INTEGER PRIMARY KEY, metrics);"
    "CREATE TABLE replies(iteration, slot, request, endpoint, model, text);";

static int walked;
static int count_env(void *ctx, const spade_archive_env *e) {
    long *ids = ctx;
    if (e->source || e->embedding) abort(); /* the walk loads neither */
    if (walked < 8) ids[walked] = e->id;
    walked++;
    return 0;
}

/* The two databases (the real schema, the loose one), made once and kept
 * open: a new schema per input was nearly all of the time. Each input
 * empties the tables and sets the version before writing its rows. */
static sqlite3 *dbs[2];
static const char *const uris[2] = {URI("real"), URI("loose")};

static sqlite3 *db_for(unsigned loose) {
    if (!dbs[loose]) {
        if (sqlite3_config(SQLITE_CONFIG_URI, 1) != SQLITE_OK && !dbs[!loose]) abort();
        if (sqlite3_open_v2(uris[loose], &dbs[loose], SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                            NULL) != SQLITE_OK ||
            sqlite3_exec(dbs[loose], loose ? LOOSE : spade_archive_schema(), NULL, NULL, NULL) != SQLITE_OK)
            abort();
    }
    return dbs[loose];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rd r = {data, size};
    unsigned mode = get8(&r);
    sqlite3 *db = db_for(mode & 1);
    const char *uri = uris[mode & 1];
    if (sqlite3_exec(db, "DELETE FROM plays; DELETE FROM envs; DELETE FROM iterations;", NULL, NULL, NULL) != SQLITE_OK)
        abort();
    char version[48];
    snprintf(version, sizeof version, "PRAGMA user_version=%d", (mode & 2) ? 0 : SPADE_ARCHIVE_VERSION);
    if (sqlite3_exec(db, version, NULL, NULL, NULL) != SQLITE_OK) abort();
    static const char *const ins[3] = {
        "INSERT INTO envs VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)",
        "INSERT INTO plays VALUES(?1,?2,?3,?4,?5,?6)", "INSERT INTO iterations VALUES(?1,?2)"};
    static const int cols[3] = {16, 6, 2};
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (int rows = 0; r.n && rows < 64; rows++) {
        int t = (int)(get8(&r) % 3);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, ins[t], -1, &st, NULL) != SQLITE_OK) abort();
        for (int c = 1; c <= cols[t]; c++) bind_value(st, c, &r);
        (void)sqlite3_step(st); /* a row the schema refuses is simply not there */
        sqlite3_finalize(st);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);

    spade_archive *a = NULL;
    char err[1024];
    if (spade_archive_open(&a, uri, err, sizeof err) == 0) {
        long ids[8]; /* the first 8 the walk gives are read whole: enough, and each read is a query */
        walked = 0;
        (void)spade_archive_each_env(a, (mode >> 2) & 1, (mode & 8) ? "arith" : NULL, (mode >> 4) & 7, count_env, ids,
                                     err, sizeof err);
        int n = walked < 8 ? walked : 8;
        for (int i = 0; i <= n; i++) {
            spade_archive_env e;
            int rc = spade_archive_get_env(a, i < n ? ids[i] : -1, &e, err, sizeof err);
            if (rc == 0) {
                if (!e.source || e.embed_dim < 0 || (e.embed_dim && !e.embedding)) abort();
                spade_archive_env_clear(&e);
            }
        }
        spade_memory_opts o;
        spade_memory_opts_default(&o);
        uint64_t rng = mode;
        long pos[8], neg;
        int n_pos;
        if (spade_memory_select(a, "arith", &o, &rng, pos, &n_pos, &neg, err, sizeof err) == 0 &&
            (n_pos < 0 || n_pos > o.positives))
            abort();
        (void)spade_archive_rollback_after(a, (int)(int8_t)mode, err, sizeof err);
        spade_archive_close(a);
    }
    return 0;
}
