/* gates_agents.c — probe_actions and the behavioural gates (gates_internal.h):
 * random_agent, noop_agent, constant_agent, obs_echo, hint_echo, solve and
 * winnable.
 *
 * What it is: the one agent run at the defaults in which each of these
 * gates' agents (core/agents.h) plays its own range of episodes, and each
 * gate's verdict from its range.
 * What it is not: the agents themselves (core/agents.c), nor the limits
 * gate's random and SOLVE plays at the param corners (gates.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "designer/gates_internal.h"

/* ---- the probes: episode e sends probe e % n every step (spade_agent_probes) ---- */

static spade_agent *probe_agent(void) {
    char long_line[4096]; /* copied by the agent */
    static const char binary_probe[] = {'\x01', '\x00', '\xff', 'A', '\x7f', '\n', '\x1b', '[', '2', 'J'};
    memset(long_line, 'x', sizeof long_line);
    const char *const p[N_PROBES] = {"", "1", "test", "42", "\\boxed{1}", long_line, binary_probe};
    const size_t l[N_PROBES] = {0, 1, 4, 2, 9, sizeof long_line, sizeof binary_probe};
    return spade_agent_probes(p, l, N_PROBES, 0);
}

static const spade_ep_outcome *first_failure(const spade_ep_outcome *out, long n) {
    for (long i = 0; i < n; i++)
        if (out[i].end == SPADE_EP_FAILED) return &out[i];
    return NULL;
}

static double rate(const spade_ep_outcome *out, long n) {
    long k = 0;
    for (long i = 0; i < n; i++) k += out[i].success;
    return n ? (double)k / (double)n : 0;
}

/* The constant answers: answers that ignore the seed. */
static void add_const(gctx *g, const char *c, size_t n) {
    if (g->n_const >= MAX_CONST || n >= sizeof g->consts[0]) return;
    for (int k = 0; k < g->n_const; k++)
        if (strlen(g->consts[k]) == n && !memcmp(g->consts[k], c, n)) return;
    memcpy(g->consts[g->n_const], c, n);
    g->consts[g->n_const++][n] = 0;
}

static int collect_consts(gctx *g) {
    static const char *const fixed[] = {"1", "test", "42", "\\boxed{1}", "done", "yes", "no", "0", "-1",
                                        "2", "3",    "4",  "5",          "6",    "7",   "8",  "9", "10"};
    for (size_t k = 0; k < sizeof fixed / sizeof *fixed; k++) add_const(g, fixed[k], strlen(fixed[k]));
    for (int k = 0; k < g->info->n_params; k++) {
        char v[64];
        const spade_param_info *p = &g->info->params[k];
        int n =
            p->type == SPADE_PARAM_INT ? snprintf(v, sizeof v, "%.0f", p->def) : snprintf(v, sizeof v, "%g", p->def);
        if (n > 0) add_const(g, v, (size_t)n);
    }
    spade_pieces pc;
    if (spade_text_pieces(g->first_obs, strlen(g->first_obs), &pc) < 0) return -1;
    for (int k = 0; k < pc.n; k++)
        if (!memchr(pc.p[k], '\n', pc.len[k]))
            add_const(g, pc.p[k], pc.len[k]); /* numbers and words; lines are echoes */
    spade_pieces_free(&pc);
    return 0;
}

/* The agent run's requests at the defaults (the room it wants). */
long spade_gates_agent_requests(const gctx *g) {
    return 2L * N_PROBES + (long)g->S * (5 + (g->info->has_solve != 0)) + (long)g->A * (g->n_const + 2 * MAX_PIECES);
}

/* probe_actions and the agent gates: one run at the defaults. Each gate's
 * agent plays its own range of episodes; a gate that tries many answers
 * (constants, pieces) plays answer e % n on seed e / n of its range. */
