/* cmd_gates.c — `spade check --gates FILE`: exactly the validation gates the
 * self-play loop puts a generated environment through (designer/gates.h),
 * one line per gate, `PASS name: detail` or `FAIL name: reason` (SKIP after
 * the compile gate fails, or after a call timed out), each printed as soon as
 * it is known, so a person sees why the loop would refuse it.
 * Novelty is judged against the grounding corpus the loop uses by default
 * (stdenv/ and plugins/), by text and by behaviour (the nearest of them
 * played beside it), leaving out any file with the same source (a stdenv
 * file is not a duplicate of itself). The gates' seeds are those of run seed 0.
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

/* Prints the gates' lines in order as far as they are known, at once. */
typedef struct printer {
    int next;
} printer;

static void print_known(void *arg, const spade_gate_report *rep, spade_gate g) {
    (void)g;
    printer *p = arg;
    static const char *const word[] = {"----", "PASS", "FAIL", "SKIP"};
    while (p->next < SPADE_GATE_COUNT && rep->status[p->next]) {
        printf("%s %s: %s\n", word[rep->status[p->next] & 3], spade_gate_name((spade_gate)p->next),
               rep->detail[p->next]);
        p->next++;
    }
    fflush(stdout);
}

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
    const char **names = NULL, **rsrc = NULL;
    size_t *rlen = NULL;
    if (spade_corpus_new(&c, dirs, 2, guard, 1, NULL, err, sizeof err) == 0) nc = spade_corpus_count(c);
    refs = calloc((size_t)(nc ? nc : 1) * SPADE_VENDI_DIM, sizeof *refs);
    names = calloc((size_t)(nc ? nc : 1), sizeof *names);
    rsrc = calloc((size_t)(nc ? nc : 1), sizeof *rsrc);
    rlen = calloc((size_t)(nc ? nc : 1), sizeof *rlen);
    int n = 0;
    uint64_t self = spade_source_fingerprint(src, len);
    for (int i = 0; refs && names && rsrc && rlen && i < nc; i++) {
        const spade_corpus_item *it = spade_corpus_item_at(c, i);
        if (spade_source_fingerprint(it->text, it->len) == self) continue;
        spade_vendi_embed(it->text, it->len, refs + (size_t)n * SPADE_VENDI_DIM, SPADE_VENDI_DIM);
        rsrc[n] = it->text;
        rlen[n] = it->len;
        names[n++] = it->name;
    }
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    o.require_solve = require_solve;
    o.refs = refs;
    o.ref_names = names;
    o.n_refs = n;
    o.dim = SPADE_VENDI_DIM;
    o.ref_src = rsrc;
    o.ref_len = rlen;
    printer pr = {0};
    o.on_verdict = print_known;
    o.on_verdict_arg = &pr;
    static spade_gate_report rep;
    if (spade_gates_run(sb, file, src, len, &o, &rep, err, sizeof err) < 0)
        cli_err(CLI_FAIL, "check", "%s", err);
    else {
        printf("%s: %s\n", file, rep.first_failed < 0 ? "passes every gate" : "refused by the gates");
        rc = rep.first_failed < 0 ? CLI_OK : CLI_FAIL;
    }
    free(refs);
    free(names);
    free(rsrc);
    free(rlen);
    spade_corpus_free(c);
    spade_heldout_guard_free(guard);
    free(src);
    return rc;
}
