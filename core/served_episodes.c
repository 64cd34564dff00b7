/* served_episodes.c — the episode loop over `spade serve` servers
 * (served_episodes.h): slots split in one block per server, one round =
 * resets, texts the agent wants, the agent's actions, the steps; every
 * exchange sends each server its requests before it reads any reply.
 *
 * What it is not: the local episode layer (episodes.c), nor the protocol's
 * transport and readers (serve_client.c).
 */
#include "served_episodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ep_order.h"
#include "errbuf.h"
#include "serve_client.h"

void spade_served_opts_default(spade_served_opts *o) {
    *o = (spade_served_opts){.max_live = 32, .workers = 1, .retries = 5, .backoff_s = 0.25, .timeout_s = 120.0};
}

typedef struct slot {
    int live, reset_done, acting;
    long episode;
    uint64_t seed;
    int repeat, steps, begun, hint_req;
    double ret, reward;
    void *state;
    char *obs, *solve, *hint;
    size_t obs_len, solve_len, hint_len;
    int has_solve, has_hint;
    /* every action played, end to end, for a replay on a server that restarted */
    char *hbuf;
    size_t hlen, hcap, *hoff;
    int hn, hoff_cap;
    const char *cur;
    size_t cur_len;
} slot;

typedef struct server {
    const char *addr;
    spade_sclient *c;
    long long handle;
    int first, count; /* its slots */
    spade_jbuf out; /* the requests of the exchange under way, newline-separated */
    int n_req;
    spade_json_doc **docs; /* their replies */
} server;

typedef struct run {
    const spade_ep_spec *spec;
    spade_agent *agent;
    spade_served_opts o;
    spade_env_info info;
    int have_info;
    slot *S;
    int n_slots;
    server *V;
    int n_v;
    long taken;
    int queue_done;
    spade_ep_order order_out; /* outcomes held until the ones before them are delivered */
    spade_ep_view *views;
    spade_ep_act *acts;
    int *who;
    char *err;
    size_t errlen;
} run;

static int oom(run *R) { return spade_errf(R->err, R->errlen, "out of memory"), -1; }

static int set_text(char **p, size_t *len, const char *s, size_t n) {
    char *q = realloc(*p, n + 1);
    if (!q) return -1;
    memcpy(q, s, n);
    q[n] = 0;
    *p = q;
    *len = n;
    return 0;
}

/* ---- outcomes, in episode order ----------------------------------------------------- */
static int hold(run *R, const spade_ep_outcome *o) {
    return spade_ep_order_put(&R->order_out, o, R->o.on_outcome, R->o.ctx) < 0 ? oom(R) : 0;
}

static void view_of(run *R, slot *e, spade_ep_view *v) {
    *v = (spade_ep_view){.episode = e->episode,
                         .seed = e->seed,
                         .repeat = e->repeat,
                         .step = e->steps,
                         .obs = e->obs ? e->obs : "",
                         .obs_len = e->obs_len,
                         .reward = e->reward,
                         .ret = e->ret,
                         .info = &R->info,
                         .state = e->state};
    if (e->has_hint) v->hint = e->hint, v->hint_len = e->hint_len;
    if (e->has_solve) v->solve = e->solve, v->solve_len = e->solve_len;
}

static void emit(run *R, spade_ep_event_kind kind, const slot *e, int step, const char *text, size_t len, double rw) {
    if (!R->o.on_event) return;
    spade_ep_event ev = {.kind = kind, .episode = e->episode, .step = step, .text = text, .len = len, .reward = rw};
    R->o.on_event(R->o.ctx, &ev);
}

/* Ends the episode of slot e (as local play does: success when it ended by itself or by the agent). */
static int finish(run *R, slot *e, spade_ep_end end, const spade_failure *g, spade_ep_op op, const char *stop) {
    spade_ep_outcome o = {
        .episode = e->episode, .seed = e->seed, .hint = e->hint_req, .end = end, .ret = e->ret, .steps = e->steps};
    o.success = (end == SPADE_EP_TERMINATED || end == SPADE_EP_TRUNCATED || end == SPADE_EP_AGENT_STOP) &&
                e->ret >= R->info.success;
    if (stop) snprintf(o.stop_reason, sizeof o.stop_reason, "%s", stop);
    if (g) o.failure = *g, o.failed_in = op;
    if (e->begun && R->agent->end) {
        spade_ep_view v;
        view_of(R, e, &v);
        R->agent->end(R->agent->ctx, &v, e->state, &o);
    }
    e->begun = e->live = e->reset_done = e->acting = 0;
    e->state = NULL;
    e->hn = 0;
    e->hlen = 0;
    e->has_solve = e->has_hint = 0;
    return hold(R, &o);
}

