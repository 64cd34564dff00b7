/* pool.h — the agent's environment pool for fixed-pool RL: environment specs
 * and directories, compiled once to be sure they load, refreshed between
 * iterations so that a file added to or changed in a pool directory (plugins/
 * while a run goes on) joins or replaces its entry at the next iteration.
 *
 * What it is: a list of entries (name, params, source, family, success
 * threshold). A spec ("maze:size=2") is read once; every .c file of a pool
 * directory is an entry with the default params. A new or changed file is
 * compiled in a sandbox worker before it is taken: one that does not compile
 * (or whose params the spec does not fit) is reported with its file:line
 * and the entry keeps its old version; a new one that fails is left out
 * until it is fixed. Held-out files are refused (core/heldout.h).
 * What it is not: a curriculum (the trainer picks entries and settings) nor
 * the registry's hot-loading of a running worker: the pool hands source text
 * to the episode layer, which loads it afresh.
 */
#ifndef SPADE_AGENT_POOL_H
#define SPADE_AGENT_POOL_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "heldout.h"
#include "registry.h"
#include "sandbox/sandbox.h"

#define SPADE_POOL_MAX 512

typedef struct spade_pool_entry {
    char name[64]; /* registry name (the file stem) */
    char path[SPADE_PATH_MAX];
    char params[SPADE_SPEC_PARAMS_MAX]; /* "k=v,..." or "" */
    char family[32];
    char *source;
    size_t len;
    int from_dir; /* found by scanning a pool directory */
    time_t mtime;
    off_t size;
    int version; /* 1 on load, +1 per accepted change */
} spade_pool_entry;

typedef struct spade_pool spade_pool;

/* What a refresh did, for the run's log: one line per event. */
typedef void (*spade_pool_report_fn)(void *ctx, const char *line);

/* specs[0..n_specs) are registry specs; dirs[0..n_dirs) directories scanned
 * for *.c. guard may be NULL only in tests. An empty pool, a spec that does
 * not resolve or load, or a directory that does not exist is an error. */
int spade_pool_new(spade_pool **out, spade_sandbox *sb, const spade_registry *reg, const char *const *specs,
                   int n_specs, const char *const *dirs, int n_dirs, const spade_heldout_guard *guard,
                   spade_pool_report_fn report, void *ctx, char *err, size_t errlen);
void spade_pool_free(spade_pool *p);
int spade_pool_count(const spade_pool *p);
const spade_pool_entry *spade_pool_entry_at(const spade_pool *p, int i);
/* Rescans the directories: new files join, changed ones are recompiled and
 * replace their entry when they load. Returns how many entries changed (0 or
 * more), or -1 on a failure of the sandbox itself. */
int spade_pool_refresh(spade_pool *p, char *err, size_t errlen);

#endif /* SPADE_AGENT_POOL_H */
