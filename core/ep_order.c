/* ep_order.c — the in-order outcome buffer of ep_order.h.
 * What it is not: the episode runners themselves (episodes.c, served_episodes.c). */
#include "ep_order.h"

#include <stdlib.h>
#include <string.h>

static void deliver_ready(spade_ep_order *q, spade_ep_order_fn fn, void *ctx) {
    long k = 0;
    while (k < q->cap && q->held[k]) {
        if (fn) fn(ctx, q->held[k]);
        free(q->held[k++]);
    }
    if (k) {
        memmove(q->held, q->held + k, (size_t)(q->cap - k) * sizeof *q->held);
        memset(q->held + q->cap - k, 0, (size_t)k * sizeof *q->held);
        q->delivered += k;
    }
}

int spade_ep_order_put(spade_ep_order *q, const spade_ep_outcome *o, spade_ep_order_fn fn, void *ctx) {
    long at = o->episode - q->delivered;
    if (at < 0) return -1;
    if (at >= q->cap) {
        long cap = q->cap ? q->cap : 64;
        while (cap <= at) cap *= 2;
        spade_ep_outcome **p = realloc(q->held, (size_t)cap * sizeof *p);
        if (!p) return -1;
        memset(p + q->cap, 0, (size_t)(cap - q->cap) * sizeof *p);
        q->held = p;
        q->cap = cap;
    }
    spade_ep_outcome *c = malloc(sizeof *c);
    if (!c) return -1;
    *c = *o;
    q->held[at] = c;
    deliver_ready(q, fn, ctx);
    return 0;
}

void spade_ep_order_free(spade_ep_order *q) {
    for (long k = 0; k < q->cap; k++) free(q->held[k]);
    free(q->held);
    *q = (spade_ep_order){0};
}