static int record(run *R, slot *e) {
    if (e->hlen + e->cur_len > e->hcap) {
        size_t cap = e->hcap ? e->hcap : 256;
        while (cap < e->hlen + e->cur_len) cap *= 2;
        char *p = realloc(e->hbuf, cap);
        if (!p) return oom(R);
        e->hbuf = p, e->hcap = cap;
    }
    if (e->hn == e->hoff_cap) {
        int cap = e->hoff_cap ? e->hoff_cap * 2 : 16;
        size_t *p = realloc(e->hoff, (size_t)cap * sizeof *p);
        if (!p) return oom(R);
        e->hoff = p, e->hoff_cap = cap;
    }
    if (e->cur_len) memcpy(e->hbuf + e->hlen, e->cur, e->cur_len);
    e->hlen += e->cur_len;
    e->hoff[e->hn++] = e->hlen;
    return 0;
}

/* ---- requests ----------------------------------------------------------------------- */
static void req_begin(server *s, const char *op) {
    if (s->n_req++) spade_jw_raw(&s->out, "\n", 1);
    spade_jw_obj(&s->out);
    spade_jw_key(&s->out, "op");
    spade_jw_cstr(&s->out, op);
    if (strcmp(op, "make")) {
        spade_jw_key(&s->out, "env");
        spade_jw_int(&s->out, s->handle);
    }
}

static void req_ids(server *s, const int *ids, int n) {
    spade_jw_key(&s->out, "ids");
    spade_jw_arr(&s->out);
    for (int j = 0; j < n; j++) spade_jw_int(&s->out, ids[j]);
    spade_jw_end_arr(&s->out);
}

static void clear_docs(server *s) {
    for (int q = 0; q < s->n_req; q++) spade_json_doc_free(s->docs[q]), s->docs[q] = NULL;
}

/* Sends s its pending requests and reads their replies into s->docs. A
 * SPADE_SCLIENT_* value (err set unless OK); a refusal of any is _REFUSED. */
static int exchange_one(run *R, server *s, int send_only, int recv_only) {
    if (!s->n_req) return SPADE_SCLIENT_OK;
    if (s->out.oom) return oom(R);
    if (!recv_only) {
        int rc = spade_sclient_send(s->c, s->out.p, s->out.len, R->err, R->errlen);
        if (rc != SPADE_SCLIENT_OK || send_only) return rc;
    }
    for (int q = 0; q < s->n_req; q++) {
        int rc = spade_sclient_recv(s->c, &s->docs[q], R->err, R->errlen);
        if (rc != SPADE_SCLIENT_OK) return rc;
    }
    return SPADE_SCLIENT_OK;
}

static int recover(run *R, server *s, const char *cause);

/* What a phase asks each server: build writes s's requests from the slots' state
 * (so after a recovery, with the new handle, it writes them again). */
typedef void (*build_fn)(run *R, server *s);

static void build_for(run *R, server *s, build_fn build) {
    spade_jbuf_clear(&s->out);
    clear_docs(s);
    s->n_req = 0;
    build(R, s);
}

/* Every server with requests: all sent, then all read; a server that went away
 * is recovered and asked again. The replies are in each server's docs. */
