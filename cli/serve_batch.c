/* serve_batch.c — reset and step of `spade serve` (docs/protocol.md): reads a
 * request's ids, seeds and actions, spreads them over the environment's
 * workers and writes the batch columns back.
 *
 * An environment handle owns W workers and N instances; instance i lives on
 * worker i % W, so a batch spreads evenly and the workers' steps overlap
 * (split-phase send, then receive). The handler keeps each instance's episode
 * state itself (never reset, running, ended), so a step the worker would
 * refuse is answered for that instance alone instead of spoiling the batch.
 * What it is not: the other ops (serve_ops.c), nor thread-safe per connection.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_internal.h"

enum { IR_OK = 0, IR_WORKER, IR_NOT_RESET, IR_ENDED, IR_TOO_LONG };

typedef struct ires {
    int kind;
    const spade_failure *f; /* IR_WORKER */
    size_t off, len; /* observation in the store */
    double reward, ret;
    unsigned char term, trunc, succ;
} ires;

typedef struct batch {
    int n;
    int *inst; /* instance index of item j */
    const uint64_t *seeds; /* resets */
    const char **acts; /* steps */
    size_t *lens;
    ires *res;
} batch;

static void store_result(serve_env *e, spade_jbuf *store, int inst, ires *ir, const spade_step_result *sr) {
    ir->kind = IR_OK;
    ir->off = store->len;
    ir->len = sr->obs_len;
    spade_jw_raw(store, sr->obs, sr->obs_len);
    ir->reward = sr->reward;
    ir->ret = sr->episode_return;
    ir->term = sr->terminated != 0;
    ir->trunc = sr->truncated != 0;
    ir->succ = sr->success != 0;
    e->state[inst] = ir->term || ir->trunc ? ST_ENDED : ST_RUNNING;
}

/* Items of b grouped by worker: order[start[w] .. start[w + 1]) are item indices. */
static int group(const serve_env *e, const batch *b, int *start, int *order) {
    int W = e->n_workers;
    for (int w = 0; w <= W; w++) start[w] = 0;
    for (int j = 0; j < b->n; j++)
        if (b->res[j].kind == IR_OK) start[b->inst[j] % W + 1]++;
    for (int w = 0; w < W; w++) start[w + 1] += start[w];
    int *fill = malloc(sizeof *fill * (size_t)W);
    if (!fill) return -1;
    memcpy(fill, start, sizeof *fill * (size_t)W);
    for (int j = 0; j < b->n; j++)
        if (b->res[j].kind == IR_OK) order[fill[b->inst[j] % W]++] = j;
    free(fill);
    return 0;
}

typedef struct scratch {
    int *start, *order; /* the resets grouped by worker (group()) */
    int *start2, *order2; /* the steps */
    int *ids;
    uint32_t *ops;
    const char **acts;
    size_t *lens;
    uint64_t *seeds;
    spade_step_result *sr;
    spade_failure *fails; /* [W] */
    char *sent; /* [W] */
} scratch;

static void scratch_free(scratch *s) {
    free(s->start), free(s->order), free(s->start2), free(s->order2), free(s->ids), free(s->ops), free(s->acts);
    free(s->lens), free(s->seeds), free(s->sr), free(s->fails), free(s->sent);
}

static int scratch_new(scratch *s, int W, int n) {
    memset(s, 0, sizeof *s);
    size_t un = n ? (size_t)n : 1, uw = (size_t)W + 1;
    s->start = malloc(sizeof *s->start * uw);
    s->start2 = malloc(sizeof *s->start2 * uw);
    s->order = malloc(sizeof *s->order * un);
    s->order2 = malloc(sizeof *s->order2 * un);
    s->ids = malloc(sizeof *s->ids * un);
    s->ops = malloc(sizeof *s->ops * un);
    s->acts = malloc(sizeof *s->acts * un);
    s->lens = malloc(sizeof *s->lens * un);
    s->seeds = malloc(sizeof *s->seeds * un);
    s->sr = malloc(sizeof *s->sr * un);
    s->fails = calloc((size_t)W, sizeof *s->fails);
    s->sent = calloc((size_t)W, 1);
    if (!s->start || !s->start2 || !s->order || !s->order2 || !s->ids || !s->ops || !s->acts || !s->lens || !s->seeds ||
        !s->sr || !s->fails || !s->sent) {
        scratch_free(s);
        return -1;
    }
    return 0;
}

