/* agents.c — the agents of agents.h. Each keeps what one episode needs in the
 * per-episode state the layer hands back (begin/end), so one agent serves
 * every live episode at once.
 * What it is not: a policy; nothing here looks at more than one episode.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "check.h"
#include "errbuf.h"

/* ---- pieces of a text ------------------------------------------------------- */

void spade_pieces_free(spade_pieces *pc) {
    if (!pc) return;
    free(pc->p);
    free(pc->len);
    free(pc->store);
    memset(pc, 0, sizeof *pc);
}

static uint64_t fnv(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

typedef struct pbuild {
    spade_pieces *pc;
    int cap;
    char *w; /* next free byte of store */
    int *set; /* open-addressing set of piece indices (+1), set_cap a power of two */
    size_t set_cap;
    int repeats; /* spade_text_words: every word, in order, repeats kept */
} pbuild;

static void add_piece(pbuild *b, const char *s, size_t n) {
    if (!n || b->pc->n >= b->cap) return;
    uint64_t h = fnv(s, n);
    size_t at = (size_t)h & (b->set_cap - 1);
    while (!b->repeats && b->set[at]) {
        int k = b->set[at] - 1;
        if (b->pc->len[k] == n && !memcmp(b->pc->p[k], s, n)) return; /* kept once */
        at = (at + 1) & (b->set_cap - 1);
    }
    memcpy(b->w, s, n);
    b->w[n] = 0;
    b->pc->p[b->pc->n] = b->w;
    b->pc->len[b->pc->n] = n;
    ++b->pc->n;
    if (!b->repeats) b->set[at] = b->pc->n;
    b->w += n + 1;
}

static int text_pieces(const char *text, size_t len, spade_pieces *out, int words_only) {
    memset(out, 0, sizeof *out);
    if (!text) len = 0;
    const char *nul = len ? memchr(text, 0, len) : NULL;
    if (nul) len = (size_t)(nul - text);
    /* at most one piece per two bytes of each kind, plus one */
    int cap = (int)(3 * (len / 2 + 1));
    pbuild b = {.pc = out, .cap = cap, .set_cap = 16, .repeats = words_only};
    while (b.set_cap < 2 * (size_t)cap) b.set_cap *= 2;
    out->p = malloc((size_t)cap * sizeof *out->p);
    out->len = malloc((size_t)cap * sizeof *out->len);
    out->store = malloc(3 * len + (size_t)cap + 1);
    b.set = calloc(b.set_cap, sizeof *b.set);
    if (!out->p || !out->len || !out->store || !b.set) {
        free(b.set);
        spade_pieces_free(out);
        return -1;
    }
    b.w = out->store;
    const unsigned char *t = (const unsigned char *)text;
    for (size_t i = 0; i < len && !words_only;) {
        int neg = t[i] == '-' && i + 1 < len && isdigit(t[i + 1]) && !(i > 0 && isalnum(t[i - 1]));
        if (!isdigit(t[i]) && !neg) {
            i++;
            continue;
        }
        size_t j = i + (size_t)neg;
        while (j < len && isdigit(t[j])) j++;
        if (j + 1 < len && t[j] == '.' && isdigit(t[j + 1])) {
            j++;
            while (j < len && isdigit(t[j])) j++;
        }
        add_piece(&b, text + i, j - i);
        i = j;
    }
    for (size_t i = 0; i < len;) {
        if (isspace(t[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && !isspace(t[j])) j++;
        size_t a = i, z = j;
        /* a sign before a digit is part of the word ("-7," -> "-7") */
        while (a < z && ispunct(t[a]) && !((t[a] == '-' || t[a] == '+') && a + 1 < z && isdigit(t[a + 1]))) a++;
        while (z > a && ispunct(t[z - 1])) z--;
        add_piece(&b, text + a, z - a);
        i = j;
    }
    for (size_t i = 0; i < len && !words_only;) {
        size_t j = i;
        while (j < len && t[j] != '\n') j++;
        size_t a = i, z = j;
        while (a < z && isspace(t[a])) a++;
        while (z > a && isspace(t[z - 1])) z--;
        add_piece(&b, text + a, z - a);
        i = j + 1;
    }
    free(b.set);
    return 0;
}

int spade_text_pieces(const char *text, size_t len, spade_pieces *out) { return text_pieces(text, len, out, 0); }

int spade_text_words(const char *text, size_t len, spade_pieces *out) { return text_pieces(text, len, out, 1); }

/* ---- helpers ------------------------------------------------------------------ */

static spade_agent *agent_new(const char *name, unsigned wants, void *ctx) {
    spade_agent *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->name = name;
    a->wants = wants;
    a->ctx = ctx;
    return a;
}

static void free_state(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    (void)ctx, (void)v, (void)o;
    free(state);
}

/* ---- random ---------------------------------------------------------------------- */

typedef struct random_ep {
    uint64_t rng;
    char buf[64];
} random_ep;

static int random_begin(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    random_ep *r = malloc(sizeof *r);
    if (!r) return spade_errf(err, errlen, "random agent: out of memory"), -1;
    r->rng = *(const uint64_t *)ctx ^ (v->seed * 0x9E3779B97F4A7C15ULL) ^ 0xA5A5A5A5ULL;
    *state = r;
    return 0;
}

static int random_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    (void)ctx, (void)err, (void)errlen;
    for (int i = 0; i < n; i++) {
        random_ep *r = views[i].state;
        acts[i].len = spade_random_action(&r->rng, r->buf, sizeof r->buf);
        acts[i].text = r->buf;
    }
    return 0;
}

spade_agent *spade_agent_random(uint64_t seed) {
    uint64_t *s = malloc(sizeof *s);
    if (!s) return NULL;
    *s = seed;
    spade_agent *a = agent_new("random", 0, s);
    if (!a) {
        free(s);
        return NULL;
    }
    a->begin = random_begin;
    a->act = random_act;
    a->end = free_state;
    a->free = free;
    return a;
}

/* ---- solve and no-op --------------------------------------------------------------- */

static int solve_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    (void)ctx, (void)err, (void)errlen;
    for (int i = 0; i < n; i++) {
        if (!views[i].solve) {
            acts[i].stop = "no_solve";
            continue;
        }
        acts[i].text = views[i].solve;
        acts[i].len = views[i].solve_len;
    }
    return 0;
}

spade_agent *spade_agent_solve(void) {
    spade_agent *a = agent_new("solve", SPADE_AGENT_WANTS_SOLVE, NULL);
    if (a) a->act = solve_act;
    return a;
}

static int noop_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    (void)ctx, (void)views, (void)err, (void)errlen;
    for (int i = 0; i < n; i++) {
        acts[i].text = "";
        acts[i].len = 0;
    }
    return 0;
}