static int exchange(run *R, build_fn build) {
    int rc[64];
    for (int k = 0; k < R->n_v; k++) {
        build_for(R, &R->V[k], build);
        rc[k % 64] = exchange_one(R, &R->V[k], 1, 0);
    }
    for (int k = 0; k < R->n_v; k++) {
        server *s = &R->V[k];
        int r = rc[k % 64] == SPADE_SCLIENT_OK ? exchange_one(R, s, 0, 1) : rc[k % 64];
        for (int tries = 0; r == SPADE_SCLIENT_LOST && tries <= R->o.retries; tries++) {
            char cause[1024];
            snprintf(cause, sizeof cause, "%s", R->err);
            if (recover(R, s, cause) < 0) return -1;
            build_for(R, s, build);
            r = exchange_one(R, s, 0, 0);
        }
        if (r == SPADE_SCLIENT_REFUSED) {
            char why[1200];
            snprintf(why, sizeof why, "%s", R->err);
            return spade_errf(R->err, R->errlen, "server %s refused a request: %s", s->addr, why), -1;
        }
        if (r != SPADE_SCLIENT_OK) {
            if (r == SPADE_SCLIENT_LOST) spade_errf(R->err, R->errlen, "server %s keeps going away", s->addr);
            return -1;
        }
    }
    return 0;
}

/* ---- a server: connect, make, replay ---------------------------------------------------- */
static void sleep_s(double s) {
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {}
}

static int connect_retrying(run *R, server *s, const char *cause) {
    double delay = R->o.backoff_s, waited = 0;
    char last[1024];
    snprintf(last, sizeof last, "%s", cause ? cause : "");
    for (int k = 0; k <= R->o.retries; k++) {
        if (k) {
            sleep_s(delay);
            waited += delay;
            delay = delay * 2 < 5.0 ? delay * 2 : 5.0;
        }
        if (spade_sclient_connect(&s->c, s->addr, R->o.token, R->o.timeout_s, last, sizeof last) == 0) return 0;
        if (strstr(last, "unauthorized")) break; /* a wrong token stays wrong */
        if (R->o.stop && *R->o.stop) break;
    }
    return spade_errf(R->err, R->errlen, "server %s is gone: no connection after %d tries over %.1f s (last: %s)",
                      s->addr, R->o.retries + 1, waited, last),
           -1;
}

/* The request in s->out on s alone, its reply in s->docs[0] (the caller clears it). */
static int ask(run *R, server *s) { return exchange_one(R, s, 0, 0) == SPADE_SCLIENT_OK ? 0 : -1; }

static int make_env(run *R, server *s) {
    spade_jbuf_clear(&s->out);
    s->n_req = 0;
    req_begin(s, "make");
    spade_jw_key(&s->out, "source");
    spade_jw_str(&s->out, R->spec->source, R->spec->len);
    spade_jw_key(&s->out, "filename");
    spade_jw_cstr(&s->out, R->spec->filename ? R->spec->filename : "source.c");
    spade_jw_key(&s->out, "params");
    spade_jw_cstr(&s->out, R->spec->params ? R->spec->params : "");
    spade_jw_key(&s->out, "instances");
    spade_jw_int(&s->out, s->count);
    spade_jw_key(&s->out, "workers");
    spade_jw_int(&s->out, R->o.workers < s->count ? R->o.workers : s->count);
    spade_jw_end_obj(&s->out);
    if (ask(R, s) < 0) {
        char why[1400];
        snprintf(why, sizeof why, "%s", R->err);
        return spade_errf(R->err, R->errlen, "server %s: make: %s", s->addr, why), -1;
    }
    const spade_json *r = spade_json_root(s->docs[0]), *h = spade_json_get(r, "env");
    long long v;
    int rc = 0;
    if (!h || spade_json_int(h, 0, 1LL << 40, &v) < 0)
        rc = (spade_errf(R->err, R->errlen, "server %s: make: reply: 'env' is not a handle", s->addr), -1);
    else
        s->handle = v;
    if (!rc && !R->have_info) {
        char why[1024];
        if (spade_sclient_parse_info(spade_json_get(r, "info"), &R->info, why, sizeof why) < 0)
            rc = (spade_errf(R->err, R->errlen, "server %s: make: %s", s->addr, why), -1);
        R->have_info = !rc;
    }
    clear_docs(s);
    s->n_req = 0;
    return rc;
}

/* A server that went away: dialled again, its environment made again, and each
 * live episode of its block reset with its seed and stepped through its recorded
 * actions, so the server holds what it held before. */
