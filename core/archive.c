/* archive.c — the SQLite archive of a run (archive.h): schema, writes inside
 * the caller's iteration transaction, reads, and the memory query.
 *
 * What it is not: a general database layer. Every statement is written out
 * here with bound parameters (no text is pasted into SQL).
 */
#include "archive.h"

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "rng.h"

struct spade_archive {
    sqlite3 *db;
    char path[4096];
};

/* A served designer's replies (designer.source = remote), kept through every
 * rollback: a resumed iteration reads what the server wrote instead of asking
 * again (a server's sampling is not reproducible, whatever the seed). */
#define REPLIES_TABLE                                                                                                  \
    "CREATE TABLE IF NOT EXISTS replies(\n"                                                                            \
    "  iteration INTEGER NOT NULL,\n"                                                                                  \
    "  slot INTEGER NOT NULL,          -- the environment's place in its iteration's writing\n"                        \
    "  request TEXT NOT NULL,          -- SHA-256 of the request (model, turns, seed, sampling)\n"                     \
    "  endpoint TEXT NOT NULL,         -- URL/v1/chat/completions (never a key)\n"                                     \
    "  model TEXT NOT NULL,\n"                                                                                         \
    "  text TEXT NOT NULL,             -- the reply as the server sent it\n"                                           \
    "  PRIMARY KEY(iteration, slot)\n"                                                                                 \
    ");\n"

static const char SCHEMA[] = "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
                             "CREATE TABLE IF NOT EXISTS envs(\n"
                             "  id INTEGER PRIMARY KEY,        -- in the order they were built\n"
                             "  iteration INTEGER NOT NULL,\n"
                             "  family TEXT NOT NULL,\n"
                             "  corpus_item TEXT NOT NULL,     -- the grounding document, '' for none\n"
                             "  source TEXT NOT NULL,\n"
                             "  hash TEXT NOT NULL,            -- 16 hex digits: FNV-1a of the normalised source\n"
                             "  gate TEXT NOT NULL,            -- '' valid, else the first gate it failed\n"
                             "  reason TEXT NOT NULL,\n"
                             "  hint TEXT NOT NULL,\n"
                             "  pass_nohint REAL, pass_hint REAL, regret REAL, reward REAL, -- NULL when not played\n"
                             "  plays INTEGER NOT NULL,        -- plays per arm\n"
                             "  embedding BLOB,                -- float32 x dim, little-endian, or NULL\n"
                             "  writer TEXT NOT NULL DEFAULT '' -- who wrote it: 'remote:URL#MODEL' for a served\n"
                             "                                 -- designer, '' for the run's own policy or files\n"
                             ");\n"
                             "CREATE INDEX IF NOT EXISTS envs_by_family ON envs(family, gate);\n"
                             "CREATE INDEX IF NOT EXISTS envs_by_iteration ON envs(iteration);\n"
                             "CREATE TABLE IF NOT EXISTS plays(\n"
                             "  env_id INTEGER NOT NULL REFERENCES envs(id),\n"
                             "  seed INTEGER NOT NULL,         -- the uint64 seed, stored as its int64 bit pattern\n"
                             "  success_nohint REAL NOT NULL, success_hint REAL NOT NULL,\n"
                             "  return_nohint REAL NOT NULL, return_hint REAL NOT NULL\n"
                             ");\n"
                             "CREATE INDEX IF NOT EXISTS plays_by_env ON plays(env_id);\n"
                             "CREATE TABLE IF NOT EXISTS iterations(\n"
                             "  iteration INTEGER PRIMARY KEY,\n"
                             "  metrics TEXT NOT NULL          -- one JSON object\n"
                             ");\n" REPLIES_TABLE;

const char *spade_archive_schema(void) { return SCHEMA; }

static int fail(spade_archive *a, char *err, size_t errlen, const char *what) {
    spade_errf(err, errlen, "%s: %s: %s", a->path, what, sqlite3_errmsg(a->db));
    return -1;
}

