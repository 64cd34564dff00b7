/* cmd_gates.c — `spade check --gates FILE`: exactly the validation gates the
 * self-play loop puts a generated environment through (designer/gates.h),
 * one line per gate, `PASS name: detail` or `FAIL name: reason` (SKIP after
 * the compile gate fails), so a person sees why the loop would refuse it.
 * Novelty is judged against the grounding corpus the loop uses by default
 * (stdenv/ and plugins/), leaving out any file with the same source (a
 * stdenv file is not a duplicate of itself).
 * What it is not: the gates (designer/gates.c) nor `spade check` (the
 * checker for people writing environments).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "designer/corpus.h"
#include "designer/gates.h"
#include "heldout.h"
#include "source.h"
#include "vendi.h"

int cli_check_gates(spade_sandbox *sb, const char *file, int require_solve) {
    char err[2048];
    char *src = NULL;
    size_t len = 0;
    if (spade_read_source(file, &src, &len, err, sizeof err) < 0) return cli_err(CLI_FAIL, "check", "%s", err);
    spade_heldout_guard *guard = NULL;
    spade_heldout_guard_new(&guard, NULL, NULL, 0); /* the corpus's guard; without a suite it is unguarded */
    const char *dirs[2];
    char d0[4096], d1[4096];
    spade_data_path("stdenv", d0, sizeof d0);
    spade_data_path("plugins", d1, sizeof d1);
    dirs[0] = d0;
    dirs[1] = d1;
    spade_corpus *c = NULL;
    int nc = 0, rc = CLI_FAIL;
    double *refs = NULL;
    const char **names = NULL;
    if (spade_corpus_new(&c, dirs, 2, guard, 1, NULL, err, sizeof err) == 0) nc = spade_corpus_count(c);
    refs = calloc((size_t)(nc ? nc : 1) * SPADE_VENDI_DIM, sizeof *refs);
    names = calloc((size_t)(nc ? nc : 1), sizeof *names);
    int n = 0;
    uint64_t self = spade_source_fingerprint(src, len);
    for (int i = 0; refs && names && i < nc; i++) {
        const spade_corpus_item *it = spade_corpus_item_at(c, i);
        if (spade_source_fingerprint(it->text, it->len) == self) continue;
        spade_vendi_embed(it->text, it->len, refs + (size_t)n * SPADE_VENDI_DIM, SPADE_VENDI_DIM);
        names[n++] = it->name;
    }
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    o.require_solve = require_solve;
    o.refs = refs;
    o.ref_names = names;
    o.n_refs = n;
    o.dim = SPADE_VENDI_DIM;
    static spade_gate_report rep;
    static char text[16384];
    if (spade_gates_run(sb, file, src, len, &o, &rep, err, sizeof err) < 0) cli_err(CLI_FAIL, "check", "%s", err);
    else {
        spade_gate_report_text(&rep, text, sizeof text);
        fputs(text, stdout);
        printf("%s: %s\n", file, rep.first_failed < 0 ? "passes every gate" : "refused by the gates");
        rc = rep.first_failed < 0 ? CLI_OK : CLI_FAIL;
    }
    free(refs);
    free(names);
    spade_corpus_free(c);
    spade_heldout_guard_free(guard);
    free(src);
    return rc;
}
