/* plays.c — paired plays (plays.h).
 *
 * What it is not: the choice of seeds (the loop draws them per environment
 * and iteration from its seeded stream).
 */
#include "designer/plays.h"

#include <stdlib.h>

#include "errbuf.h"

int spade_paired_play(spade_sandbox *sb, const spade_ep_spec *spec, spade_agent *agent, const uint64_t *seeds, int n,
                      int repeats, const spade_episodes_opts *eo, spade_ep_outcome *out, spade_paired *m, char *err,
                      size_t errlen) {
    int R = repeats > 1 ? repeats : 1;
    n *= R; /* plays an arm */
    spade_ep_request *req = n > 0 ? calloc((size_t)2 * n, sizeof *req) : NULL;
    double *s = n > 0 ? calloc((size_t)2 * n, sizeof *s) : NULL;
    int rc = -1;
    if (!req || !s) {
        spade_errf(err, errlen, n > 0 ? "paired plays: out of memory" : "paired plays: no seeds");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        req[i].seed = req[n + i].seed = seeds[i / R];
        req[i].repeat = req[n + i].repeat = i % R;
        req[n + i].hint = 1;
    }
    if (spade_episodes_play(sb, spec, 1, req, 2L * n, agent, eo, out, err, errlen) < 0) goto done;
    for (int i = 0; i < 2 * n; i++) s[i] = out[i].success;
    spade_paired_measure(s, s + n, n, R, m);
    rc = 0;
done:
    free(req);
    free(s);
    return rc;
}