spade_agent *spade_agent_noop(void) {
    spade_agent *a = agent_new("noop", 0, NULL);
    if (a) a->act = noop_act;
    return a;
}

/* ---- stdin -------------------------------------------------------------------------- */

typedef struct stdin_ep {
    char *line;
    size_t cap;
} stdin_ep;

static int stdin_begin(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    (void)ctx, (void)v;
    stdin_ep *s = calloc(1, sizeof *s);
    if (!s) return spade_errf(err, errlen, "stdin agent: out of memory"), -1;
    *state = s;
    return 0;
}

static void stdin_end(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    (void)ctx, (void)v, (void)o;
    stdin_ep *s = state;
    if (s) free(s->line);
    free(s);
}

static int stdin_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    FILE *in = ctx;
    for (int i = 0; i < n; i++) {
        stdin_ep *s = views[i].state;
        errno = 0;
        ssize_t got = getline(&s->line, &s->cap, in);
        if (got < 0) {
            if (errno == ENOMEM) return spade_errf(err, errlen, "stdin agent: out of memory"), -1;
            clearerr(in);
            return 1;
        }
        while (got > 0 && (s->line[got - 1] == '\n' || s->line[got - 1] == '\r')) s->line[--got] = 0;
        acts[i].text = s->line;
        acts[i].len = (size_t)got;
    }
    return 0;
}

spade_agent *spade_agent_stdin(FILE *in) {
    spade_agent *a = agent_new("stdin", 0, in);
    if (!a) return NULL;
    a->begin = stdin_begin;
    a->act = stdin_act;
    a->end = stdin_end;
    return a;
}

/* ---- scripted: a list of actions, from the hint or given ------------------------------- */

typedef struct script_ctx {
    spade_script_tail tail;
    spade_pieces given; /* spade_agent_script's list (pieces built by hand) */
    int from_hint; /* 1: the hint's pieces, 2: the hint's words with repeats */
} script_ctx;

typedef struct script_ep {
    spade_pieces own; /* hint-echo: this episode's hint pieces */
    int next;
} script_ep;

static void script_free(void *ctx) {
    script_ctx *c = ctx;
    if (c) spade_pieces_free(&c->given);
    free(c);
}

static int script_begin(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    script_ctx *c = ctx;
    script_ep *s = calloc(1, sizeof *s);
    int (*split)(const char *, size_t, spade_pieces *) = c->from_hint == 2 ? spade_text_words : spade_text_pieces;
    if (!s || (c->from_hint && split(v->hint, v->hint ? v->hint_len : 0, &s->own) < 0)) {
        free(s);
        return spade_errf(err, errlen, "scripted agent: out of memory"), -1;
    }
    *state = s;
    return 0;
}

