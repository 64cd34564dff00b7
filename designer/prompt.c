/* prompt.c — assembling the designer's prompt and the hint writer's prompt
 * within a token budget (prompt.h).
 *
 * What it is not: a template language. The instruction text is one string
 * here, written for a small model: short, concrete, the DSL's words.
 */
#include "prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "errbuf.h"

static const char INSTRUCTIONS[] =
    "Write one new environment for spade in C with <spade/dsl.h>: ENV, PARAM, STATE, RESET, STEP, HINT, SOLVE.\n"
    "It is played over several turns (the goal needs 3 or more steps), accepts any action without failing,\n"
    "has params that scale its difficulty, a HINT that helps without giving the answer, and a SOLVE that wins.\n";

void spade_prompt_opts_default(spade_prompt_opts *o) {
    memset(o, 0, sizeof *o);
    o->budget = 2048;
    o->memory_share = 0.4;
}

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static int put(buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *np = realloc(b->p, cap);
        if (!np) return -1;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}
static int puts_(buf *b, const char *s) { return put(b, s, strlen(s)); }

static size_t count(const spade_prompt_opts *o, const char *s, size_t n) {
    return o->count ? o->count(o->count_ctx, s, n) : n;
}

/* Whole lines while they fit (put_lines, without the fences). A cut text
 * ends with "...\n", except for a chat model (chat): a model shown a block
 * that ends in "..." writes "..." into its own source (3 of 4 of
 * Qwen2.5-Coder's sources ended so, and none compiled), so the block stops
 * instead at the last top-level boundary that fits (a line that starts with
 * '}' or is empty; the raw cut when none is in its second half) and *cut
 * tells put_lines to say so after the fence. */
static size_t put_lines_plain(buf *b, const spade_prompt_opts *o, const char *text, size_t len, size_t left, int *cut) {
    static const char more[] = "...\n";
    size_t used = 0, reserve = o->chat ? 0 : count(o, more, sizeof more - 1);
    size_t bound_at = 0, bound_used = 0; /* b->n and used after the last boundary line, 0: none */
    const char *p = text, *end = text + len;
    *cut = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        size_t c = count(o, p, n) + (nl ? 0 : 1);
        if (used + c + reserve > left) {
            *cut = 1;
            if (o->chat) {
                if (bound_at && 2 * bound_used >= used && b->p) { /* drop the partial top-level item */
                    b->n = bound_at;
                    b->p[b->n] = 0;
                    used = bound_used;
                }
            } else if (used + reserve <= left) {
                put(b, more, sizeof more - 1);
                used += reserve;
            }
            return used;
        }
        put(b, p, n);
        if (!nl) put(b, "\n", 1);
        used += c;
        if (n == 1 || *p == '}') bound_at = b->n, bound_used = used;
        p += n;
    }
    return used;
}

/* Appends whole lines of text while they fit in *left tokens; a cut text
 * ends with "...\n"; for a chat model the lines are in a ```c block (its
 * fences counted), and a cut one is followed by CUT_NOTE, outside the block.
 * Returns what it used. */
static const char CUT_NOTE[] = "(This source is cut here to fit; an answer is always a whole source.)\n";
static size_t put_lines(buf *b, const spade_prompt_opts *o, const char *text, size_t len, size_t left) {
    static const char open[] = "```c\n", close[] = "```\n";
    size_t fences = o->chat ? count(o, open, sizeof open - 1) + count(o, close, sizeof close - 1) +
                                  count(o, CUT_NOTE, sizeof CUT_NOTE - 1)
                            : 0;
    if (o->chat && fences >= left) return 0;
    if (o->chat) put(b, open, sizeof open - 1);
    int cut;
    size_t used = fences + put_lines_plain(b, o, text, len, left - fences, &cut);
    if (o->chat) put(b, close, sizeof close - 1);
    if (o->chat && cut) put(b, CUT_NOTE, sizeof CUT_NOTE - 1);
    return used;
}

void spade_rewrite_request(const char *change, char *out, size_t cap) {
    while (*change == ' ') change++;
    snprintf(out, cap,
             "Rewrite the environment shown with this change: %s Write the whole changed source in one ```c block.\n",
             change);
}