void spade_gates_play_agents(gctx *g) {
    gplay *r = g->r;
    int S = g->S;
    if (collect_consts(g) < 0) {
        snprintf(g->agents_err, sizeof g->agents_err, "out of memory");
        return;
    }
    int s = spade_gates_add_spec(r, g->file, g->src, g->len, NULL, g->V, 0, g->n_default);
    spade_gates_add_agent(r, probe_agent());
    g->at_probe = r->n;
    for (long i = 0; i < 2 * N_PROBES; i++)
        spade_gates_add_req(r, s, spade_gates_seed_of(g, SEED_PROBES, (int)(i / N_PROBES)));
    const char *cp[MAX_CONST];
    size_t cl[MAX_CONST];
    for (int k = 0; k < g->n_const; k++) cp[k] = g->consts[k], cl[k] = strlen(g->consts[k]);
    for (int k = SPADE_GATE_RANDOM; k <= SPADE_GATE_SOLVE; k++) {
        int per = 1; /* answers per seed */
        switch (k) {
        case SPADE_GATE_RANDOM: spade_gates_add_agent(r, spade_agent_random(11)); break;
        case SPADE_GATE_NOOP: spade_gates_add_agent(r, spade_agent_noop()); break;
        case SPADE_GATE_CONSTANT:
            spade_gates_add_agent(r, spade_agent_probes(cp, cl, g->n_const, 0)), per = g->n_const;
            break;
        case SPADE_GATE_OBS_ECHO:
            spade_gates_add_agent(r, spade_agent_piece_echo(0, MAX_PIECES)), per = MAX_PIECES;
            break;
        case SPADE_GATE_HINT_ECHO:
            spade_gates_add_agent(r, spade_agent_piece_echo(1, MAX_PIECES)), per = MAX_PIECES;
            break;
        case SPADE_GATE_SOLVE:
            if (!g->info->has_solve) continue;
            spade_gates_add_agent(r, spade_agent_solve());
            break;
        }
        int seeds = per > 1 ? g->A : S;
        g->at[k] = r->n;
        g->n_at[k] = (long)seeds * per;
        for (long i = 0; i < (long)seeds * per; i++)
            spade_gates_add_req(r, s, spade_gates_seed_of(g, SEED_AGENTS, (int)(i / per)));
        if (k == SPADE_GATE_OBS_ECHO || k == SPADE_GATE_HINT_ECHO) { /* and the pieces in turn, one per step */
            spade_gates_add_agent(r, k == SPADE_GATE_OBS_ECHO ? spade_agent_obs_echo()
                                                              : spade_agent_hint_words(SPADE_TAIL_CYCLE));
            *(k == SPADE_GATE_OBS_ECHO ? &g->at_obs_cycle : &g->at_hint_seq) = r->n;
            for (int i = 0; i < S; i++) spade_gates_add_req(r, s, spade_gates_seed_of(g, SEED_AGENTS, i));
        }
    }
    trace t = {.h = calloc((size_t)g->cap, sizeof(uint64_t)), .n = g->cap, .act = g->act};
    if (!t.h) {
        spade_gates_clear(r);
        snprintf(g->agents_err, sizeof g->agents_err, "out of memory");
        return;
    }
    long n = r->n;
    g->agents_ok = spade_gates_play(g->sb, r, g->o, g->out, &t, g->agents_err, sizeof g->agents_err) == 0;
    free(t.h);
    if (g->agents_ok) spade_gates_note_timeouts(g, g->out, n);
}

void spade_gates_probes(gctx *g) {
    long n = 2 * N_PROBES;
    const spade_ep_outcome *po = g->out + g->at_probe;
    const spade_ep_outcome *bad = g->agents_ok ? first_failure(po, n) : NULL;
    static const char *const what[N_PROBES] = {"the empty action", "\"1\"",        "\"test\"",    "\"42\"",
                                               "\"\\boxed{1}\"",   "a 4 KiB line", "binary bytes"};
    if (!g->agents_ok)
        spade_gates_verdict(g->rep, SPADE_GATE_PROBE, SPADE_GATE_FAIL, "could not play: %s", g->agents_err);
    else if (bad)
        spade_gates_verdict(g->rep, SPADE_GATE_PROBE, SPADE_GATE_FAIL, "%s made a failure: %s: %.160s",
                            what[(bad - po) % N_PROBES], spade_outcome_name(bad->failure.outcome),
                            bad->failure.message);
    else
        spade_gates_verdict(g->rep, SPADE_GATE_PROBE, SPADE_GATE_PASS, "%d probes, 2 seeds each, no failure", N_PROBES);
}

/* The best of `per` answers played on S seeds each (episode i plays answer
 * i % per): its wins, and an episode of it that won (NULL: none won). */
