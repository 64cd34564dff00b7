/* corpus.h — the designer's grounding corpus: the documents one excerpt of
 * which opens every designer prompt.
 *
 * What it is: items read once from a list of files and directories (stdenv/
 * by default, plus the user's corpus.dirs): every .c, .md and .txt file is one
 * item; every line of a .jsonl file with a string field "text" is one item
 * (named FILE:LINE). Directories are walked recursively, in sorted order, so
 * the item order, and with a seeded draw the sequence of excerpts, depends
 * only on the files. Every candidate is put to the held-out guard
 * (core/heldout.h) first: a held-out file, or a copy of one, never becomes an
 * item (it is counted as refused). A .c item's family is its ENV's .family.
 * What it is not: the prompt (prompt.h cuts the excerpt to its budget) nor a
 * retrieval index: draws are uniform, as the reference's.
 */
#ifndef SPADE_DESIGNER_CORPUS_H
#define SPADE_DESIGNER_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include "heldout.h"

typedef struct spade_corpus spade_corpus;

typedef struct spade_corpus_item {
    const char *name; /* the file (or FILE:LINE for JSONL) */
    const char *text; /* NUL-terminated */
    size_t len;
    char family[32]; /* a .c item's ENV .family, else "" */
} spade_corpus_item;

/* Reads every item of paths[0..n) (files or directories). guard may be NULL
 * only when allow_unguarded is set (tests); a loader in a run always passes
 * one. A path that does not exist, a malformed JSONL line (named by file and
 * line) or a corpus with no item at all is an error. n_refused (may be NULL)
 * counts held-out files kept out. */
int spade_corpus_new(spade_corpus **out, const char *const *paths, int n, const spade_heldout_guard *guard,
                     int allow_unguarded, int *n_refused, char *err, size_t errlen);
void spade_corpus_free(spade_corpus *c);
int spade_corpus_count(const spade_corpus *c);
const spade_corpus_item *spade_corpus_item_at(const spade_corpus *c, int i);
/* A uniform draw (advances *rng). */
int spade_corpus_draw(const spade_corpus *c, uint64_t *rng);

/* The value of the JSON string field `field` of one JSON object line, decoded
 * (\uXXXX escapes to UTF-8) into a malloc'd NUL-terminated buffer; 1 when the
 * line has no such string field, -1 (with a message) when it is not a JSON
 * object. Exposed for the tests. */
int spade_json_string_field(const char *line, size_t len, const char *field, char **out, size_t *out_len, char *err,
                            size_t errlen);

#endif /* SPADE_DESIGNER_CORPUS_H */
