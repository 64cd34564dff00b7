/* registry.h — finds environments by name, lists them, parses environment
 * specs, and hot-reloads environment files that change while a process runs.
 *
 * What it is: the layer between a name a person types ("maze:size=9") and the
 * source text the sandbox compiles. Search order (first hit wins; later files
 * with the same name are "shadowed"):
 *   1. each directory of the colon-separated SPADE_PATH,
 *   2. ./plugins, then ./stdenv (relative to the current directory),
 *   3. the installed SPADE_DATADIR/plugins, then SPADE_DATADIR/stdenv,
 *   4. the source tree's plugins, then its stdenv, only when the running
 *      program is the uninstalled build (spade_registry_uninstalled): an
 *      installed spade finds only the installed data and the user's paths.
 * The installed and source directories come from the generated core/paths.h,
 * which changes (and so rebuilds this file) when the prefix does.
 * Directories that do not exist are skipped; one reached twice (e.g. the current
 * directory is the source tree) is searched once. An environment's registry
 * name is its file name without ".c" ("stdenv/maze.c" is "maze"); its ENV()
 * name is shown by listings but is not used for lookup (that would mean
 * compiling every file to find one).
 *
 * What it is not: a compiler or a sandbox. Listing and hot-loading compile
 * through core/sandbox (spade_worker_load), so an environment's code never runs
 * in the calling process. Not thread-safe: one thread per handle.
 */
#ifndef SPADE_REGISTRY_H
#define SPADE_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "host.h"
#include "sandbox/sandbox.h"

#define SPADE_PATH_MAX 4096
#define SPADE_SPEC_PARAMS_MAX 1024
/* Larger source files are refused: environments are 15-60 lines. */
#define SPADE_SOURCE_MAX (1024 * 1024)

/* ---- environment specs: NAME_OR_FILE[:key=value,...] ----------------------- */

/* A spec split into what to load and its params. File paths may contain ':';
 * the text is split at the LAST ':' only when what follows is empty or a list of
 * key=value pairs with identifier keys ("a:b.c" stays one path; "a:b.c:x=1"
 * is "a:b.c" with "x=1"). params are not checked against the environment here
 * (spade_params_parse does that once the environment's params are known). */
typedef struct spade_spec {
    char target[SPADE_PATH_MAX]; /* a registry name or a file path */
    char params[SPADE_SPEC_PARAMS_MAX]; /* "key=value,..." or "" */
} spade_spec;

/* 0, or -1 with a message (empty target, too long, malformed params). */
int spade_spec_parse(const char *text, spade_spec *out, char *err, size_t errlen);

/* Whether target names a file rather than a registry name: it contains '/' or
 * ends in ".c". */
int spade_spec_is_path(const char *target);

/* A valid registry name / file stem: [a-z0-9_-]+, 1..63 characters, starting
 * with a letter or digit. */
int spade_name_valid(const char *name);

/* Reads a whole source file (at most SPADE_SOURCE_MAX bytes) into a malloc'd,
 * NUL-terminated buffer. 0, or -1 with a message naming the file. */
int spade_read_source(const char *path, char **out, size_t *len, char *err, size_t errlen);

/* ---- the registry: search path, lookup, listing -------------------------- */

typedef struct spade_registry spade_registry;

enum {
    SPADE_REGISTRY_NO_DEFAULTS = 1, /* search only the given path (no ./plugins, datadir, srcdir) */
};

/* Snapshots the search path. spade_path: colon-separated directories; NULL means
 * getenv("SPADE_PATH"). Returns 0 or -1 (out of memory). */
int spade_registry_new(spade_registry **out, const char *spade_path, int flags, char *err, size_t errlen);
void spade_registry_free(spade_registry *r);
/* 1 when the running program is under the build directory (not installed). */
int spade_registry_uninstalled(void);
/* Where spade's own data directory `sub` ("stdenv", "plugins", "eval/heldout")
 * is for this program: the first that exists of the source tree's (when
 * uninstalled), the one beside the running binary (when it is not the installed
 * one: a built tree copied or moved elsewhere), the installed one; the installed
 * one when none does. Into out; returns out. */
const char *spade_data_path(const char *sub, char *out, size_t cap);
/* The directories spade_data_path tries for `sub`, in order, comma-separated:
 * for an error that says where the data was looked for. Into out; returns out. */
const char *spade_data_tried(const char *sub, char *out, size_t cap);
int spade_registry_num_dirs(const spade_registry *r);
const char *spade_registry_dir(const spade_registry *r, int i);

/* A name ("maze") is looked up as NAME.c in each directory in order; a path
 * (spade_spec_is_path) is taken as it is and must exist. 0 with the file's path,
 * or -1 with a message listing where it looked. */
int spade_registry_find(const spade_registry *r, const char *name_or_path, char *path, size_t pathcap, char *err,
                        size_t errlen);