int spade_prompt_build(const spade_prompt_opts *o, const char *family, const char *excerpt_name, const char *excerpt,
                       size_t excerpt_len, const spade_prompt_memory *mem, int n_mem, char **out, size_t *out_len,
                       char *err, size_t errlen) {
    char head[512], tail[1024] = "Source:\n";
    const char *fam = family && *family ? family : "any";
    *out = NULL;
    snprintf(head, sizeof head, "%sFamily: %s.\n", o->chat ? "" : INSTRUCTIONS, fam);
    if (o->chat)
        snprintf(tail, sizeof tail,
                 "Write one new environment of the family %s for spade, a different game from the ones shown, "
                 "in one ```c block.\n",
                 fam);
    if (o->request) snprintf(tail, sizeof tail, "%s", o->request);
    size_t fixed = count(o, head, strlen(head)) + count(o, tail, strlen(tail));
    if (o->chat) { /* the system card and the template's markup share the context */
        size_t cl;
        const char *card = spade_chat_designer_card(&cl);
        fixed += count(o, card, cl) + 16;
    }
    if (o->budget <= 0 || (size_t)o->budget <= fixed) {
        spade_errf(err, errlen, "designer prompt: a budget of %d tokens cannot hold the %zu tokens of instructions",
                   o->budget, fixed);
        return -1;
    }
    for (size_t budget = (size_t)o->budget;;) {
        buf b = {0};
        size_t left = budget - fixed, mem_left = (size_t)(o->memory_share * (double)left);
        puts_(&b, head);
        if (n_mem > 0 && mem_left > 0) {
            static const char title[] = "Environments built before, with how the agent did:\n";
            size_t used = count(o, title, sizeof title - 1);
            if (used < mem_left) {
                puts_(&b, title);
                for (int i = 0; i < n_mem && used < mem_left; i++) {
                    char line[256];
                    if (mem[i].kind == 0)
                        snprintf(line, sizeof line,
                                 "- %s, solved %.0f%% without the hint, %.0f%% more with it (good):\n", mem[i].family,
                                 100 * mem[i].pass, 100 * mem[i].regret);
                    else
                        snprintf(line, sizeof line, "- %s, solved %.0f%% (too %s: avoid this):\n", mem[i].family,
                                 100 * mem[i].pass, mem[i].kind < 0 ? "hard" : "easy");
                    size_t c = count(o, line, strlen(line));
                    if (used + c >= mem_left) break;
                    puts_(&b, line);
                    used += c;
                    /* each entry gets an equal share of what remains, so the last is not starved */
                    size_t share = (mem_left - used) / (size_t)(n_mem - i);
                    used += put_lines(&b, o, mem[i].source, mem[i].len, share);
                }
            }
            left = left > used ? left - used : 0;
        }
        if (excerpt && excerpt_len && left > 0) {
            char title[300];
            snprintf(title, sizeof title, "A document to draw on (%s):\n", excerpt_name ? excerpt_name : "corpus");
            size_t c = count(o, title, strlen(title));
            if (c < left) {
                puts_(&b, title);
                put_lines(&b, o, excerpt, excerpt_len, left - c);
            }
        }
        puts_(&b, tail);
        if (!b.p) {
            spade_errf(err, errlen, "designer prompt: out of memory");
            return -1;
        }
        size_t total = count(o, b.p, b.n);
        if (total <= (size_t)o->budget || budget <= fixed + 1) {
            if (total > (size_t)o->budget) { /* nothing left to cut: the instructions alone */
                free(b.p);
                spade_errf(err, errlen, "designer prompt: %zu tokens do not fit a budget of %d", total, o->budget);
                return -1;
            }
            *out = b.p;
            if (out_len) *out_len = b.n;
            return 0;
        }
        free(b.p); /* line-by-line counts underestimated the whole: try a smaller budget */
        size_t over = total - (size_t)o->budget;
        budget = budget > fixed + over + 1 ? budget - over - 1 : fixed + 1;
    }
}

/* Read by the same policy that wrote the source, so it uses the words of the
 * designer's instructions; "without giving the answer" is what the hint_echo
 * gate then checks (an echoed hint that wins refuses the environment). */
static const char HINT_HEAD[] = "An environment for spade, in C with <spade/dsl.h>:\n";
static const char HINT_TAIL[] =
    "Write the HINT a player reads at the start: one to three sentences of strategy that help win,\n"
    "without giving the answer (no secret values, no exact actions to type).\n"
    "Hint:\n";

int spade_hint_prompt_build(const spade_prompt_opts *o, const char *src, size_t len, char **out, size_t *out_len,
                            char *err, size_t errlen) {
    *out = NULL;
    size_t fixed = count(o, HINT_HEAD, sizeof HINT_HEAD - 1) + count(o, HINT_TAIL, sizeof HINT_TAIL - 1);
    if (o->budget <= 0 || (size_t)o->budget <= fixed) {
        spade_errf(err, errlen, "hint prompt: a budget of %d tokens cannot hold the %zu tokens of instructions",
                   o->budget, fixed);
        return -1;
    }
    for (size_t budget = (size_t)o->budget;;) {
        buf b = {0};
        puts_(&b, HINT_HEAD);
        if (src && len) put_lines(&b, o, src, len, budget - fixed);
        puts_(&b, HINT_TAIL);
        if (!b.p) {
            spade_errf(err, errlen, "hint prompt: out of memory");
            return -1;
        }
        size_t total = count(o, b.p, b.n);
        if (total <= (size_t)o->budget) {
            *out = b.p;
            if (out_len) *out_len = b.n;
            return 0;
        }
        free(b.p); /* line-by-line counts underestimated the whole: less source */
        if (budget <= fixed + 1) {
            spade_errf(err, errlen, "hint prompt: %zu tokens do not fit a budget of %d", total, o->budget);
            return -1;
        }
        size_t over = total - (size_t)o->budget;
        budget = budget > fixed + over + 1 ? budget - over - 1 : fixed + 1;
    }
}

int spade_family_for_slot(int n_families, int window, int it, int slot) {
    if (n_families <= 0) return -1;
    if (window <= 0 || window > n_families) window = n_families;
    int windows = (n_families + window - 1) / window;
    int start = (it % windows) * window;
    return (start + slot % window) % n_families;
}

int spade_family_listed(const char *list, const char *family) {
    size_t n = strlen(family);
    for (const char *p = list; p && *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && !strncmp(p, family, n)) return 1;
        p += k;
        if (*p) p++;
    }
    return 0;
}
