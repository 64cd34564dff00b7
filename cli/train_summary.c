/* train_summary.c — the closing words of every `spade train`: what the run
 * did, read back from RUN/train.jsonl (the run's own figures, every iteration
 * the log holds, this session's and the ones before a resume), then the
 * commands that look at the run, go on with it and evaluate it.
 *
 * What it is not: a report (cli/cmd_report.c draws and tabulates the run) and
 * not a judgement: each sentence is a count or a rate from the log, so a run
 * in which nothing was valid or nothing was learnt says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

typedef struct summary {
    int lines, first_it, last_it;
    /* self-play */
    long written, valid, agent_samples, designer_samples, pool_samples, pool_updates, pool_lines;
    long gate_fail[16];
    char gate_name[16][32];
    int n_gates;
    double pool_first, pool_last;
    int pool_seen;
    double pass_sum, pass_hint_sum; /* over the iterations that played a valid environment */
    int pass_lines;
    double time_sum; /* time_s.total, over the lines that have it */
    int time_lines;
    /* fixed pool */
    long episodes, updates, samples;
    double success_first, success_last;
    /* held-out evaluations */
    int evals;
    double eval_last;
} summary;

static double num(const spade_json *o, const char *k, double dflt) {
    const spade_json *v = spade_json_get(o, k);
    return v && v->type == SPADE_JSON_NUMBER ? v->number : dflt;
}

static void take(summary *s, const spade_json *o) {
    const spade_json *ev = spade_json_get(o, "eval");
    if (ev && ev->type == SPADE_JSON_OBJECT) {
        s->evals++;
        s->eval_last = num(ev, "success", 0);
        return;
    }
    int it = (int)num(o, "iteration", -1);
    if (!s->lines++) s->first_it = it;
    s->last_it = it;
    if (spade_json_get(o, "written")) {
        s->written += (long)num(o, "written", 0);
        s->valid += (long)num(o, "valid", 0);
        s->agent_samples += (long)num(o, "agent_samples", 0);
        s->designer_samples += (long)num(o, "designer_samples", 0);
        const spade_json *fa = spade_json_get(o, "failed_at");
        for (size_t i = 0; fa && fa->type == SPADE_JSON_OBJECT && i < fa->len; i++) {
            const spade_json_member *m = &fa->members[i];
            int g = 0;
            while (g < s->n_gates && strcmp(s->gate_name[g], m->key)) g++;
            if (g == s->n_gates) {
                if (g == 16) continue;
                snprintf(s->gate_name[s->n_gates++], sizeof s->gate_name[0], "%s", m->key);
            }
            if (m->value.type == SPADE_JSON_NUMBER) s->gate_fail[g] += (long)m->value.number;
        }
        if (spade_json_get(o, "pool_samples")) { /* written by cmd_train.c after the loop's own fields */
            s->pool_lines++;
            s->pool_samples += (long)num(o, "pool_samples", 0);
            const spade_json *u = spade_json_get(o, "pool_updated");
            s->pool_updates += u && u->type == SPADE_JSON_BOOL && u->boolean;
        }
        const spade_json *p0 = spade_json_get(o, "pass"), *p1 = spade_json_get(o, "pass_hint");
        if (p0 && p1 && p0->type == SPADE_JSON_NUMBER && p1->type == SPADE_JSON_NUMBER) {
            s->pass_sum += p0->number, s->pass_hint_sum += p1->number;
            s->pass_lines++;
        }
        const spade_json *ts = spade_json_get(o, "time_s");
        if (ts && ts->type == SPADE_JSON_OBJECT && num(ts, "total", -1) >= 0) {
            s->time_sum += num(ts, "total", 0);
            s->time_lines++;
        }
        double ps = num(o, "pool_success", -1);
        if (ps >= 0) {
            if (!s->pool_seen++) s->pool_first = ps;
            s->pool_last = ps;
        }
        return;
    }
    double sr = num(o, "success", 0);
    if (s->lines == 1) s->success_first = sr;
    s->success_last = sr;
    s->episodes += (long)num(o, "episodes", 0);
    s->samples += (long)num(o, "samples", 0);
    const spade_json *u = spade_json_get(o, "updated");
    s->updates += u && u->type == SPADE_JSON_BOOL && u->boolean;
}

