/* bench_gates.c — what the designer's checks of one environment cost with the
 * model left out: the ten gates (designer/gates.h) and the paired plays of
 * designer/plays.h at 8 plays per arm by a scripted agent (the random one),
 * on stdenv environments of different step costs, against the same
 * environment's plain load (one worker spawned and compiled) measured in the
 * same run. Issue 9's target: gates + paired plays <= 10 ms an environment.
 * What it is not: a benchmark of the policy's time in the paired plays (that
 * is the model's, bench/bench_rollout).
 * Run: ./bench/bench_gates [REPS [ENV...]]   (from the build directory; the
 * ENVs, stdenv names, replace the five, e.g. to profile one)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agents.h"
#include "designer/gates.h"
#include "designer/plays.h"
#include "registry.h"
#include "sandbox/sandbox.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    static const char *const five[] = {"carry_add", "nim", "maze", "bank", "tictactoe"};
    const char *const *names = argc > 2 ? (const char *const *)argv + 2 : five;
    size_t n_names = argc > 2 ? (size_t)(argc - 2) : sizeof five / sizeof *five;
    char err[2048];
    spade_sandbox *sb;
    if (spade_sandbox_new(&sb, NULL, err, sizeof err) < 0) {
        fprintf(stderr, "bench_gates: %s\n", err);
        return 1;
    }
    FILE *la = fopen("/proc/loadavg", "r");
    char load[64] = "?";
    if (la && fgets(load, sizeof load, la)) load[strcspn(load, " ")] = 0;
    if (la) fclose(la);
    printf("bench_gates: best of %d, load average %s\n", reps, load);
    printf("%-10s %10s %10s %12s %10s %8s\n", "env", "load ms", "gates ms", "paired ms", "total ms", "/ load");
    for (size_t e = 0; e < n_names; e++) {
        char path[4096], *src = NULL;
        size_t len;
        spade_data_path("stdenv", path, sizeof path);
        snprintf(path + strlen(path), sizeof path - strlen(path), "/%s.c", names[e]);
        if (spade_read_source(path, &src, &len, err, sizeof err) < 0) {
            printf("%-10s skipped: %s\n", names[e], err);
            continue;
        }
        double best_load = 1e9, best_gates = 1e9, best_pair = 1e9;
        for (int r = 0; r < reps; r++) {
            double t0 = now_s();
            spade_worker *w = NULL;
            spade_failure f;
            if (spade_worker_load(sb, path, src, len, &w, &f) == 0) spade_worker_free(w);
            double t1 = now_s();
            spade_gate_opts o;
            spade_gate_opts_default(&o);
            o.max_step_ms = 1e9;
            spade_gate_report rep;
            if (spade_gates_run(sb, path, src, len, &o, &rep, err, sizeof err) < 0 || rep.first_failed >= 0)
                printf("  (%s: gates did not pass: %s)\n", names[e],
                       rep.first_failed >= 0 ? rep.detail[rep.first_failed] : err);
            double t2 = now_s();
            spade_ep_spec spec = {.filename = path, .source = src, .len = len, .expected = 16};
            uint64_t seeds[8];
            spade_ep_outcome out[16];
            spade_paired m;
            for (int k = 0; k < 8; k++) seeds[k] = 100 + (uint64_t)k;
            spade_agent *a = spade_agent_random(1);
            if (spade_paired_play(sb, &spec, a, seeds, 8, 1, NULL, out, &m, err, sizeof err) < 0)
                printf("  (%s)\n", err);
            spade_agent_free(a);
            double t3 = now_s();
            if (t1 - t0 < best_load) best_load = t1 - t0;
            if (t2 - t1 < best_gates) best_gates = t2 - t1;
            if (t3 - t2 < best_pair) best_pair = t3 - t2;
        }
        printf("%-10s %10.2f %10.2f %12.2f %10.2f %8.1f\n", names[e], 1e3 * best_load, 1e3 * best_gates,
               1e3 * best_pair, 1e3 * (best_gates + best_pair), (best_gates + best_pair) / best_load);
        free(src);
    }
    printf("RATIO gates+paired / one load: the last column (target: gates + paired <= 10 ms)\n");
    spade_sandbox_free(sb);
    return 0;
}