static int recover(run *R, server *s, const char *cause) {
    clear_docs(s);
    spade_sclient_free(s->c);
    s->c = NULL;
    int rc = connect_retrying(R, s, cause);
    if (!rc) rc = make_env(R, s);
    int ids[4096], n = 0;
    uint64_t seeds[4096];
    for (int i = 0; !rc && i < s->count; i++)
        if (R->S[s->first + i].reset_done) ids[n] = i, seeds[n++] = R->S[s->first + i].seed;
    if (!rc && n) {
        spade_jbuf_clear(&s->out);
        s->n_req = 0;
        req_begin(s, "reset");
        req_ids(s, ids, n);
        spade_jw_key(&s->out, "seeds");
        spade_jw_arr(&s->out);
        for (int j = 0; j < n; j++) spade_jw_u64(&s->out, seeds[j]);
        spade_jw_end_arr(&s->out);
        spade_jw_end_obj(&s->out);
        rc = ask(R, s);
        clear_docs(s);
    }
    for (int t = 0; !rc; t++) { /* round t: the t-th action of every episode that has one */
        int m = 0, at[4096];
        for (int j = 0; j < n; j++)
            if (R->S[s->first + ids[j]].hn > t) at[m++] = ids[j];
        if (!m) break;
        spade_jbuf_clear(&s->out);
        s->n_req = 0;
        req_begin(s, "step");
        req_ids(s, at, m);
        spade_jw_key(&s->out, "actions");
        spade_jw_arr(&s->out);
        for (int j = 0; j < m; j++) {
            const slot *e = &R->S[s->first + at[j]];
            size_t a = t ? e->hoff[t - 1] : 0;
            spade_jw_str(&s->out, e->hbuf + a, e->hoff[t] - a);
        }
        spade_jw_end_arr(&s->out);
        spade_jw_end_obj(&s->out);
        rc = ask(R, s);
        clear_docs(s);
    }
    spade_jbuf_clear(&s->out);
    s->n_req = 0;
    if (rc) {
        char why[1200];
        snprintf(why, sizeof why, "%s", R->err);
        return spade_errf(R->err, R->errlen, "server %s: after a reconnection: %s", s->addr, why), -1;
    }
    fprintf(stderr, "spade: %s: reconnected (%s); replayed %d live episode%s\n", s->addr, cause, n, n == 1 ? "" : "s");
    return 0;
}

/* ---- one round's phases -------------------------------------------------------------- */
static void build_resets(run *R, server *s) {
    int ids[4096], n = 0;
    for (int i = 0; i < s->count; i++)
        if (R->S[s->first + i].live && !R->S[s->first + i].reset_done) ids[n++] = i;
    if (!n) return;
    req_begin(s, "reset");
    req_ids(s, ids, n);
    spade_jw_key(&s->out, "seeds");
    spade_jw_arr(&s->out);
    for (int j = 0; j < n; j++) spade_jw_u64(&s->out, R->S[s->first + ids[j]].seed);
    spade_jw_end_arr(&s->out);
    spade_jw_end_obj(&s->out);
}

static void build_steps(run *R, server *s) {
    int ids[4096], n = 0;
    for (int i = 0; i < s->count; i++)
        if (R->S[s->first + i].live && R->S[s->first + i].acting) ids[n++] = i;
    if (!n) return;
    req_begin(s, "step");
    req_ids(s, ids, n);
    spade_jw_key(&s->out, "actions");
    spade_jw_arr(&s->out);
    for (int j = 0; j < n; j++) spade_jw_str(&s->out, R->S[s->first + ids[j]].cur, R->S[s->first + ids[j]].cur_len);
    spade_jw_end_arr(&s->out);
    spade_jw_end_obj(&s->out);
}

/* The texts an agent wants: the hint of each episode just reset, SOLVE's action of each live one. */
static int wants_hint(const run *R, const slot *e) {
    return ((R->agent->wants & SPADE_AGENT_WANTS_HINT) || e->hint_req) && e->live && e->reset_done && !e->begun &&
           !e->has_hint;
}
static int wants_solve(const run *R, const slot *e) {
    return (R->agent->wants & SPADE_AGENT_WANTS_SOLVE) && R->info.has_solve && e->live && e->reset_done;
}