static void script_end(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    (void)ctx, (void)v, (void)o;
    script_ep *s = state;
    if (s) spade_pieces_free(&s->own);
    free(s);
}

static int script_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    (void)err, (void)errlen;
    script_ctx *c = ctx;
    for (int i = 0; i < n; i++) {
        script_ep *s = views[i].state;
        const spade_pieces *pc = c->from_hint ? &s->own : &c->given;
        if (s->next >= pc->n) {
            if (c->tail == SPADE_TAIL_CYCLE && pc->n > 0) {
                s->next = 0;
            } else if (c->tail == SPADE_TAIL_STOP && (pc->n > 0 || s->next > 0)) {
                acts[i].stop = "script_end";
                continue;
            } else {
                /* the empty action: TAIL_EMPTY, or a list with nothing in it (played once) */
                acts[i].text = "";
                acts[i].len = 0;
                s->next++;
                continue;
            }
        }
        acts[i].text = pc->p[s->next];
        acts[i].len = pc->len[s->next];
        s->next++;
    }
    return 0;
}

static spade_agent *script_agent(const char *name, unsigned wants, script_ctx *c) {
    spade_agent *a = agent_new(name, wants, c);
    if (!a) {
        script_free(c);
        return NULL;
    }
    a->begin = script_begin;
    a->act = script_act;
    a->end = script_end;
    a->free = script_free;
    return a;
}

spade_agent *spade_agent_hint_echo(spade_script_tail tail) {
    script_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->tail = tail;
    c->from_hint = 1;
    return script_agent("hint-echo", SPADE_AGENT_WANTS_HINT, c);
}

spade_agent *spade_agent_hint_words(spade_script_tail tail) {
    script_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->tail = tail;
    c->from_hint = 2;
    return script_agent("hint-words", SPADE_AGENT_WANTS_HINT, c);
}

spade_agent *spade_agent_script(const char *const *actions, int n, spade_script_tail tail) {
    script_ctx *c = calloc(1, sizeof *c);
    if (!c || n < 0) return free(c), NULL;
    c->tail = tail;
    size_t total = 1;
    for (int i = 0; i < n; i++) total += strlen(actions[i]) + 1;
    c->given.p = malloc((size_t)(n > 0 ? n : 1) * sizeof *c->given.p);
    c->given.len = malloc((size_t)(n > 0 ? n : 1) * sizeof *c->given.len);
    c->given.store = malloc(total);
    if (!c->given.p || !c->given.len || !c->given.store) {
        script_free(c);
        return NULL;
    }
    char *w = c->given.store;
    for (int i = 0; i < n; i++) {
        size_t k = strlen(actions[i]);
        memcpy(w, actions[i], k + 1);
        c->given.p[i] = w;
        c->given.len[i] = k;
        w += k + 1;
    }
    c->given.n = n;
    return script_agent("script", 0, c);
}

/* ---- observation-echo ------------------------------------------------------------------- */

typedef struct obs_ep {
    spade_pieces pc; /* the latest observation's; the action points into it */
} obs_ep;

static int obs_begin(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    (void)ctx, (void)v;
    obs_ep *s = calloc(1, sizeof *s);
    if (!s) return spade_errf(err, errlen, "observation-echo agent: out of memory"), -1;
    *state = s;
    return 0;
}

static void obs_end(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    (void)ctx, (void)v, (void)o;
    obs_ep *s = state;
    if (s) spade_pieces_free(&s->pc);
    free(s);
}

static int obs_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    (void)ctx;
    for (int i = 0; i < n; i++) {
        obs_ep *s = views[i].state;
        spade_pieces_free(&s->pc);
        if (spade_text_pieces(views[i].obs, views[i].obs_len, &s->pc) < 0)
            return spade_errf(err, errlen, "observation-echo agent: out of memory"), -1;
        if (s->pc.n == 0) {
            acts[i].text = "";
            acts[i].len = 0;
            continue;
        }
        int k = views[i].step % s->pc.n;
        acts[i].text = s->pc.p[k];
        acts[i].len = s->pc.len[k];
    }
    return 0;
}

spade_agent *spade_agent_obs_echo(void) {
    spade_agent *a = agent_new("obs-echo", 0, NULL);
    if (!a) return NULL;
    a->begin = obs_begin;
    a->act = obs_act;
    a->end = obs_end;
    return a;
}

/* ---- piece-echo --------------------------------------------------------------------- */

typedef struct piece_ctx {
    int from_hint, n;
} piece_ctx;

