/* gates_determinism.c — reset_deterministic and replay_deterministic (gates_internal.h).
 *
 * What it is: the determinism gates' episodes, played first on the two
 * fresh, poisoned workers, and their verdicts, given after limits.
 * What it is not: spade check's determinism checks (core/check_determinism.c,
 * direct calls on two instances side by side): these play two workers in
 * opposite orders through the episode layer, like every gate.
 */
#include <stdio.h>
#include <stdlib.h>

#include "designer/gates_internal.h"

/* ---- the first-observation agent: ends every episode before its first step ---- */

static int stop_act(void *ctx, int n, const spade_ep_view *v, spade_ep_act *acts, char *err, size_t errlen) {
    (void)ctx, (void)v, (void)err, (void)errlen;
    for (int i = 0; i < n; i++) acts[i] = (spade_ep_act){.stop = "first_observation"};
    return 0;
}

static spade_agent *stop_agent(void) {
    spade_agent *a = calloc(1, sizeof *a);
    if (a) a->name = "first-observation", a->act = stop_act;
    return a;
}

/* The determinism gates' episodes, played first, while both workers are
 * fresh: the same seeds in opposite orders, one worker each. With one
 * poison seed in both (worker 1 is given worker 0's), adjacent instances get
 * complementary patterns (core/host.c); worker 0 plays seed i on instance i
 * (then 6 + i for the script), worker 1 on instance 5 - i (11 - i), of the
 * other parity, so every bit of an uninitialised read differs between the
 * workers. These are each worker's first episodes: nothing ran before them
 * in either process. Episode 2j + w is instance j of worker w (the episode
 * layer takes an episode's first free env). Judged after limits. */
void spade_gates_play_determinism(gctx *g) {
    spade_failure f;
    if (spade_vecenv_set_poison(g->V, 1, DET_POISON, &f) < 0) {
        snprintf(g->det_err, sizeof g->det_err, "%s: %.900s", spade_outcome_name(f.outcome), f.message);
        return;
    }
    static const char *const script[] = {"1", "north", "yes", "a", "42", "b", "2", "east"};
    gplay *r = g->r;
    int s = spade_gates_add_spec(r, g->file, g->src, g->len, NULL, g->V, 0, g->n_default);
    for (int k = 0; k < 2; k++) {
        spade_gates_add_agent(r, k ? spade_agent_script(script, 8, SPADE_TAIL_STOP) : stop_agent());
        for (int j = 0; j < DET_SEEDS; j++)
            for (int w = 0; w < 2; w++)
                spade_gates_add_req(r, s, spade_gates_seed_of(g, SEED_DET, w ? DET_SEEDS - 1 - j : j));
    }
    g->tr.first_obs = g->first_obs;
    g->det_ok = spade_gates_play(g->sb, r, g->o, g->det, &g->tr, g->det_err, sizeof g->det_err) == 0;
    g->tr.first_obs = NULL;
    if (g->det_ok) spade_gates_note_timeouts(g, g->det, 4 * DET_SEEDS);
    /* The other gates need no poison (it costs each call a 32 KiB fill). A
     * failure here is a dead worker: the next play revives it, still
     * poisoned, which costs only time. */
    spade_failure ignore;
    spade_vecenv_set_poison(g->V, -1, 0, &ignore);
}

/* the determinism verdicts (played first): worker 0's episodes in seed
 * order, then worker 1's in its own order, as the failures are looked for */
void spade_gates_determinism(gctx *g) {
    for (int k = SPADE_GATE_RESET_DET; k <= SPADE_GATE_REPLAY_DET; k++) {
        long base = (long)(k - SPADE_GATE_RESET_DET) * 2 * DET_SEEDS;
        const spade_ep_outcome *bad = NULL;
        int differ = -1;
        for (int w = 0; g->det_ok && w < 2 && !bad; w++)
            for (int j = 0; j < DET_SEEDS && !bad; j++)
                if (g->det[base + 2 * j + w].end == SPADE_EP_FAILED) bad = &g->det[base + 2 * j + w];
        for (int i = 0; g->det_ok && i < DET_SEEDS && differ < 0; i++) {
            long a = base + 2 * i, b = base + 2 * (DET_SEEDS - 1 - i) + 1; /* seed i in each worker */
            if (g->tr.h[a] != g->tr.h[b] || g->det[a].ret != g->det[b].ret) differ = i;
        }
        if (!g->det_ok)
            spade_gates_verdict(g->rep, (spade_gate)k, SPADE_GATE_FAIL, "could not play: %s", g->det_err);
        else if (bad)
            spade_gates_verdict(g->rep, (spade_gate)k, SPADE_GATE_FAIL, "seed %llu: %s: %.160s",
                                (unsigned long long)bad->seed, spade_outcome_name(bad->failure.outcome),
                                bad->failure.message);
        else if (differ >= 0)
            spade_gates_verdict(
                g->rep, (spade_gate)k, SPADE_GATE_FAIL,
                "seed %llu plays differently in a second worker (state outside S, or uninitialised memory)",
                (unsigned long long)spade_gates_seed_of(g, SEED_DET, differ));
        else
            spade_gates_verdict(g->rep, (spade_gate)k, SPADE_GATE_PASS, "%d seeds, two workers, opposite orders%s",
                                DET_SEEDS, k == SPADE_GATE_REPLAY_DET ? ", an 8-action script" : "");
    }
}