static void build_texts(run *R, server *s) {
    for (int i = 0; i < s->count; i++) {
        const slot *e = &R->S[s->first + i];
        for (int solve = 0; solve < 2; solve++) {
            if (!(solve ? wants_solve(R, e) : wants_hint(R, e))) continue;
            req_begin(s, solve ? "solve" : "hint");
            spade_jw_key(&s->out, "instance");
            spade_jw_int(&s->out, i);
            spade_jw_end_obj(&s->out);
        }
    }
}

/* Applies one reset or step reply of server s to its slots; step: 1. */
static int apply_batch(run *R, server *s, int is_step) {
    if (!s->n_req) return 0;
    int ids[4096], n = 0;
    for (int i = 0; i < s->count; i++) {
        const slot *e = &R->S[s->first + i];
        if (e->live && (is_step ? e->acting : !e->reset_done)) ids[n++] = i;
    }
    spade_sclient_item *it = calloc((size_t)n, sizeof *it);
    if (!it) return oom(R);
    char why[1024];
    if (spade_sclient_parse_batch(spade_json_root(s->docs[0]), n, it, why, sizeof why) < 0) {
        free(it);
        return spade_errf(R->err, R->errlen, "server %s: %s: %s", s->addr, is_step ? "step" : "reset", why), -1;
    }
    int rc = 0;
    for (int j = 0; j < n && !rc; j++) {
        slot *e = &R->S[s->first + ids[j]];
        if (it[j].failed) {
            rc = finish(R, e, SPADE_EP_FAILED, &it[j].failure, is_step ? SPADE_EP_OP_STEP : SPADE_EP_OP_RESET, NULL);
            continue;
        }
        if (set_text(&e->obs, &e->obs_len, it[j].obs, it[j].obs_len) < 0) {
            rc = oom(R);
            break;
        }
        if (!is_step) {
            e->reset_done = 1;
            e->steps = 0, e->ret = 0, e->reward = 0, e->hn = 0, e->hlen = 0;
            continue;
        }
        e->acting = 0;
        if ((rc = record(R, e)) < 0) break;
        e->steps++;
        e->reward = it[j].reward;
        e->ret = it[j].ret;
        emit(R, SPADE_EV_OBS, e, e->steps, e->obs, e->obs_len, e->reward);
        if (it[j].terminated)
            rc = finish(R, e, SPADE_EP_TERMINATED, NULL, SPADE_EP_OP_NONE, NULL);
        else if (it[j].truncated)
            rc = finish(R, e, SPADE_EP_TRUNCATED, NULL, SPADE_EP_OP_NONE, NULL);
    }
    free(it);
    return rc;
}

static int apply_texts(run *R, server *s) {
    int q = 0;
    for (int i = 0; i < s->count; i++) {
        slot *e = &R->S[s->first + i];
        int want[2] = {wants_hint(R, e), wants_solve(R, e)};
        for (int solve = 0; solve < 2; solve++) {
            if (!want[solve]) continue;
            const spade_json *t = spade_json_get(spade_json_root(s->docs[q++]), solve ? "action" : "text");
            if (!t || t->type != SPADE_JSON_STRING || t->len > SPADE_OBS_MAX * 3u)
                return spade_errf(R->err, R->errlen, "server %s: %s: reply: '%s' is not a string of at most %d bytes",
                                  s->addr, solve ? "solve" : "hint", solve ? "action" : "text", SPADE_OBS_MAX * 3),
                       -1;
            if ((solve ? set_text(&e->solve, &e->solve_len, t->str, t->len)
                       : set_text(&e->hint, &e->hint_len, t->str, t->len)) < 0)
                return oom(R);
            if (solve)
                e->has_solve = 1;
            else
                e->has_hint = 1;
        }
    }
    return 0;
}