/* Piece k of text (0: the whole text, trimmed) into *p, *len; 0 when it has none. */
static int piece_of(const spade_pieces *pc, const char *text, size_t tlen, int k, const char **p, size_t *len) {
    if (k == 0) {
        size_t a = 0, z = text ? tlen : 0;
        const char *nul = z ? memchr(text, 0, z) : NULL;
        if (nul) z = (size_t)(nul - text);
        while (a < z && isspace((unsigned char)text[a])) a++;
        while (z > a && isspace((unsigned char)text[z - 1])) z--;
        if (z == a) return 0;
        *p = text + a, *len = z - a;
        return 1;
    }
    if (k - 1 >= pc->n) return 0;
    *p = pc->p[k - 1], *len = pc->len[k - 1];
    return 1;
}

typedef struct piece_ep {
    spade_pieces pc;
    char *text; /* a copy of the hint at reset, or of the first observation */
    size_t len;
} piece_ep;

static int piece_begin(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    piece_ctx *c = ctx;
    piece_ep *s = calloc(1, sizeof *s);
    if (!s) return spade_errf(err, errlen, "piece-echo agent: out of memory"), -1;
    /* the text is taken once: the hint at reset, or the first observation
     * (what was shown to be typed back; a piece of each later observation
     * would be a policy that reads the board, not an echo) */
    const char *t = c->from_hint ? v->hint : v->obs;
    size_t n = t ? (c->from_hint ? v->hint_len : v->obs_len) : 0;
    s->text = malloc(n + 1);
    if (!s->text || spade_text_pieces(t, n, &s->pc) < 0) {
        free(s->text);
        free(s);
        return spade_errf(err, errlen, "piece-echo agent: out of memory"), -1;
    }
    if (n) memcpy(s->text, t, n);
    s->text[n] = 0;
    s->len = n;
    *state = s;
    return 0;
}

static void piece_end(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    (void)ctx, (void)v, (void)o;
    piece_ep *s = state;
    if (s) {
        spade_pieces_free(&s->pc);
        free(s->text);
    }
    free(s);
}

static int piece_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    (void)err, (void)errlen;
    piece_ctx *c = ctx;
    for (int i = 0; i < n; i++) {
        piece_ep *s = views[i].state;
        if (!piece_of(&s->pc, s->text, s->len, (int)(views[i].episode % c->n), &acts[i].text, &acts[i].len))
            acts[i].stop = "no_piece";
    }
    return 0;
}

spade_agent *spade_agent_piece_echo(int from_hint, int n) {
    if (n < 1) return NULL;
    piece_ctx *c = malloc(sizeof *c);
    if (!c) return NULL;
    *c = (piece_ctx){.from_hint = from_hint, .n = n};
    spade_agent *a = agent_new(from_hint ? "hint-piece" : "obs-piece", from_hint ? SPADE_AGENT_WANTS_HINT : 0, c);
    if (!a) {
        free(c);
        return NULL;
    }
    a->begin = piece_begin;
    a->act = piece_act;
    a->end = piece_end;
    a->free = free;
    return a;
}

/* ---- probes ------------------------------------------------------------------------ */

typedef struct probes_ctx {
    int n, steps;
    char **p;
    size_t *len;
} probes_ctx;

static void probes_free(void *ctx) {
    probes_ctx *c = ctx;
    if (!c) return;
    for (int i = 0; c->p && i < c->n; i++) free(c->p[i]);
    free(c->p);
    free(c->len);
    free(c);
}

static int probes_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    (void)err, (void)errlen;
    probes_ctx *c = ctx;
    for (int i = 0; i < n; i++) {
        if (c->steps > 0 && views[i].step >= c->steps) {
            acts[i].stop = "script_end";
            continue;
        }
        long k = views[i].episode % c->n;
        acts[i].text = c->p[k];
        acts[i].len = c->len[k];
    }
    return 0;
}

spade_agent *spade_agent_probes(const char *const *probes, const size_t *lens, int n, int steps) {
    if (n < 1 || !probes || !lens) return NULL;
    probes_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n = n;
    c->steps = steps;
    c->p = calloc((size_t)n, sizeof *c->p);
    c->len = malloc((size_t)n * sizeof *c->len);
    if (!c->p || !c->len) {
        probes_free(c);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        c->p[i] = malloc(lens[i] + 1);
        if (!c->p[i]) {
            probes_free(c);
            return NULL;
        }
        if (lens[i]) memcpy(c->p[i], probes[i], lens[i]);
        c->p[i][lens[i]] = 0;
        c->len[i] = lens[i];
    }
    spade_agent *a = agent_new("probes", 0, c);
    if (!a) {
        probes_free(c);
        return NULL;
    }
    a->act = probes_act;
    a->free = probes_free;
    return a;
}
