/* archive.h — the run's archive (RUN/spade.db, SQLite): every environment the
 * designer built, its gate outcome, its paired plays, its rewards and
 * embedding; every iteration's metrics; and the designer's memory as a query
 * over it.
 *
 * What it is: the one store self-play keeps what it learned in, readable with
 * the sqlite3 shell (the schema is in docs/selfplay.md and in
 * spade_archive_schema()). Writes of one iteration go in one transaction
 * (spade_archive_begin/commit), and spade_archive_rollback_after(it) deletes
 * whatever an interrupted iteration left, so a run killed at any moment
 * resumes onto exactly the rows of its last completed iteration.
 * What it is not: the checkpoint of the policy (core/policy) nor the run's
 * config; nor a cache: nothing here is recomputed from elsewhere.
 */
#ifndef SPADE_ARCHIVE_H
#define SPADE_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#define SPADE_ARCHIVE_VERSION 2 /* 2: envs.writer and the replies table (1 is upgraded on open) */

typedef struct spade_archive spade_archive;

/* Opens (creating when missing) the archive at path; a file that is not a
 * spade archive, or one of a newer schema version, is an error naming it. */
int spade_archive_open(spade_archive **out, const char *path, char *err, size_t errlen);
void spade_archive_close(spade_archive *a);
/* The CREATE statements, for docs and for people with the sqlite3 shell. */
const char *spade_archive_schema(void);

int spade_archive_begin(spade_archive *a, char *err, size_t errlen);
int spade_archive_commit(spade_archive *a, char *err, size_t errlen);
/* Deletes every row of iterations > it (environments, plays, metrics). */
int spade_archive_rollback_after(spade_archive *a, int it, char *err, size_t errlen);

/* One environment. gate is "" for a valid one, else the name of the first
 * gate it failed (reason says why). Pass rates and regret are NAN when it was
 * not played (an invalid environment). */
typedef struct spade_archive_env {
    long id; /* assigned by spade_archive_add_env */
    int iteration;
    char family[32];
    char corpus_item[256]; /* the grounding document's name, "" for none */
    const char *source; /* owned by the caller on add; malloc'd on get (free with spade_archive_env_clear) */
    size_t source_len;
    uint64_t hash; /* spade_source_fingerprint of source */
    char gate[32];
    char reason[512];
    char hint[512];
    double pass_nohint, pass_hint, regret, reward;
    int plays; /* per arm */
    const float *embedding; /* (embed_dim) or NULL; malloc'd on get */
    int embed_dim;
    char writer[512]; /* "remote:URL#MODEL" for a served designer; "" for the run's own policy or files */
} spade_archive_env;

int spade_archive_add_env(spade_archive *a, const spade_archive_env *e, long *id, char *err, size_t errlen);
/* The paired plays of one environment: seed[i] was played once without and
 * once with the hint; success and return of each arm. */
int spade_archive_add_plays(spade_archive *a, long env_id, int n, const uint64_t *seed, const double *success_nohint,
                            const double *success_hint, const double *return_nohint, const double *return_hint,
                            char *err, size_t errlen);
/* One iteration's metrics as a JSON object (stored as text). */
int spade_archive_add_iteration(spade_archive *a, int iteration, const char *metrics_json, char *err, size_t errlen);

/* A served designer's reply to slot `slot` of iteration `it` (the replies
 * table, which no rollback touches). put: inserted or replaced, committed
 * at once unless a transaction is open. get: 0 with *text malloc'd when the
 * row is there and its request digest equals `request`; 1 when not (none, or
 * another request: the caller asks again); -1 on error. */
int spade_archive_put_reply(spade_archive *a, int it, int slot, const char *request, const char *endpoint,
                            const char *model, const char *text, size_t len, char *err, size_t errlen);
int spade_archive_get_reply(spade_archive *a, int it, int slot, const char *request, char **text, size_t *len,
                            char *err, size_t errlen);

/* Reads environment id; 0, 1 when there is no such id, -1 on error. */
int spade_archive_get_env(spade_archive *a, long id, spade_archive_env *out, char *err, size_t errlen);
void spade_archive_env_clear(spade_archive_env *e);

/* Calls fn for each environment (valid_only: gate == ""), newest first, at
 * most limit (<= 0: all); source and embedding are not loaded (NULL). fn
 * returning nonzero stops the walk. */
typedef int (*spade_archive_env_fn)(void *ctx, const spade_archive_env *e);
int spade_archive_each_env(spade_archive *a, int valid_only, const char *family, int limit, spade_archive_env_fn fn,
                           void *ctx, char *err, size_t errlen);

/* ---- the designer's memory ---- */

typedef struct spade_memory_opts {
    int window; /* FIFO: only the newest `window` valid environments count (200) */
    int positives; /* how many positives (2) */
    int pool; /* positives are drawn from the top `pool` by regret (10) */
    double pos_lo, pos_hi; /* a positive's no-hint pass rate lies in [pos_lo, pos_hi] (0.15, 0.85) */
    double neg_lo, neg_hi; /* a negative's pass rate is < neg_lo or > neg_hi (0.1, 0.9) */
} spade_memory_opts;
void spade_memory_opts_default(spade_memory_opts *o);

/* Selects the memory block for a prompt of family `family`: up to
 * o->positives ids into pos (same family, pass rate in range, drawn without
 * replacement from the top o->pool by regret; ties at the pool's edge are
 * broken at random, never by age) and at most one negative into *neg (-1 for
 * none; same family preferred, else any). Draws from *rng (xoshiro-free
 * splitmix64 state, advanced), so a resumed run that restores it draws the
 * same. */
int spade_memory_select(spade_archive *a, const char *family, const spade_memory_opts *o, uint64_t *rng, long *pos,
                        int *n_pos, long *neg, char *err, size_t errlen);

#endif /* SPADE_ARCHIVE_H */
