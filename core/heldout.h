/* heldout.h — the held-out evaluation suite (eval/heldout/) and the guard that
 * keeps it out of everything the designer and the training pool see.
 *
 * What it is: where the suite lives (SPADE_HELDOUT, else the installed
 * eval/heldout, or the source tree's for an uninstalled build), its files,
 * and a guard that a loader of the grounding corpus, the designer's memory or
 * the agent's pool (and `spade demos`, for its training data) asks about every
 * file before taking it. A file is refused when its directory holds the
 * marker file HELDOUT, or when its source, normalised (comments and
 * whitespace removed), is the same as a held-out file's: a copy of a held-out
 * environment under another name or directory is caught too.
 * What it is not: a near-duplicate detector (a rewrite of a held-out mechanic
 * passes; the designer's novelty gate and archive deal with similarity), nor
 * part of the registry's default search path: `spade run lights_row` does not
 * find a held-out environment unless its file or SPADE_PATH names it.
 */
#ifndef SPADE_HELDOUT_H
#define SPADE_HELDOUT_H

#include <stddef.h>
#include <stdint.h>

#include "source.h" /* spade_source_fingerprint */

#define SPADE_HELDOUT_MARKER "HELDOUT"
#define SPADE_HELDOUT_MAX_FILES 256

/* The suite's directory: $SPADE_HELDOUT when set (it must exist and hold the
 * marker), else spade_data_path("eval/heldout") (the source tree's for an
 * uninstalled build, the installed one otherwise). 0, or -1 with a message
 * saying where it looked. */
int spade_heldout_dir(char *out, size_t cap, char *err, size_t errlen);

/* The suite's *.c files in dir, sorted by name, as full paths in a malloc'd
 * array of n strings (free each, then the array). 0, or -1 with a message. */
int spade_heldout_files(const char *dir, char ***paths, int *n, char *err, size_t errlen);

/* 1 when the directory of path holds the HELDOUT marker, else 0. */
int spade_path_is_heldout(const char *path);

/* The guard: the fingerprints of every held-out file. */
typedef struct spade_heldout_guard spade_heldout_guard;
/* dir NULL: spade_heldout_dir(). A suite that cannot be found is an error, so a
 * loader cannot silently run unguarded. */
int spade_heldout_guard_new(spade_heldout_guard **out, const char *dir, char *err, size_t errlen);
void spade_heldout_guard_free(spade_heldout_guard *g);
int spade_heldout_guard_count(const spade_heldout_guard *g);
/* 1 (refused, with why filled in) when path is in a held-out directory or src
 * (len bytes) is a held-out file's source; else 0. src may be NULL (only the
 * path is judged). */
int spade_heldout_guard_refuses(const spade_heldout_guard *g, const char *path, const char *src, size_t len, char *why,
                                size_t whylen);

#endif /* SPADE_HELDOUT_H */