/* Fills the free slots from the queue (one episode each). */
static int fill(run *R, spade_ep_next_fn next, void *next_ctx) {
    for (int i = 0; i < R->n_slots && !R->queue_done; i++) {
        slot *e = &R->S[i];
        if (e->live) continue;
        spade_ep_request q;
        memset(&q, 0, sizeof q);
        if (!next(next_ctx, &q)) {
            R->queue_done = 1;
            break;
        }
        if (q.spec != 0)
            return spade_errf(R->err, R->errlen, "request %ld names spec %d; one spec is played", R->taken, q.spec), -1;
        e->live = 1;
        e->reset_done = e->acting = e->begun = 0;
        e->episode = R->taken++;
        e->seed = q.seed;
        e->repeat = q.repeat;
        e->hint_req = q.hint != 0;
        e->has_solve = e->has_hint = 0;
        e->state = NULL;
    }
    return 0;
}

/* The live slots in episode order. */
static int live_order(run *R) {
    int n = 0;
    for (int i = 0; i < R->n_slots; i++)
        if (R->S[i].live) R->who[n++] = i;
    for (int a = 1; a < n; a++) /* insertion sort: nearly sorted already */
        for (int b = a; b > 0 && R->S[R->who[b - 1]].episode > R->S[R->who[b]].episode; b--) {
            int t = R->who[b];
            R->who[b] = R->who[b - 1];
            R->who[b - 1] = t;
        }
    return n;
}

static int end_all(run *R, spade_ep_end end) {
    int n = live_order(R);
    for (int k = 0; k < n; k++)
        if (finish(R, &R->S[R->who[k]], end, NULL, SPADE_EP_OP_NONE, NULL) < 0) return -1;
    return 0;
}

static int round_once(run *R, spade_ep_next_fn next, void *next_ctx) {
    if (fill(R, next, next_ctx) < 0) return -1;
    if (exchange(R, build_resets) < 0) return -1;
    for (int k = 0; k < R->n_v; k++)
        if (apply_batch(R, &R->V[k], 0) < 0) return -1;
    int any_hint = 0;
    for (int i = 0; i < R->n_slots && !any_hint; i++) any_hint = wants_hint(R, &R->S[i]);
    if (any_hint || (R->agent->wants & SPADE_AGENT_WANTS_SOLVE)) {
        if (exchange(R, build_texts) < 0) return -1;
        for (int k = 0; k < R->n_v; k++)
            if (apply_texts(R, &R->V[k]) < 0) return -1;
    }
    int n = live_order(R);
    for (int k = 0; k < n; k++) { /* episodes that start: the agent's begin, their first observation */
        slot *e = &R->S[R->who[k]];
        if (e->begun) continue;
        if (e->hint_req) { /* the hint arm: the hint follows the first observation, as in local play */
            size_t need = spade_ep_with_hint(e->obs, e->obs_len, e->hint, e->hint_len, NULL, 0);
            char *p = malloc(need + 1);
            if (!p) return oom(R);
            spade_ep_with_hint(e->obs, e->obs_len, e->hint, e->hint_len, p, need + 1);
            free(e->obs);
            e->obs = p;
            e->obs_len = need;
        }
        spade_ep_view v;
        view_of(R, e, &v);
        if (R->agent->begin && R->agent->begin(R->agent->ctx, &v, &e->state, R->err, R->errlen) < 0) return -1;
        e->begun = 1;
        emit(R, SPADE_EV_OBS, e, 0, e->obs, e->obs_len, 0);
    }
    if (!n) return 0;
    for (int k = 0; k < n; k++) {
        view_of(R, &R->S[R->who[k]], &R->views[k]);
        R->acts[k] = (spade_ep_act){0};
    }
    int ar = R->agent->act(R->agent->ctx, n, R->views, R->acts, R->err, R->errlen);
    if (ar < 0) return -1;
    if (ar == 1) return end_all(R, SPADE_EP_STOPPED) < 0 ? -1 : SPADE_EPISODES_AGENT_END;
    int order[4096];
    memcpy(order, R->who, (size_t)n * sizeof *order);
    for (int k = 0; k < n; k++) {
        slot *e = &R->S[order[k]];
        if (R->acts[k].stop) {
            if (finish(R, e, SPADE_EP_AGENT_STOP, NULL, SPADE_EP_OP_NONE, R->acts[k].stop) < 0) return -1;
            continue;
        }
        e->cur = R->acts[k].text ? R->acts[k].text : "";
        e->cur_len = R->acts[k].len;
        e->acting = 1;
        emit(R, SPADE_EV_ACTION, e, e->steps + 1, e->cur, e->cur_len, 0);
    }
    if (exchange(R, build_steps) < 0) return -1;
    for (int k = 0; k < R->n_v; k++)
        if (apply_batch(R, &R->V[k], 1) < 0) return -1;
    return 0;
}