static int read_log(const char *run, summary *s) {
    char path[4400], *line = NULL;
    size_t cap = 0;
    snprintf(path, sizeof path, "%s/train.jsonl", run);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        spade_json_doc *d = NULL;
        char e[128];
        if (spade_json_parse(line, (size_t)n, &d, e, sizeof e) == 0) {
            const spade_json *o = spade_json_root(d);
            if (o->type == SPADE_JSON_OBJECT) take(s, o);
        }
        spade_json_doc_free(d);
    }
    free(line);
    fclose(f);
    return 0;
}

void cli_train_summary(FILE *out, const char *run, const char *ckpt, int selfplay, int iterations) {
    summary s = {.first_it = -1, .last_it = -1};
    const char *me = cli_self();
    if (read_log(run, &s) < 0 || s.lines == 0) {
        fprintf(out, "\nWhat happened: no iteration is logged in %s/train.jsonl yet.\n", run);
        return;
    }
    fprintf(out, "\nWhat happened in %s: iterations %d..%d (numbered from 0) of %d.\n", run, s.first_it, s.last_it,
            iterations);
    if (selfplay) {
        fprintf(out, "  The designer wrote %ld environments; %ld passed every gate", s.written, s.valid);
        if (s.written > s.valid) {
            fprintf(out, " (the others stopped at:");
            for (int g = 0, k = 0; g < s.n_gates; g++)
                if (s.gate_fail[g]) fprintf(out, "%s %s %ld", k++ ? "," : "", s.gate_name[g], s.gate_fail[g]);
            fprintf(out, ")");
        }
        fprintf(out, ".\n");
        if (s.valid == 0 && s.designer_samples == 0)
            fprintf(out, "  With no valid environment the agent had none to play, so it made no update on one\n"
                         "  (agent_samples 0 in every line), and the designer none either: every environment\n"
                         "  it wrote got the same reward, so there was nothing to learn from (designer_samples 0).\n");
        else if (s.valid == 0)
            fprintf(out,
                    "  With no valid environment the agent had none to play, so it made no update on one\n"
                    "  (agent_samples 0 in every line); the designer trained on %ld samples of its writing.\n",
                    s.designer_samples);
        else
            fprintf(out,
                    "  The agent played the valid ones with and without their hint and trained on %ld samples\n"
                    "  of those plays; the designer trained on %ld samples of its writing.\n",
                    s.agent_samples, s.designer_samples);
        if (s.pass_lines > 0)
            fprintf(out,
                    "  On the valid environments the agent won %.2f of its plays without the hint and %.2f with\n"
                    "  it (the mean over the %d iterations that had one; regret is the difference).\n",
                    s.pass_sum / s.pass_lines, s.pass_hint_sum / s.pass_lines, s.pass_lines);
        if (s.pool_lines > 0)
            fprintf(out,
                    "  On the pool (stdenv) the agent made %ld updates in %ld iterations (%ld samples); success\n"
                    "  %.2f at the first logged iteration, %.2f at the last.\n",
                    s.pool_updates, s.pool_lines, s.pool_samples, s.pool_first, s.pool_last);
    } else {
        fprintf(out,
                "  The agent played %ld episodes on the pool and made %ld updates (%ld samples); success %.3f\n"
                "  at the first logged iteration, %.3f at the last.\n",
                s.episodes, s.updates, s.samples, s.success_first, s.success_last);
        if (s.updates == 0)
            fprintf(out, "  No update was made: every group's plays had the same reward (nothing to learn from).\n");
    }
    if (s.evals) fprintf(out, "  Held-out suite: success %.3f at the last evaluation.\n", s.eval_last);
    if (s.time_lines > 0)
        fprintf(out, "  An iteration took %.0f s on average (its phases: \"time_s\" in train.jsonl).\n",
                s.time_sum / s.time_lines);
    fprintf(out, "Next:\n");
    fprintf(out, "  %s report %s              plots and a summary (%s/report/report.md)\n", me, run, run);
    if (selfplay)
        fprintf(out, "  %s archive list %s        every environment it wrote, by first failed gate\n", me, run);
    if (ckpt && *ckpt) fprintf(out, "  %s eval %s --suite heldout    the agent on the held-out suite\n", me, ckpt);
    fprintf(out, "  Run longer: raise [run] iterations in %s/config.ini, then %s train %s\n", run, me, run);
}