/* Parses a spec and finds its file: path and params (both may be NULL). */
int spade_registry_resolve(const spade_registry *r, const char *spec, char *path, size_t pathcap, char *params,
                           size_t paramscap, char *err, size_t errlen);

/* The stems of one directory's environment files (NAME.c, NAME a valid
 * registry name, regular files), sorted, in a malloc'd array of n strings
 * (free each, then the array). A directory that cannot be opened is empty
 * (*missing, when not NULL, says so). 0, or -1 when out of memory. */
int spade_dir_envs(const char *dir, char ***names, int *n, int *missing);

/* One environment file found on the search path. */
typedef struct spade_env_listing {
    char name[64]; /* registry name: the file stem */
    char path[SPADE_PATH_MAX]; /* where it was found */
    int shadowed; /* an earlier directory has a file with the same name */
    int ok; /* compiled and validated; info is meaningful */
    spade_env_info info;
    char error[1200]; /* when !ok: the failure, with file and line */
} spade_env_listing;

/* Every *.c of every search directory, in search order, files in each directory
 * sorted by name. With sb, each non-shadowed file is compiled in a worker to
 * fill info (or error); with sb NULL only names and paths are filled (ok = 0,
 * error empty). *out is malloc'd (free with free()). 0, or -1 with a message. */
int spade_registry_list(const spade_registry *r, spade_sandbox *sb, spade_env_listing **out, int *n, char *err,
                        size_t errlen);

/* ---- hot-loading -------------------------------------------------------- */

/* Serves one environment file and reloads it when it changes. On every
 * spade_hotenv_acquire (call it when a new episode starts) the file's mtime and
 * size are compared with the last seen; when they differ (or the file was
 * modified in the last two seconds, within a coarse clock's granularity) the
 * file is read and hashed, and if its content changed it is compiled in a fresh
 * worker. A
 * version that compiles, validates and accepts the params replaces the current
 * one for new acquires; one that does not leaves the current version serving
 * and records the failure (spade_hotenv_last_error, and the callback). The same
 * broken content is not recompiled until the file changes again.
 *
 * Versions are reference-counted: an episode running on an old version keeps
 * its worker alive until it releases the version, so a reload never pulls the
 * floor from under a running episode. */
typedef struct spade_hotenv spade_hotenv;

typedef struct spade_hotenv_version {
    spade_worker *worker; /* loaded and validated; add instances to it */
    const spade_env_info *info; /* the worker's info */
    double param_values[SPADE_INFO_MAX_PARAMS]; /* params parsed against this version */
    const char *source; /* this version's source text (NUL-terminated) */
    size_t source_len;
    uint64_t hash; /* FNV-1a 64 of the source */
    int generation; /* 1 for the first version, +1 for each reload */
    int refs_; /* private */
} spade_hotenv_version;

/* Called on every failed reload (not on the first load: that one fails
 * spade_hotenv_new). f names the file and the line for a compile error. */
typedef void (*spade_hotenv_error_fn)(void *ctx, const char *path, const spade_failure *f);

/* Loads path (with params, "key=value,..." or NULL) for the first time. 0, or
 * -1 with f filled (compile error with its line, params error, missing file). */
int spade_hotenv_new(spade_hotenv **out, spade_sandbox *sb, const char *path, const char *params, spade_failure *f);
/* Frees the handle and every version no one holds; versions still acquired are
 * freed by their last release (which then needs no handle: pass NULL). */
void spade_hotenv_free(spade_hotenv *h);
void spade_hotenv_set_error_callback(spade_hotenv *h, spade_hotenv_error_fn fn, void *ctx);

/* Checks the file and returns the current version with one more reference.
 * *reloaded (may be NULL) is 1 when this call switched to a new version. A
 * current version whose worker died (an environment that crashed) is reloaded
 * from the same source. Returns 0, or -1 when no version can be served (the
 * worker died and the reload failed); a failed reload of a changed file is not
 * an error here (the old version serves; see last_error). */
int spade_hotenv_acquire(spade_hotenv *h, spade_hotenv_version **v, int *reloaded);
void spade_hotenv_release(spade_hotenv *h, spade_hotenv_version *v);

/* The failure of the last reload attempt, "" when the current file content is
 * the one serving. Valid until the next acquire. */
const char *spade_hotenv_last_error(const spade_hotenv *h);
const spade_failure *spade_hotenv_last_failure(const spade_hotenv *h);
const char *spade_hotenv_path(const spade_hotenv *h);
/* Generation of the version new acquires get. */
int spade_hotenv_generation(const spade_hotenv *h);

/* FNV-1a 64-bit hash (used for change detection; exposed for the archive). */
uint64_t spade_hash64(const void *data, size_t len);

#endif /* SPADE_REGISTRY_H */