static void free_run(run *R) {
    for (int i = 0; i < R->n_slots; i++) {
        slot *e = &R->S[i];
        free(e->obs), free(e->solve), free(e->hint), free(e->hbuf), free(e->hoff);
    }
    for (int k = 0; k < R->n_v; k++) {
        clear_docs(&R->V[k]);
        free(R->V[k].docs);
        spade_jbuf_free(&R->V[k].out);
        spade_sclient_free(R->V[k].c);
    }
    spade_ep_order_free(&R->order_out);
    free(R->S), free(R->V), free(R->views), free(R->acts), free(R->who);
}

int spade_served_run(const spade_ep_spec *spec, spade_ep_next_fn next, void *next_ctx, spade_agent *agent,
                     const spade_served_opts *opts, spade_env_info *info, char *err, size_t errlen) {
    run R = {.spec = spec, .agent = agent, .o = *opts, .err = err, .errlen = errlen};
    if (R.o.n_servers < 1 || R.o.n_servers > 64) return spade_errf(err, errlen, "give 1..64 servers"), -1;
    if (R.o.max_live < 1 || R.o.max_live > 4096) return spade_errf(err, errlen, "max_live must be 1..4096"), -1;
    if (!agent || !agent->act) return spade_errf(err, errlen, "no agent"), -1;
    /* every server gets a block of at least one slot: no more servers are used than slots */
    R.n_v = R.o.n_servers < R.o.max_live ? R.o.n_servers : R.o.max_live;
    R.n_slots = R.o.max_live;
    R.S = calloc((size_t)R.n_slots, sizeof *R.S);
    R.V = calloc((size_t)R.n_v, sizeof *R.V);
    R.views = calloc((size_t)R.n_slots, sizeof *R.views);
    R.acts = calloc((size_t)R.n_slots, sizeof *R.acts);
    R.who = calloc((size_t)R.n_slots, sizeof *R.who);
    int rc = -1;
    if (!R.S || !R.V || !R.views || !R.acts || !R.who) {
        oom(&R);
        goto out;
    }
    for (int k = 0, at = 0; k < R.n_v; k++) {
        server *s = &R.V[k];
        s->addr = R.o.servers[k];
        s->first = at;
        s->count = R.n_slots / R.n_v + (k < R.n_slots % R.n_v);
        at += s->count;
        /* at most one request per slot and text (hint and solve) in one exchange */
        if (!(s->docs = calloc((size_t)s->count * 2 + 1, sizeof *s->docs))) {
            oom(&R);
            goto out;
        }
        if (connect_retrying(&R, s, NULL) < 0 || make_env(&R, s) < 0) goto out;
    }
    if (info) *info = R.info;
    for (;;) {
        if (R.o.stop && *R.o.stop) {
            rc = end_all(&R, SPADE_EP_STOPPED) < 0 ? -1 : SPADE_EPISODES_STOPPED;
            break;
        }
        int r = round_once(&R, next, next_ctx);
        if (r != 0) {
            rc = r;
            break;
        }
        int any = 0;
        for (int i = 0; i < R.n_slots && !any; i++) any = R.S[i].live;
        if (!any && R.queue_done) {
            rc = SPADE_EPISODES_DONE;
            break;
        }
    }
out:
    if (rc < 0) { /* the live episodes still end, so the agent frees what it holds */
        char keep[2048];
        snprintf(keep, sizeof keep, "%s", err);
        for (int i = 0; R.S && i < R.n_slots; i++)
            if (R.S[i].live && R.S[i].begun && agent->end) {
                spade_ep_view v;
                view_of(&R, &R.S[i], &v);
                spade_ep_outcome o = {.episode = R.S[i].episode, .seed = R.S[i].seed, .end = SPADE_EP_STOPPED};
                agent->end(agent->ctx, &v, R.S[i].state, &o);
            }
        snprintf(err, errlen, "%s", keep);
    }
    free_run(&R);
    return rc;
}
