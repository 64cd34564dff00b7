/* loop.c — one self-play iteration (loop.h): its phases (iteration.h) in
 * order, and the iteration's metrics as JSON.
 *
 * What it is not: the phases themselves (iteration.c), nor a scheduler
 * across iterations (the run's iterations and checkpoints are
 * cli/cmd_train.c's).
 */
#include "selfplay/loop.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "selfplay/iteration.h"

void spade_selfplay_opts_default(spade_selfplay_opts *o) {
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->envs = 8;
    o->max_source_tokens = 512;
    o->temperature = 1.0f;
    o->top_p = 1.0f;
    o->reward = SPADE_DREWARD_BLEND;
    o->invalid_reward = -0.5;
    o->train_designer = 1;
    o->use_corpus = 1;
    o->use_memory = 1;
    spade_memory_opts_default(&o->memory);
    o->family_window = 3;
    o->hint_temperature = 0.3f;
    o->hint_tokens = 64;
    o->hole_tokens = 8;
    spade_gate_opts_default(&o->gates);
    o->gates.stop_at_first = 1;
    o->plays = 8;
    o->repeats = 1;
    o->regen_every = 1;
    spade_rl_opts_default(&o->rl);
}

/* The phases in their order (iteration.h says what each leaves for the next).
 * The archive is read at the start (the memory, then what is played again) and
 * written at the end, as it stood after the previous iteration both times. */
static const spade_sp_phase phases[] = {
    spade_sp_pool,  spade_sp_prompts,   spade_sp_replays, spade_sp_write,  spade_sp_hints,   spade_sp_gates,
    spade_sp_plays, spade_sp_lookahead, spade_sp_rewards, spade_sp_update, spade_sp_archive,
};

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

/* Where phase k's seconds go in m->time (the writing's prefill part is
 * measured inside it, and taken off its decoding below). */
static double *phase_time(spade_selfplay_metrics *m, size_t k) {
    struct spade_sp_times *t = &m->time;
    double *at[] = {&t->pool, &t->prompts,   &t->prompts, &t->design_decode, &t->hints,  &t->gates,
                    &t->play, &t->lookahead, &t->update,  &t->update,        &t->archive};
    return k < sizeof at / sizeof *at ? at[k] : &t->total;
}

int spade_selfplay_iteration(spade_selfplay *s, const spade_selfplay_opts *o, int it, const volatile sig_atomic_t *stop,
                             spade_selfplay_metrics *m, char *err, size_t errlen) {
    spade_sp_iter x;
    double t0 = now_s(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    int rc = spade_sp_begin(&x, s, o, it, stop, m, err, errlen);
    for (size_t k = 0; rc == 0 && k < sizeof phases / sizeof *phases; k++) {
        double t = now_s(), *slot = phase_time(m, k);
        rc = phases[k](&x, err, errlen);
        if (phases[k] == spade_sp_archive) /* it set a provisional figure for its own JSON: replaced, not added to */
            *slot = now_s() - t; /* (adding counted its SQLite writes twice, past the total on a loaded machine) */
        else
            *slot += now_s() - t;
        if (phases[k] == spade_sp_write) *slot = fmax(0, *slot - m->time.design_prefill);
    }
    m->time.total = now_s() - t0;
    m->time.cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    spade_sp_end(&x, rc);
    return rc;
}

static void num(char *b, size_t cap, double v) {
    if (isfinite(v))
        snprintf(b, cap, "%.6g", v);
    else
        snprintf(b, cap, "null");
}

void spade_selfplay_metrics_json(const spade_selfplay_metrics *m, char *out, size_t cap) {
    char p0[32], p1[32], rg[32], dr[32], vn[32], gates[600] = "";
    num(p0, sizeof p0, m->pass_nohint);
    num(p1, sizeof p1, m->pass_hint);
    num(rg, sizeof rg, m->regret);
    num(dr, sizeof dr, m->designer_reward);
    num(vn, sizeof vn, m->vendi_n);
    char lp[32], pa[32], vg[32];
    num(vg, sizeof vg, m->vendi_n_games);
    num(lp, sizeof lp, m->learning_potential);
    num(pa, sizeof pa, m->pass_after);
    const struct spade_sp_times *t = &m->time;
    char times[640];
    snprintf(times, sizeof times,
             "{\"pool\":%.3f,\"prompts\":%.3f,\"design_prefill\":%.3f,\"design_decode\":%.3f,\"hints\":%.3f,"
             "\"gates\":%.3f,\"play\":%.3f,\"play_prefill\":%.3f,\"play_decode\":%.3f,\"lookahead\":%.3f,"
             "\"update\":%.3f,\"archive\":%.3f,\"total\":%.3f,\"cpu\":%.3f}",
             t->pool, t->prompts, t->design_prefill, t->design_decode, t->hints, t->gates, t->play, t->play_prefill,
             t->play_decode, t->lookahead, t->update, t->archive, t->total, t->cpu);
    size_t at = 0;
    for (int g = 0; g < SPADE_GATE_COUNT; g++)
        at += (size_t)snprintf(gates + at, sizeof gates - at, "%s\"%s\":%d", g ? "," : "",
                               spade_gate_name((spade_gate)g), m->failed_gate[g]);
    snprintf(
        out, cap,
        "{\"iteration\":%d,\"written\":%d,\"valid\":%d,\"kept\":%d,\"replayed\":%d,\"failed_at\":{%s},\"pass\":%s,"
        "\"pass_hint\":%s,\"regret\":%s,"
        "\"designer_reward\":%s,\"vendi_n\":%s,\"designer_samples\":%d,\"agent_samples\":%d,\"source_tokens\":%ld,"
        "\"hint_tokens\":%ld,"
        "\"loss\":%.6g,\"grad_norm\":%.6g,\"grad_norm_designer\":%.6g,\"grad_norm_agent\":%.6g,"
        "\"pool_success\":%.6g,"
        "\"learning_potential\":%s,\"pass_after\":%s,\"vendi_n_games\":%s,\"hint_arm_samples\":%d,"
        "\"t_design\":%.3f,\"t_gates\":%.3f,\"t_play\":%.3f,\"t_update\":%.3f,\"t_archive\":%.3f,\"t_lookahead\":%.3f,"
        "\"time_s\":%s}",
        m->iteration, m->written, m->valid, m->kept, m->replayed, gates, p0, p1, rg, dr, vn, m->designer_samples,
        m->agent_samples, m->source_tokens, m->hint_tokens, m->loss, m->grad_norm, m->role_grad_norm[0],
        m->role_grad_norm[1], m->pool.success_rate, lp, pa, vg, m->hint_arm_samples, m->t_design, m->t_gates, m->t_play,
        m->t_update, m->t_archive, m->t_lookahead, times);
}