/* Marks the items ord[0..k) of b failed with f; they must be reset before stepping again. */
static void fail_items(serve_env *e, batch *b, const int *ord, int k, const spade_failure *f) {
    for (int q = 0; q < k; q++) {
        b->res[ord[q]].kind = IR_WORKER;
        b->res[ord[q]].f = f;
        /* after a bad_call our view of an episode may be wrong; after any other failure the
         * worker is gone: either way the instance is not stepped again before a reset */
        e->state[b->inst[ord[q]]] = ST_NEW;
    }
}

/* A request's resets (rb) and steps (sb): each worker gets one batch with its share of both
 * (resets first; an instance is in at most one of them), and every worker is sent its batch
 * before any is waited on, so the workers step at the same time and an autoreset costs no
 * extra round trip. */
static int run_batches(serve_env *e, batch *rb, batch *sb, spade_jbuf *store, scratch *s) {
    int W = e->n_workers;
    for (int j = 0; j < sb->n; j++) {
        unsigned char st = e->state[sb->inst[j]];
        if (sb->lens[j] > SPADE_ACTION_MAX)
            sb->res[j].kind = IR_TOO_LONG;
        else if (st == ST_NEW)
            sb->res[j].kind = IR_NOT_RESET;
        else if (st == ST_ENDED)
            sb->res[j].kind = IR_ENDED;
    }
    if (group(e, rb, s->start, s->order) < 0 || group(e, sb, s->start2, s->order2) < 0) return -1;
    for (int w = 0; w < W; w++) {
        int kr = s->start[w + 1] - s->start[w], ks = s->start2[w + 1] - s->start2[w];
        if (!kr && !ks) continue;
        const int *ordr = s->order + s->start[w], *ords = s->order2 + s->start2[w];
        for (int q = 0; q < kr; q++) {
            s->ids[q] = e->first_id[w] + rb->inst[ordr[q]] / W;
            s->ops[q] = SPADE_BATCH_RESET;
            s->seeds[q] = rb->seeds[ordr[q]];
            s->acts[q] = NULL;
            s->lens[q] = 0;
        }
        for (int q = 0; q < ks; q++) {
            s->ids[kr + q] = e->first_id[w] + sb->inst[ords[q]] / W;
            s->ops[kr + q] = SPADE_BATCH_STEP;
            s->seeds[kr + q] = 0;
            s->acts[kr + q] = sb->acts[ords[q]];
            s->lens[kr + q] = sb->lens[ords[q]];
        }
        if (spade_worker_batch_send(e->workers[w], kr + ks, s->ids, s->ops, s->seeds, s->acts, s->lens, &s->fails[w]) !=
            0) {
            fail_items(e, rb, ordr, kr, &s->fails[w]);
            fail_items(e, sb, ords, ks, &s->fails[w]);
            continue;
        }
        s->sent[w] = 1;
    }
    for (int w = 0; w < W; w++) {
        if (!s->sent[w]) continue;
        s->sent[w] = 0;
        int kr = s->start[w + 1] - s->start[w], ks = s->start2[w + 1] - s->start2[w];
        const int *ordr = s->order + s->start[w], *ords = s->order2 + s->start2[w];
        if (spade_worker_batch_recv(e->workers[w], s->sr, &s->fails[w]) != 0) {
            fail_items(e, rb, ordr, kr, &s->fails[w]);
            fail_items(e, sb, ords, ks, &s->fails[w]);
            continue;
        }
        for (int q = 0; q < kr; q++) store_result(e, store, rb->inst[ordr[q]], &rb->res[ordr[q]], &s->sr[q]);
        for (int q = 0; q < ks; q++) store_result(e, store, sb->inst[ords[q]], &sb->res[ords[q]], &s->sr[kr + q]);
    }
    return 0;
}

