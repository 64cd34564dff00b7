/* bench_remote.c — requests/s of the remote policy's client (core/remote.c)
 * at a given concurrency: N short chat requests to URL#MODEL, wall time.
 * bench/bench_remote.sh runs it beside a direct Python client at 1, 8, 32
 * and prints the ratio. Not a test: it asserts nothing about the model.
 * Usage: bench_remote URL MODEL N CONCURRENCY
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "remote.h"

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: bench_remote URL MODEL N CONCURRENCY\n");
        return 2;
    }
    int n = atoi(argv[3]), c = atoi(argv[4]);
    if (n < 1 || n > 100000) return 2;
    spade_remote_opts o;
    spade_remote_opts_default(&o);
    o.url = argv[1];
    o.model = argv[2];
    o.concurrency = c;
    o.max_tokens = 4;
    o.temperature = 0;
    o.logprobs = 0;
    char err[1024];
    spade_remote *r;
    if (spade_remote_new(&r, &o, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    spade_remote_msg m = {"user", "Say one word.", 13};
    spade_remote_req *q = calloc((size_t)n, sizeof *q);
    spade_remote_reply *out = calloc((size_t)n, sizeof *out);
    if (!q || !out) return 1;
    for (int i = 0; i < n; i++) q[i] = (spade_remote_req){.msgs = &m, .n_msgs = 1, .seed = (uint64_t)i};
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (spade_remote_chat(r, n, q, out, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9, lat = 0;
    for (int i = 0; i < n; i++) lat += out[i].latency_s, free(out[i].text);
    printf("%.3f %.4f\n", n / s, lat / n);
    free(q);
    free(out);
    spade_remote_free(r);
    return 0;
}