static long best_answer(const spade_ep_outcome *o, int S, int per, long *at_win) {
    long best = 0;
    *at_win = -1;
    for (int a = 0; a < per; a++) {
        long w = 0, first = -1;
        for (int j = 0; j < S; j++)
            if (o[(long)j * per + a].success) {
                w++;
                if (first < 0) first = (long)j * per + a;
            }
        if (w > best) best = w, *at_win = first;
    }
    return best;
}

static long wins_of(const spade_ep_outcome *o, long n) {
    long w = 0;
    for (long i = 0; i < n; i++) w += o[i].success;
    return w;
}

/* A verdict from the agent run: a failed episode fails the gate (naming its
 * seed), else the caller's judgement. Returns 1 when the gate was judged here. */
static int agent_failed(gctx *g, spade_gate k, const spade_ep_outcome *o, long n) {
    const spade_ep_outcome *bad = g->agents_ok ? first_failure(o, n) : NULL;
    if (!g->agents_ok)
        spade_gates_verdict(g->rep, k, SPADE_GATE_FAIL, "could not play: %s", g->agents_err);
    else if (bad)
        spade_gates_verdict(g->rep, k, SPADE_GATE_FAIL, "seed %llu: %s: %.160s", (unsigned long long)bad->seed,
                            spade_outcome_name(bad->failure.outcome), bad->failure.message);
    else
        return 0;
    return 1;
}

static int over(const gctx *g, long wins, int of) { return (double)wins / of > g->o->constant_max + 1e-12; }

static void gate_random_noop(gctx *g, spade_gate k) {
    const spade_ep_outcome *o = g->out + g->at[k];
    int S = g->S;
    double rt = g->agents_ok ? rate(o, S) : 0;
    long wins = (long)floor(rt * S + 0.5);
    if (k == SPADE_GATE_RANDOM)
        g->rep->random_rate = rt;
    else
        g->rep->noop_rate = rt;
    if (agent_failed(g, k, o, S)) return;
    if (k == SPADE_GATE_RANDOM && rt > g->o->random_max + 1e-12)
        spade_gates_verdict(g->rep, k, SPADE_GATE_FAIL, "the random agent won %ld of %d seeds (at most %.0f%%)", wins,
                            S, 100 * g->o->random_max);
    else if (k == SPADE_GATE_NOOP && wins > 0)
        spade_gates_verdict(g->rep, k, SPADE_GATE_FAIL, "the empty action won %ld of %d seeds", wins, S);
    else
        spade_gates_verdict(g->rep, k, SPADE_GATE_PASS, "won %ld of %d seeds", wins, S);
}

static void gate_constant(gctx *g) {
    const spade_ep_outcome *o = g->out + g->at[SPADE_GATE_CONSTANT];
    long at = 0, best = g->agents_ok ? best_answer(o, g->A, g->n_const, &at) : 0;
    g->rep->constant_rate = (double)best / g->A;
    if (agent_failed(g, SPADE_GATE_CONSTANT, o, g->n_at[SPADE_GATE_CONSTANT])) return;
    if (over(g, best, g->A))
        spade_gates_verdict(
            g->rep, SPADE_GATE_CONSTANT, SPADE_GATE_FAIL,
            "the constant answer \"%.40s\" won %ld of %d seeds (at most %.0f%%): the answer does not depend on the "
            "seed",
            g->consts[at % g->n_const], best, g->A, 100 * g->o->constant_max);
    else
        spade_gates_verdict(g->rep, SPADE_GATE_CONSTANT, SPADE_GATE_PASS,
                            "%d constant answers, the best won %ld of %d seeds", g->n_const, best, g->A);
}