static void write_results(spade_jbuf *o, const batch *b, const spade_jbuf *store) {
    spade_jw_key(o, "obs");
    spade_jw_arr(o);
    for (int j = 0; j < b->n; j++) {
        const ires *x = &b->res[j];
        if (x->kind == IR_OK)
            spade_jw_str(o, store->p + x->off, x->len);
        else
            spade_jw_str(o, "", 0);
    }
    spade_jw_end_arr(o);
    spade_jw_key(o, "reward");
    spade_jw_arr(o);
    for (int j = 0; j < b->n; j++) spade_jw_num(o, b->res[j].kind == IR_OK ? b->res[j].reward : 0.0);
    spade_jw_end_arr(o);
    static const char *const flags[] = {"terminated", "truncated", "success"};
    for (int k = 0; k < 3; k++) {
        spade_jw_key(o, flags[k]);
        spade_jw_arr(o);
        for (int j = 0; j < b->n; j++) {
            const ires *x = &b->res[j];
            int v = x->kind != IR_OK ? 0 : k == 0 ? x->term : k == 1 ? x->trunc : x->succ;
            spade_jw_bool(o, v);
        }
        spade_jw_end_arr(o);
    }
    spade_jw_key(o, "return");
    spade_jw_arr(o);
    for (int j = 0; j < b->n; j++) spade_jw_num(o, b->res[j].kind == IR_OK ? b->res[j].ret : 0.0);
    spade_jw_end_arr(o);
    int any = 0;
    for (int j = 0; j < b->n && !any; j++) any = b->res[j].kind != IR_OK;
    if (!any) return;
    spade_jw_key(o, "failures");
    spade_jw_arr(o);
    for (int j = 0; j < b->n; j++) {
        const ires *x = &b->res[j];
        if (x->kind == IR_OK) {
            spade_jw_null(o);
            continue;
        }
        if (x->kind == IR_WORKER) {
            serve_write_failure(o, x->f);
            continue;
        }
        spade_failure f;
        memset(&f, 0, sizeof f);
        f.outcome = SPADE_OUT_BAD_CALL;
        snprintf(f.message, sizeof f.message, "instance %d: %s", b->inst[j],
                 x->kind == IR_NOT_RESET ? "step before reset (reset it first)"
                 : x->kind == IR_ENDED   ? "the episode has ended (reset it first)"
                                         : "the action exceeds SPADE_ACTION_MAX bytes");
        serve_write_failure(o, &f);
    }
    spade_jw_end_arr(o);
}

/* Reads "ids" and, for resets, "seeds" (or one "seed" for all: seed + position)
 * or, for steps, "actions" from obj into b. prefix names the fields in errors. */
static int read_batch(rq *r, const serve_env *e, const spade_json *obj, const char *prefix, int is_reset, batch *b,
                      uint64_t **seeds_out, unsigned char *seen) {
    char name[64];
    snprintf(name, sizeof name, "%sids", prefix);
    const spade_json *ids = rq_field(r, obj, "ids", name, SPADE_JSON_ARRAY, 1);
    if (!ids) return -1;
    if (ids->len > (size_t)e->n_instances)
        return rq_err(r, "bad_value", name, "'%s' has %zu items; the environment has %d instances", name, ids->len,
                      e->n_instances);
    b->n = (int)ids->len;
    size_t un = ids->len ? ids->len : 1;
    b->inst = malloc(sizeof *b->inst * un);
    b->res = calloc(un, sizeof *b->res);
    b->lens = calloc(un, sizeof *b->lens);
    b->acts = calloc(un, sizeof *b->acts);
    uint64_t *seeds = is_reset ? calloc(un, sizeof *seeds) : NULL;
    *seeds_out = seeds;
    if (!b->inst || !b->res || !b->lens || !b->acts || (is_reset && !seeds))
        return rq_err(r, "internal", NULL, "out of memory");
    for (size_t j = 0; j < ids->len; j++) {
        long long v;
        if (spade_json_int(&ids->items[j], 0, e->n_instances - 1, &v) < 0)
            return rq_err(r, ids->items[j].type == SPADE_JSON_NUMBER ? "bad_value" : "wrong_type", name,
                          "'%s'[%zu] must be an instance index in [0, %d]", name, j, e->n_instances - 1);
        if (seen[v]) return rq_err(r, "bad_value", name, "instance %lld appears twice in one request", v);
        seen[v] = 1;
        b->inst[j] = (int)v;
    }
    if (is_reset) {
        snprintf(name, sizeof name, "%sseeds", prefix);
        const spade_json *sv = spade_json_get(obj, "seeds");
        if (sv && sv->type != SPADE_JSON_NULL) {
            if (!(sv = rq_field(r, obj, "seeds", name, SPADE_JSON_ARRAY, 1))) return -1;
            if (sv->len != ids->len)
                return rq_err(r, "bad_value", name, "'%s' has %zu items, 'ids' %zu", name, sv->len, ids->len);
            for (size_t j = 0; j < sv->len; j++)
                if (spade_json_u64(&sv->items[j], &seeds[j]) < 0)
                    return rq_err(r, sv->items[j].type == SPADE_JSON_NUMBER ? "bad_value" : "wrong_type", name,
                                  "'%s'[%zu] must be a whole number in [0, 2^64)", name, j);
        } else {
            snprintf(name, sizeof name, "%sseed", prefix);
            const spade_json *s1 = spade_json_get(obj, "seed");
            uint64_t s0 = 0;
            if (s1 && s1->type != SPADE_JSON_NULL) {
                if (!(s1 = rq_field(r, obj, "seed", name, SPADE_JSON_NUMBER, 1))) return -1;
                if (spade_json_u64(s1, &s0) < 0)
                    return rq_err(r, "bad_value", name, "'%s' must be a whole number in [0, 2^64)", name);
            }
            for (size_t j = 0; j < ids->len; j++) seeds[j] = s0 + j;
        }
        b->seeds = seeds;
    } else {
        snprintf(name, sizeof name, "%sactions", prefix);
        const spade_json *av = rq_field(r, obj, "actions", name, SPADE_JSON_ARRAY, 1);
        if (!av) return -1;
        if (av->len != ids->len)
            return rq_err(r, "bad_value", name, "'%s' has %zu items, 'ids' %zu", name, av->len, ids->len);
        for (size_t j = 0; j < av->len; j++) {
            if (av->items[j].type != SPADE_JSON_STRING)
                return rq_err(r, "wrong_type", name, "'%s'[%zu] must be a string, not %s", name, j,
                              spade_json_type_name(av->items[j].type));
            b->acts[j] = av->items[j].str;
            b->lens[j] = av->items[j].len;
        }
    }
    return 0;
}

