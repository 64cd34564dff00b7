/* template.h — a designer template ([designer] source = template): an
 * environment source in the DSL with holes marked "@@" that the designer (the
 * policy) fills in order, and the pieces the loop needs around it: reading and
 * checking a template, the text kept for a hole, splicing the fills into a
 * source, the embedding that novelty and Vendi compare in this mode (and the
 * one of the games the fillings set), and the short prompt.
 *
 * A template of H holes is H + 1 pieces of fixed text: piece 0, hole 1,
 * piece 1, ..., hole H, piece H. The filled source is the pieces with each
 * hole's kept text between them.
 * What it is: text handling, no policy and no tokens (the decoding of the
 * holes, with the transcript and its mask, is selfplay/template.c's).
 * What it is not: a checker of the filled source (the gates judge it like
 * any written source).
 */
#ifndef SPADE_DESIGNER_TEMPLATE_H
#define SPADE_DESIGNER_TEMPLATE_H

#include <stddef.h>

#define SPADE_TEMPLATE_HOLE "@@"
#define SPADE_TEMPLATE_MAX_HOLES 32

typedef struct spade_template spade_template;

/* Parses text (len bytes) as a template; name is what errors and the archive
 * call it (its path). Errors name the file, and the line where there is one:
 * no hole at all, more than SPADE_TEMPLATE_MAX_HOLES, "@@@" (which two '@'
 * make the hole is ambiguous), a NUL byte. 0, or -1 with err. */
int spade_template_parse(spade_template **out, const char *name, const char *text, size_t len, char *err,
                         size_t errlen);
/* Reads the file at path and parses it (an unreadable file is an error naming it). */
int spade_template_load(spade_template **out, const char *path, char *err, size_t errlen);
void spade_template_free(spade_template *t);

const char *spade_template_name(const spade_template *t);
/* The family its ENV line names (.family = "..."), or "any" when it names
 * none it can read (rewards are centred per family: the template's slots are
 * one group). */
const char *spade_template_family(const spade_template *t);
int spade_template_holes(const spade_template *t);
/* Piece k in 0..holes (its bytes, *len of them; not NUL-terminated). */
const char *spade_template_piece(const spade_template *t, int k, size_t *len);
/* The 1-based line hole k (0-based) is on. */
int spade_template_hole_line(const spade_template *t, int k);

/* What a hole keeps of the text sampled for it: everything before the first
 * newline (a NUL byte ends it too). Returns the kept length. */
size_t spade_template_hole_text(const char *text, size_t len);

/* The filled source: the pieces with fills[k] (lens[k] bytes, already the
 * kept text) in hole k. *out is malloc'd and NUL-terminated. 0, or -1 (out
 * of memory). */
int spade_template_fill(const spade_template *t, const char *const *fills, const size_t *lens, char **out,
                        size_t *out_len);

/* The embedding of a filling that novelty and the archive compare in template
 * mode: one hashed feature per hole, of (hole index, the fill without blank
 * space), into x[0..d) with unit length. Two identical fillings have cosine 1;
 * fillings that differ in m of H holes have cosine 1 - m/H (barring a hash
 * collision among d buckets), so no two different fillings are near-duplicates
 * at a threshold above (H - 1)/H. */
void spade_template_embed(const char *const *fills, const size_t *lens, int n, double *x, int d);
/* The embedding of the game a filling sets, for the loop's vendi_n_games: one
 * hashed feature per hole, of (hole index, the hole's last integer as
 * parse_int reads it), or of the fill's text as above when it has none. Two
 * fillings that differ only in words around their numbers ("ine, 4, 1" and
 * "4, 2, 1") embed alike: a template that reads its holes with parse_int, as
 * templates/cups.c does, sets the same game with both. It knows nothing of
 * what the template does with the number after (cups.c clamps to 1-60, so 60
 * and 61 are one game and embed apart). */
void spade_template_embed_games(const char *const *fills, const size_t *lens, int n, double *x, int d);

/* The designer's prompt in template mode: one line naming the task and the
 * family (the template's text follows it in the transcript, after
 * <|source|>). *out is malloc'd. 0, or -1 (out of memory). */
int spade_template_prompt(const spade_template *t, char **out, size_t *out_len);

#endif /* SPADE_DESIGNER_TEMPLATE_H */