/* obs_echo and hint_echo: each piece alone, then all in turn */
static void gate_echo(gctx *g, spade_gate k) {
    int hint = k == SPADE_GATE_HINT_ECHO, S = g->S, A = g->A;
    const spade_ep_outcome *o = g->out + g->at[k];
    long seq_at = hint ? g->at_hint_seq : g->at_obs_cycle;
    long at = 0, best = g->agents_ok ? best_answer(o, A, MAX_PIECES, &at) : 0;
    long seq = g->agents_ok ? wins_of(g->out + seq_at, S) : 0;
    double rt = (double)best / A > (double)seq / S ? (double)best / A : (double)seq / S;
    if (hint)
        g->rep->hint_echo_rate = rt;
    else
        g->rep->obs_echo_rate = rt;
    if (agent_failed(g, k, o, g->n_at[k]) || agent_failed(g, k, g->out + seq_at, S)) return;
    const char *what = hint ? "the hint" : "the observation";
    if (over(g, best, A))
        spade_gates_verdict(g->rep, k, SPADE_GATE_FAIL, "echoing %s's %s \"%.40s\" won %ld of %d seeds", what,
                            at % MAX_PIECES ? "piece" : "whole text", g->act[g->at[k] + at], best, A);
    else if (over(g, seq, S))
        spade_gates_verdict(g->rep, k, SPADE_GATE_FAIL, "echoing %s won %ld of %d seeds (its %s, one per step)", what,
                            seq, S, hint ? "words in order" : "pieces in turn");
    else
        spade_gates_verdict(g->rep, k, SPADE_GATE_PASS,
                            "%s whole and each of its pieces: at most %ld of %d seeds won; all in turn: %ld of %d",
                            what, best, A, seq, S);
}

static void gate_solve(gctx *g) {
    spade_gate_report *rep = g->rep;
    if (!g->info->has_solve) {
        if (g->o->require_solve)
            spade_gates_verdict(rep, SPADE_GATE_SOLVE, SPADE_GATE_FAIL, "no SOLVE (designer.require_solve = true)");
        else
            spade_gates_verdict(rep, SPADE_GATE_SOLVE, SPADE_GATE_PASS, "no SOLVE (not required)");
        return;
    }
    const spade_ep_outcome *o = g->out + g->at[SPADE_GATE_SOLVE];
    double rt = g->agents_ok ? rate(o, g->S) : 0;
    long wins = (long)floor(rt * g->S + 0.5);
    rep->solve_rate = rt;
    if (agent_failed(g, SPADE_GATE_SOLVE, o, g->S)) return;
    if (wins < g->S)
        spade_gates_verdict(rep, SPADE_GATE_SOLVE, SPADE_GATE_FAIL, "SOLVE won only %ld of %d seeds", wins, g->S);
    else
        spade_gates_verdict(rep, SPADE_GATE_SOLVE, SPADE_GATE_PASS, "won %ld of %d seeds", wins, g->S);
}

/* winnable: some play of the agent run won a seed (SOLVE's, or a scripted
 * agent's within its limit: the gates before passed). */
static void gate_winnable(gctx *g) {
    if (!g->agents_ok) {
        spade_gates_verdict(g->rep, SPADE_GATE_WINNABLE, SPADE_GATE_FAIL, "could not play: %s", g->agents_err);
        return;
    }
    static const spade_gate order[] = {SPADE_GATE_SOLVE, SPADE_GATE_RANDOM, SPADE_GATE_CONSTANT, SPADE_GATE_OBS_ECHO,
                                       SPADE_GATE_HINT_ECHO};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
        if (order[k] == SPADE_GATE_SOLVE && !g->info->has_solve) continue;
        long n = g->n_at[order[k]], w = wins_of(g->out + g->at[order[k]], n);
        if (w > 0) {
            spade_gates_verdict(g->rep, SPADE_GATE_WINNABLE, SPADE_GATE_PASS, "%s won %ld of %ld episodes",
                                order[k] == SPADE_GATE_SOLVE ? "SOLVE" : spade_gate_name(order[k]), w, n);
            return;
        }
    }
    long w = wins_of(g->out + g->at_hint_seq, g->S) + wins_of(g->out + g->at_obs_cycle, g->S);
    if (w > 0)
        spade_gates_verdict(g->rep, SPADE_GATE_WINNABLE, SPADE_GATE_PASS, "an echo won %ld episodes", w);
    else
        spade_gates_verdict(
            g->rep, SPADE_GATE_WINNABLE, SPADE_GATE_FAIL,
            "nothing won a seed: no SOLVE, and none of the gates' agents won any (write a SOLVE that wins)");
}

void spade_gates_judge_agent(gctx *g, spade_gate k) {
    switch (k) {
    case SPADE_GATE_RANDOM:
    case SPADE_GATE_NOOP: gate_random_noop(g, k); break;
    case SPADE_GATE_CONSTANT: gate_constant(g); break;
    case SPADE_GATE_OBS_ECHO:
    case SPADE_GATE_HINT_ECHO: gate_echo(g, k); break;
    case SPADE_GATE_SOLVE: gate_solve(g); break;
    default: gate_winnable(g); break;
    }
}