static int exec(spade_archive *a, const char *sql, char *err, size_t errlen) {
    char *msg = NULL;
    if (sqlite3_exec(a->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
    spade_errf(err, errlen, "%s: %s", a->path, msg ? msg : sqlite3_errmsg(a->db));
    sqlite3_free(msg);
    return -1;
}

int spade_archive_open(spade_archive **out, const char *path, char *err, size_t errlen) {
    spade_archive *a = calloc(1, sizeof *a);
    *out = NULL;
    if (!a) {
        spade_errf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    snprintf(a->path, sizeof a->path, "%s", path);
    if (sqlite3_open_v2(path, &a->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        fail(a, err, errlen, "cannot open the archive");
        goto bad;
    }
    sqlite3_busy_timeout(a->db, 5000);
    /* WAL + synchronous=NORMAL: a committed iteration survives kill -9 of the
     * process (only power loss could cost the last commit). */
    if (exec(a, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", err, errlen) < 0)
        goto bad;
    sqlite3_stmt *st;
    int version = 0;
    if (sqlite3_prepare_v2(a->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK) {
        fail(a, err, errlen, "not a spade archive");
        goto bad;
    }
    if (sqlite3_step(st) == SQLITE_ROW) version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (version > SPADE_ARCHIVE_VERSION) {
        spade_errf(err, errlen, "%s: archive schema version %d is newer than this spade's (%d)", path, version,
                   SPADE_ARCHIVE_VERSION);
        goto bad;
    }
    if (version == 1) { /* version 1 lacks envs.writer and the replies table: added, nothing else changes */
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d;", SPADE_ARCHIVE_VERSION);
        if (exec(a, "BEGIN", err, errlen) < 0 ||
            exec(a, "ALTER TABLE envs ADD COLUMN writer TEXT NOT NULL DEFAULT ''", err, errlen) < 0 ||
            exec(a, REPLIES_TABLE, err, errlen) < 0 || exec(a, sql, err, errlen) < 0 ||
            exec(a, "COMMIT", err, errlen) < 0) {
            sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
            goto bad;
        }
    }
    if (version == 0) { /* new, or some other SQLite file: it must hold no tables of its own */
        int tables = 0;
        if (sqlite3_prepare_v2(a->db, "SELECT count(*) FROM sqlite_master WHERE type='table'", -1, &st, NULL) ==
            SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW) tables = sqlite3_column_int(st, 0);
            sqlite3_finalize(st);
        }
        if (tables) {
            spade_errf(err, errlen, "%s: an SQLite file that is not a spade archive (it has tables and no version)",
                       path);
            goto bad;
        }
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d;", SPADE_ARCHIVE_VERSION);
        if (exec(a, "BEGIN", err, errlen) < 0 || exec(a, SCHEMA, err, errlen) < 0 ||
            exec(a, "INSERT INTO meta VALUES('format','spade-archive')", err, errlen) < 0 ||
            exec(a, sql, err, errlen) < 0 || exec(a, "COMMIT", err, errlen) < 0)
            goto bad;
    }
    *out = a;
    return 0;
bad:
    if (err && errlen && !err[0]) spade_errf(err, errlen, "%s: cannot open the archive", path);
    sqlite3_close(a->db);
    free(a);
    return -1;
}

void spade_archive_close(spade_archive *a) {
    if (!a) return;
    sqlite3_close(a->db);
    free(a);
}

int spade_archive_begin(spade_archive *a, char *err, size_t errlen) { return exec(a, "BEGIN IMMEDIATE", err, errlen); }
int spade_archive_commit(spade_archive *a, char *err, size_t errlen) { return exec(a, "COMMIT", err, errlen); }

int spade_archive_rollback_after(spade_archive *a, int it, char *err, size_t errlen) {
    static const char *const sql[] = {
        "DELETE FROM plays WHERE env_id IN (SELECT id FROM envs WHERE iteration > ?1)",
        "DELETE FROM envs WHERE iteration > ?1",
        "DELETE FROM iterations WHERE iteration > ?1",
    };
    for (size_t i = 0; i < sizeof sql / sizeof *sql; i++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(a->db, sql[i], -1, &st, NULL) != SQLITE_OK) return fail(a, err, errlen, "rollback");
        sqlite3_bind_int(st, 1, it);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) return fail(a, err, errlen, "rollback");
    }
    return 0;
}

static void bind_real(sqlite3_stmt *st, int i, double v) {
    if (isfinite(v))
        sqlite3_bind_double(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

int spade_archive_add_env(spade_archive *a, const spade_archive_env *e, long *id, char *err, size_t errlen) {
    static const char sql[] =
        "INSERT INTO envs(iteration, family, corpus_item, source, hash, gate, reason, hint, pass_nohint, pass_hint,"
        " regret, reward, plays, embedding, writer) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15)";
    sqlite3_stmt *st;
    char hash[17];
    if (sqlite3_prepare_v2(a->db, sql, -1, &st, NULL) != SQLITE_OK) return fail(a, err, errlen, "add environment");
    snprintf(hash, sizeof hash, "%016" PRIx64, e->hash);
    sqlite3_bind_int(st, 1, e->iteration);
    sqlite3_bind_text(st, 2, e->family, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, e->corpus_item, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, e->source ? e->source : "", e->source ? (int)e->source_len : 0, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, e->gate, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, e->reason, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 8, e->hint, -1, SQLITE_TRANSIENT);
    bind_real(st, 9, e->pass_nohint);
    bind_real(st, 10, e->pass_hint);
    bind_real(st, 11, e->regret);
    bind_real(st, 12, e->reward);
    sqlite3_bind_int(st, 13, e->plays);
    if (e->embedding && e->embed_dim > 0)
        sqlite3_bind_blob(st, 14, e->embedding, e->embed_dim * (int)sizeof(float), SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 14);
    sqlite3_bind_text(st, 15, e->writer, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return fail(a, err, errlen, "add environment");
    if (id) *id = (long)sqlite3_last_insert_rowid(a->db);
    return 0;
}

int spade_archive_add_plays(spade_archive *a, long env_id, int n, const uint64_t *seed, const double *success_nohint,
                            const double *success_hint, const double *return_nohint, const double *return_hint,
                            char *err, size_t errlen) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(a->db, "INSERT INTO plays VALUES(?1,?2,?3,?4,?5,?6)", -1, &st, NULL) != SQLITE_OK)
        return fail(a, err, errlen, "add plays");
    for (int i = 0; i < n; i++) {
        sqlite3_bind_int64(st, 1, env_id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)seed[i]);
        sqlite3_bind_double(st, 3, success_nohint[i]);
        sqlite3_bind_double(st, 4, success_hint[i]);
        sqlite3_bind_double(st, 5, return_nohint[i]);
        sqlite3_bind_double(st, 6, return_hint[i]);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return fail(a, err, errlen, "add plays");
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return 0;
}

int spade_archive_add_iteration(spade_archive *a, int iteration, const char *metrics_json, char *err, size_t errlen) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(a->db, "INSERT OR REPLACE INTO iterations VALUES(?1, ?2)", -1, &st, NULL) != SQLITE_OK)
        return fail(a, err, errlen, "add iteration");
    sqlite3_bind_int(st, 1, iteration);
    sqlite3_bind_text(st, 2, metrics_json, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : fail(a, err, errlen, "add iteration");
}

#define ENV_COLUMNS                                                                                                    \
    "id, iteration, family, corpus_item, hash, gate, reason, hint, pass_nohint, pass_hint, regret, reward, "           \
    "plays, writer"

static double column_real(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* A text column, "" for NULL: a file this spade did not write (a hand-edited
 * spade.db, or one whose tables lack NOT NULL) may hold NULL anywhere, and
 * sqlite3_column_text gives NULL for it (found by fuzz/fuzz_archive.c). */
static const char *column_text(sqlite3_stmt *st, int i) {
    const char *t = (const char *)sqlite3_column_text(st, i);
    return t ? t : "";
}

static void read_row(sqlite3_stmt *st, spade_archive_env *e) {
    memset(e, 0, sizeof *e);
    e->id = (long)sqlite3_column_int64(st, 0);
    e->iteration = sqlite3_column_int(st, 1);
    snprintf(e->family, sizeof e->family, "%s", column_text(st, 2));
    snprintf(e->corpus_item, sizeof e->corpus_item, "%s", column_text(st, 3));
    e->hash = strtoull(column_text(st, 4), NULL, 16);
    snprintf(e->gate, sizeof e->gate, "%s", column_text(st, 5));
    snprintf(e->reason, sizeof e->reason, "%s", column_text(st, 6));
    snprintf(e->hint, sizeof e->hint, "%s", column_text(st, 7));
    e->pass_nohint = column_real(st, 8);
    e->pass_hint = column_real(st, 9);
    e->regret = column_real(st, 10);
    e->reward = column_real(st, 11);
    e->plays = sqlite3_column_int(st, 12);
    snprintf(e->writer, sizeof e->writer, "%s", column_text(st, 13));
}

int spade_archive_get_env(spade_archive *a, long id, spade_archive_env *out, char *err, size_t errlen) {
    sqlite3_stmt *st;
    memset(out, 0, sizeof *out);
    if (sqlite3_prepare_v2(a->db, "SELECT " ENV_COLUMNS ", source, embedding FROM envs WHERE id = ?1", -1, &st, NULL) !=
        SQLITE_OK)
        return fail(a, err, errlen, "read environment");
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        sqlite3_finalize(st);
        spade_errf(err, errlen, "%s: no environment %ld", a->path, id);
        return 1;
    }
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        return fail(a, err, errlen, "read environment");
    }
    read_row(st, out);
    /* text before bytes (SQLite's order: the conversion to text sets the length) */
    const char *text = column_text(st, 14);
    int n = sqlite3_column_bytes(st, 14);
    const void *blob = sqlite3_column_blob(st, 15);
    int nb = blob ? sqlite3_column_bytes(st, 15) : 0;
    char *src = malloc((size_t)n + 1);
    float *emb = nb > 0 ? malloc((size_t)nb) : NULL;
    if (!src || (nb > 0 && !emb)) {
        free(src);
        free(emb);
        sqlite3_finalize(st);
        spade_errf(err, errlen, "%s: out of memory reading environment %ld", a->path, id);
        return -1;
    }
    memcpy(src, text, (size_t)n);
    src[n] = 0;
    if (emb) memcpy(emb, blob, (size_t)nb);
    out->source = src;
    out->source_len = (size_t)n;
    out->embedding = emb;
    out->embed_dim = nb / (int)sizeof(float);
    sqlite3_finalize(st);
    return 0;
}

void spade_archive_env_clear(spade_archive_env *e) {
    free((void *)e->source);
    free((void *)e->embedding);
    e->source = NULL;
    e->embedding = NULL;
}

int spade_archive_each_env(spade_archive *a, int valid_only, const char *family, int limit, spade_archive_env_fn fn,
                           void *ctx, char *err, size_t errlen) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(a->db,
                           "SELECT " ENV_COLUMNS
                           " FROM envs WHERE (?1 = 0 OR gate = '') AND (?2 IS NULL OR family = ?2)"
                           " ORDER BY id DESC LIMIT ?3",
                           -1, &st, NULL) != SQLITE_OK)
        return fail(a, err, errlen, "list environments");
    sqlite3_bind_int(st, 1, valid_only);
    if (family)
        sqlite3_bind_text(st, 2, family, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_int(st, 3, limit > 0 ? limit : -1);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        spade_archive_env e;
        read_row(st, &e);
        if (fn(ctx, &e)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : fail(a, err, errlen, "list environments");
}

/* ---- memory ---- */

void spade_memory_opts_default(spade_memory_opts *o) {
    o->window = 200;
    o->positives = 2;
    o->pool = 10;
    o->pos_lo = 0.15;
    o->pos_hi = 0.85;
    o->neg_lo = 0.1;
    o->neg_hi = 0.9;
}

typedef struct cand {
    long id;
    double regret;
    uint64_t tie; /* a random key: equal regrets are ordered by it, never by age */
    int same_family;
} cand;

typedef struct window {
    const char *family;
    const spade_memory_opts *o;
    uint64_t *rng;
    cand *pos, *neg;
    int n_pos, n_neg, cap;
} window;

static int collect_window(void *ctx, const spade_archive_env *e) {
    window *w = ctx;
    if (!isfinite(e->pass_nohint)) return 0;
    int same = !strcmp(e->family, w->family);
    double p = e->pass_nohint;
    if (same && p >= w->o->pos_lo && p <= w->o->pos_hi && isfinite(e->regret) && w->n_pos < w->cap)
        w->pos[w->n_pos++] =
            (cand){.id = e->id, .regret = e->regret, .tie = spade_splitmix64(w->rng), .same_family = same};
    if ((p < w->o->neg_lo || p > w->o->neg_hi) && w->n_neg < w->cap)
        w->neg[w->n_neg++] = (cand){.id = e->id, .tie = spade_splitmix64(w->rng), .same_family = same};
    return 0;
}

static int by_regret(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    if (a->regret != b->regret) return a->regret > b->regret ? -1 : 1;
    return a->tie < b->tie ? -1 : a->tie > b->tie;
}

int spade_memory_select(spade_archive *a, const char *family, const spade_memory_opts *o, uint64_t *rng, long *pos,
                        int *n_pos, long *neg, char *err, size_t errlen) {
    int cap = o->window > 0 ? o->window : 1;
    window w = {.family = family,
                .o = o,
                .rng = rng,
                .pos = calloc((size_t)cap, sizeof(cand)),
                .neg = calloc((size_t)cap, sizeof(cand)),
                .cap = cap};
    *n_pos = 0;
    *neg = -1;
    if (!w.pos || !w.neg) {
        free(w.pos);
        free(w.neg);
        spade_errf(err, errlen, "memory: out of memory");
        return -1;
    }
    if (spade_archive_each_env(a, 1, NULL, o->window, collect_window, &w, err, errlen) < 0) {
        free(w.pos);
        free(w.neg);
        return -1;
    }
    qsort(w.pos, (size_t)w.n_pos, sizeof *w.pos, by_regret);
    int pool = w.n_pos < o->pool ? w.n_pos : o->pool;
    for (int k = 0; k < o->positives && k < pool; k++) { /* a partial Fisher-Yates over the pool */
        int j = k + (int)(spade_splitmix64(rng) % (uint64_t)(pool - k));
        cand t = w.pos[k];
        w.pos[k] = w.pos[j];
        w.pos[j] = t;
        pos[(*n_pos)++] = w.pos[k].id;
    }
    int same = 0;
    for (int i = 0; i < w.n_neg; i++) same += w.neg[i].same_family;
    int want_same = same > 0, count = want_same ? same : w.n_neg;
    if (count > 0) {
        int pick = (int)(spade_splitmix64(rng) % (uint64_t)count);
        for (int i = 0; i < w.n_neg; i++)
            if (!want_same || w.neg[i].same_family) {
                if (pick-- == 0) {
                    *neg = w.neg[i].id;
                    break;
                }
            }
    }
    free(w.pos);
    free(w.neg);
    return 0;
}

int spade_archive_put_reply(spade_archive *a, int it, int slot, const char *request, const char *endpoint,
                            const char *model, const char *text, size_t len, char *err, size_t errlen) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(a->db, "INSERT OR REPLACE INTO replies VALUES(?1,?2,?3,?4,?5,?6)", -1, &st, NULL) !=
        SQLITE_OK)
        return fail(a, err, errlen, "record a reply");
    sqlite3_bind_int(st, 1, it);
    sqlite3_bind_int(st, 2, slot);
    sqlite3_bind_text(st, 3, request, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, endpoint, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, model, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, text, (int)len, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : fail(a, err, errlen, "record a reply");
}

int spade_archive_get_reply(spade_archive *a, int it, int slot, const char *request, char **text, size_t *len,
                            char *err, size_t errlen) {
    sqlite3_stmt *st;
    *text = NULL;
    *len = 0;
    if (sqlite3_prepare_v2(a->db, "SELECT text FROM replies WHERE iteration = ?1 AND slot = ?2 AND request = ?3", -1,
                           &st, NULL) != SQLITE_OK)
        return fail(a, err, errlen, "read a reply");
    sqlite3_bind_int(st, 1, it);
    sqlite3_bind_int(st, 2, slot);
    sqlite3_bind_text(st, 3, request, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        sqlite3_finalize(st);
        return 1;
    }
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        return fail(a, err, errlen, "read a reply");
    }
    const char *t = column_text(st, 0);
    int n = sqlite3_column_bytes(st, 0);
    char *p = malloc((size_t)n + 1);
    if (!p) {
        sqlite3_finalize(st);
        spade_errf(err, errlen, "%s: out of memory reading a reply", a->path);
        return -1;
    }
    memcpy(p, t, (size_t)n);
    p[n] = 0;
    sqlite3_finalize(st);
    *text = p;
    *len = (size_t)n;
    return 0;
}
