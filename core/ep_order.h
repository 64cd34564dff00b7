/* ep_order.h — outcomes delivered in episode order, however they finish.
 *
 * What it is: the small buffer both episode runners (episodes.c, playing
 * locally, and served_episodes.c, playing on `spade serve` hosts) put each
 * finished episode's outcome into: outcomes are handed to the caller's
 * callback in episode order (0, 1, 2, ...), an outcome that finishes early
 * held until every one before it has been delivered. The order is what makes
 * a run's outcomes (and so its training) independent of which slot or host
 * finished first.
 * What it is not: a queue of work, or thread-safe; it holds copies of
 * finished outcomes only.
 */
#ifndef SPADE_EP_ORDER_H
#define SPADE_EP_ORDER_H

#include "episodes.h"

typedef struct spade_ep_order {
    spade_ep_outcome **held; /* (cap) held[k] is episode delivered + k, NULL until it ends */
    long cap;
    long delivered; /* episodes 0 .. delivered-1 have gone to the callback */
} spade_ep_order;

typedef void (*spade_ep_order_fn)(void *ctx, const spade_ep_outcome *o);

/* Holds a copy of o (o->episode >= delivered, not put before), then delivers
 * to fn every outcome now next in order. 0, or -1 when out of memory or o's episode
 * was already delivered (o is not held then). fn may be NULL. */
int spade_ep_order_put(spade_ep_order *q, const spade_ep_outcome *o, spade_ep_order_fn fn, void *ctx);

/* Frees what is still held (outcomes that never became next) and the buffer. */
void spade_ep_order_free(spade_ep_order *q);

#endif
