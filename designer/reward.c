/* reward.c — the designer's reward arithmetic (reward.h).
 *
 * What it is not: a place that decides which environments are valid (the
 * gates) or what an agent's reward is (the agent z-scores its own returns).
 */
#include "reward.h"

#include <math.h>
#include <string.h>

static const char *const NAMES[] = {"blend", "regret", "solve_rate", "learning_potential"};

int spade_dreward_parse(const char *word) {
    for (int k = 0; k < 4; k++)
        if (!strcmp(word, NAMES[k])) return k;
    return -1;
}

double spade_plateau(double p) {
    if (!(p > 0.15 && p < 0.85)) return 0; /* NaN too */
    if (p >= 0.4 && p <= 0.6) return 1;
    return p < 0.4 ? (p - 0.15) / 0.25 : (0.85 - p) / 0.25;
}

void spade_paired_measure(const double *s0, const double *s1, int n, int repeats, spade_paired *out) {
    int R = repeats > 1 ? repeats : 1, seeds = n / R;
    double a = 0, b = 0, d = 0, dd = 0, plateau = 0;
    for (int i = 0; i < n; i++) {
        a += s0[i];
        b += s1[i];
        d += s1[i] - s0[i];
    }
    out->n = n;
    out->repeats = R;
    out->pass_nohint = n ? a / n : NAN;
    out->pass_hint = n ? b / n : NAN;
    out->regret = n ? d / n : NAN;
    /* per seed: its mean difference (the unit of the standard error) and its own pass rate */
    for (int j = 0; j < seeds; j++) {
        double dj = 0, pj = 0;
        for (int r = 0; r < R; r++) {
            dj += (s1[j * R + r] - s0[j * R + r]) / R;
            pj += s0[j * R + r] / R;
        }
        dd += (dj - out->regret) * (dj - out->regret);
        plateau += spade_plateau(pj);
    }
    out->regret_se = seeds > 1 ? sqrt(dd / (seeds - 1) / seeds) : 0;
    out->plateau = R == 1 ? spade_plateau(out->pass_nohint) : seeds ? plateau / seeds : 0;
}

double spade_lp_lookahead(double before, double after) {
    double d = after - before;
    return isfinite(d) && d > 0 ? d : 0;
}

static double clip01(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }

double spade_dreward(spade_dreward_kind kind, const spade_paired *m, const double *pass_after) {
    double regret = isfinite(m->regret) ? clip01(m->regret / 0.15) : 0;
    switch (kind) {
    case SPADE_DREWARD_BLEND: return 0.4 * regret + 0.6 * m->plateau;
    case SPADE_DREWARD_REGRET: return regret;
    case SPADE_DREWARD_SOLVE_RATE: return m->plateau;
    case SPADE_DREWARD_LEARNING_POTENTIAL: return pass_after ? spade_lp_lookahead(m->pass_nohint, *pass_after) : 0;
    }
    return 0;
}

void spade_center_per_family(double *r, const char *const *family, const int *keep, int n) {
    for (int i = 0; i < n; i++) {
        if (keep && !keep[i]) continue;
        int first = 1; /* do each family once, at its first kept sample */
        for (int j = 0; j < i && first; j++) first = (keep && !keep[j]) || strcmp(family[j], family[i]);
        if (!first) continue;
        double sum = 0;
        int cnt = 0;
        for (int j = i; j < n; j++)
            if ((!keep || keep[j]) && !strcmp(family[j], family[i])) sum += r[j], cnt++;
        for (int j = i; j < n; j++)
            if ((!keep || keep[j]) && !strcmp(family[j], family[i])) r[j] -= sum / cnt;
    }
}
