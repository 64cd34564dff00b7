/* remote_agent.c — the served model as an agent (remote_agent.h).
 *
 * What it is not: a prompt designer: the system line and the hint arm's line
 * are core/chat.h's, the same a local chat model reads (agent/transcript.c),
 * and the environment's observation carries the task. With a reasoning budget
 * the action is dsl/runtime.h's spade_answer_span of the reply, as the local
 * policy agent takes it (agent/policy_agent.c), not a second reading.
 */
#include "agent/remote_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "errbuf.h"
#include "runtime.h"

typedef struct turn {
    int user; /* 1 user, 0 assistant */
    char *text;
    size_t len;
} turn;

typedef struct ep_state {
    turn *turns;
    int n, cap;
    size_t bytes;
    char *hint; /* the system line of the hint arm */
    size_t hint_len;
} ep_state;

typedef struct ragent {
    spade_remote *r;
    uint64_t seed;
    spade_remote_reply *replies;
    int n_replies;
    char system[512];
    size_t system_len;
    int reasoning_tokens, answer_tokens;
} ragent;

static int push(ep_state *s, int user, const char *t, size_t len) {
    if (s->n == s->cap) {
        int c = s->cap ? s->cap * 2 : 16;
        turn *q = realloc(s->turns, (size_t)c * sizeof *q);
        if (!q) return -1;
        s->turns = q;
        s->cap = c;
    }
    char *p = malloc(len + 1);
    if (!p) return -1;
    if (len) memcpy(p, t, len);
    p[len] = 0;
    s->turns[s->n++] = (turn){.user = user, .text = p, .len = len};
    s->bytes += len;
    return 0;
}

static int begin(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    (void)ctx;
    ep_state *s = calloc(1, sizeof *s);
    if (!s) {
        spade_errf(err, errlen, "remote agent: out of memory");
        return -1;
    }
    /* in the hint arm the hint is a system line, not part of the observation */
    if (v->hint && v->hint_len && spade_ep_obs_len_without_hint(v) < v->obs_len) {
        s->hint = malloc(v->hint_len + 8);
        if (s->hint) s->hint_len = spade_chat_hint_line(v->hint, v->hint_len, s->hint, v->hint_len + 8);
    }
    *state = s;
    return 0;
}

static void drop_replies(ragent *a) {
    for (int i = 0; i < a->n_replies; i++) free(a->replies[i].text);
    free(a->replies);
    a->replies = NULL;
    a->n_replies = 0;
}

static int act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    ragent *a = ctx;
    drop_replies(a);
    spade_remote_req *reqs = calloc((size_t)n, sizeof *reqs);
    spade_remote_msg **msgs = calloc((size_t)n, sizeof *msgs);
    int *ask = calloc((size_t)n, sizeof *ask), rc = -1, m = 0;
    a->replies = calloc((size_t)n, sizeof *a->replies);
    if (!reqs || !msgs || !ask || !a->replies) {
        spade_errf(err, errlen, "remote agent: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const spade_ep_view *v = &views[i];
        ep_state *s = v->state;
        size_t olen = v->step == 0 ? spade_ep_obs_len_without_hint(v) : v->obs_len;
        acts[i] = (spade_ep_act){0};
        if (s->bytes + olen > SPADE_REMOTE_CHAT_MAX) {
            acts[i].stop = "context_full";
            continue;
        }
        if (push(s, 1, v->obs, olen) < 0) {
            spade_errf(err, errlen, "remote agent: out of memory");
            goto done;
        }
        msgs[m] = calloc((size_t)s->n + 2, sizeof **msgs);
        if (!msgs[m]) {
            spade_errf(err, errlen, "remote agent: out of memory");
            goto done;
        }
        int k = 0;
        msgs[m][k++] = (spade_remote_msg){"system", a->system, a->system_len};
        if (s->hint) msgs[m][k++] = (spade_remote_msg){"system", s->hint, s->hint_len};
        for (int t = 0; t < s->n; t++)
            msgs[m][k++] =
                (spade_remote_msg){s->turns[t].user ? "user" : "assistant", s->turns[t].text, s->turns[t].len};
        uint64_t sd = a->seed ^ (v->seed * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)v->repeat << 40) ^ (uint64_t)v->step;
        /* with a budget the reply thinks over lines and ends with its \boxed{} answer */
        int thinks = a->reasoning_tokens > 0;
        reqs[m] = (spade_remote_req){.msgs = msgs[m],
                                     .n_msgs = k,
                                     .seed = sd,
                                     .stop_newline = !thinks,
                                     .max_tokens = thinks ? a->reasoning_tokens + a->answer_tokens : 0};
        ask[m++] = i;
    }
    if (spade_remote_chat(a->r, m, reqs, a->replies, err, errlen) < 0) goto done;
    a->n_replies = m;
    for (int j = 0; j < m; j++) {
        spade_remote_reply *rp = &a->replies[j];
        char *t = rp->text;
        size_t len;
        ep_state *s = views[ask[j]].state;
        if (a->reasoning_tokens > 0) { /* the chat keeps what it wrote; the environment reads its answer */
            if (push(s, 0, rp->text, rp->len) < 0) {
                spade_errf(err, errlen, "remote agent: out of memory");
                goto done;
            }
            size_t at = 0;
            spade_answer_span(rp->text, rp->len, &at, &len);
            t += at;
        } else {
            len = strcspn(t, "\n");
            while (len && (*t == ' ' || *t == '\t')) t++, len--;
            while (len && (t[len - 1] == ' ' || t[len - 1] == '\t' || t[len - 1] == '\r')) len--;
            if (push(s, 0, t, len) < 0) {
                spade_errf(err, errlen, "remote agent: out of memory");
                goto done;
            }
        }
        acts[ask[j]] = (spade_ep_act){.text = t, .len = len};
    }
    rc = 0;
done:
    if (msgs)
        for (int j = 0; j < n; j++) free(msgs[j]);
    free(msgs);
    free(reqs);
    free(ask);
    return rc;
}

static void end(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    (void)ctx, (void)v, (void)o;
    ep_state *s = state;
    if (!s) return;
    for (int i = 0; i < s->n; i++) free(s->turns[i].text);
    free(s->turns);
    free(s->hint);
    free(s);
}

static void agent_free(void *ctx) {
    ragent *a = ctx;
    drop_replies(a);
    free(a);
}

spade_agent *spade_agent_remote(spade_remote *r, uint64_t seed, int reasoning_tokens, int answer_tokens, char *err,
                                size_t errlen) {
    spade_agent *ag = calloc(1, sizeof *ag);
    ragent *a = calloc(1, sizeof *a);
    if (!ag || !a) {
        free(ag);
        free(a);
        spade_errf(err, errlen, "remote agent: out of memory");
        return NULL;
    }
    a->r = r;
    a->seed = seed;
    a->reasoning_tokens = reasoning_tokens > 0 ? reasoning_tokens : 0;
    a->answer_tokens = answer_tokens > 0 ? answer_tokens : 64;
    a->system_len = spade_chat_agent_system(a->reasoning_tokens, a->system, sizeof a->system);
    *ag = (spade_agent){.name = "remote", .ctx = a, .begin = begin, .act = act, .end = end, .free = agent_free};
    return ag;
}