static void batch_free(batch *b) {
    free(b->inst), free(b->res), free(b->lens), free(b->acts);
    memset(b, 0, sizeof *b);
}

/* reset: {"ids", "seeds"}. step: {"ids", "actions"} and optionally
 * "reset": {"ids", "seeds"} carried out first, in the same round trip. */
void serve_op_batch(rq *r, int is_reset) {
    serve_env *e;
    if (rq_handle(r, &e, NULL) < 0) return;
    batch rb = {0}, sb_ = {0};
    uint64_t *rseeds = NULL, *unused = NULL;
    spade_jbuf *store = &r->c->store;
    spade_jbuf_clear(store);
    scratch s;
    int have_scratch = 0;
    unsigned char *seen = calloc((size_t)e->n_instances, 1);
    if (!seen) {
        rq_err(r, "internal", NULL, "out of memory");
        return;
    }
    const spade_json *robj = is_reset ? r->body : spade_json_get(r->body, "reset");
    if (robj && robj->type == SPADE_JSON_NULL) robj = NULL;
    if (robj && !is_reset && !(robj = rq_field(r, r->body, "reset", "reset", SPADE_JSON_OBJECT, 1))) goto out;
    if (robj && read_batch(r, e, robj, is_reset ? "" : "reset.", 1, &rb, &rseeds, seen) < 0) goto out;
    if (!is_reset && read_batch(r, e, r->body, "", 0, &sb_, &unused, seen) < 0) goto out;
    if (scratch_new(&s, e->n_workers, rb.n + sb_.n) < 0) {
        rq_err(r, "internal", NULL, "out of memory");
        goto out;
    }
    have_scratch = 1;
    if (run_batches(e, &rb, &sb_, store, &s) < 0 || store->oom) {
        rq_err(r, "internal", NULL, "out of memory");
        goto out;
    }
    rq_begin_ok(r);
    if (is_reset) {
        write_results(r->out, &rb, store);
    } else {
        write_results(r->out, &sb_, store);
        if (robj) {
            spade_jw_key(r->out, "reset");
            spade_jw_obj(r->out);
            write_results(r->out, &rb, store);
            spade_jw_end_obj(r->out);
        }
    }
    rq_finish(r);
out:
    if (have_scratch) scratch_free(&s);
    batch_free(&rb), batch_free(&sb_);
    free(rseeds), free(unused), free(seen);
    if (store->cap > (8u << 20)) spade_jbuf_free(store); /* a huge batch does not pin its memory */
}
