/* runtime.c — the native implementation of the helpers <spade/dsl.h> declares
 * (say, act, reward, finish, steps, rand_*, shuffle, answer, parse_*, str_ieq)
 * and the symbol allowlist handed to the JIT.
 *
 * What it is: code the environment calls, acting on the spade_rt context the
 * host set up (runtime.h). Every helper is safe for any text: empty, 1 MB,
 * binary, invalid UTF-8; none reads past the terminating NUL or writes past a
 * buffer, and none is undefined for any long/double argument.
 * What it is not: the host (core/host.c decides what the output means) nor a
 * sandbox: a pointer the environment passes is trusted to point at what the
 * prototype says (a bad one crashes the worker, which core/sandbox contains).
 *
 * Choices worth knowing (also in docs, for environment authors):
 *  - say() output past SPADE_OBS_MAX is dropped and flagged; the host fails the
 *    call (output_too_large). A format containing %n prints nothing.
 *  - reward() flags NaN, infinities and values beyond +-SPADE_REWARD_MAX
 *    (bad_reward) instead of adding them; the host fails such a step.
 *  - finish() counts once per call: later finish() calls are ignored.
 *  - Numbers: an optional sign (-, +, or U+2212) counts when it is not glued to
 *    a preceding letter or digit ("x=-5" is -5, "3-5" is 3 and 5). Digits may
 *    be grouped by thousands ("1,234,567"; a group is exactly three digits). A
 *    fraction (".5") or an exponent ("e-3") makes the number a real.
 *    parse_int answers the LAST number of the answer when it is an integer
 *    (a real with an all-zero fraction, "42.0", counts), and SPADE_NO_INT when
 *    the last number is a real, overflows a long, or there is none — so "12.5"
 *    never reads as 5 or 12. parse_ints collects the integers and skips reals
 *    and overflows.
 *  - parse_word answers 0 (and an empty out) when the last word does not fit
 *    in cap - 1 bytes: a truncated word could spuriously match a shorter one.
 *  - Character classes are ASCII and independent of the locale, so an
 *    environment is deterministic wherever it runs.
 */
#include "runtime.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Checks our definitions against the declarations environments see. Its short
 * names (say, reward, steps, S, ...) are for environments; here they would
 * rename our own fields. */
#include <spade/dsl.h>
#undef say
#undef act
#undef reward
#undef finish
#undef win
#undef lose
#undef steps
#undef rand_range
#undef rand_real
#undef chance
#undef shuffle
#undef answer
#undef parse_int
#undef parse_real
#undef parse_word
#undef parse_ints
#undef str_ieq
#undef S

spade_rt *spade_rt_current = NULL;

/* ---- output --------------------------------------------------------------- */

void spade_rt_begin(spade_rt *rt, char *out, size_t out_cap, uint64_t *rng, long steps, int sink) {
    rt->out = out;
    rt->out_len = 0;
    rt->out_cap = out_cap;
    rt->overflow = 0;
    rt->sink = sink;
    rt->reward = 0.0;
    rt->bad_reward = 0;
    rt->terminated = 0;
    rt->success = 0;
    rt->steps = steps;
    rt->rng = rng;
    if (out) out[0] = '\0';
}

int spade_rt_append(spade_rt *rt, const char *text, size_t n) {
    if (!rt || !rt->out) return -1;
    if (n > rt->out_cap - rt->out_len) {
        rt->overflow = 1;
        return -1;
    }
    if (n) memcpy(rt->out + rt->out_len, text, n);
    rt->out_len += n;
    rt->out[rt->out_len] = '\0';
    return 0;
}

/* Characters that may stand between '%' and the conversion letter (flags,
 * width, precision, argument index, length modifiers). */
static int is_spec_char(unsigned char c) {
    switch (c) {
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
    case '.':
    case '+':
    case '-':
    case ' ':
    case '#':
    case '\'':
    case '*':
    case '$':
    case 'h':
    case 'l':
    case 'L':
    case 'q':
    case 'j':
    case 'z':
    case 't':
    case 'I': return 1;
    default: return 0;
    }
}

/* True when fmt has a %n conversion (which writes through a pointer argument). */
static int format_writes_memory(const char *fmt) {
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') continue;
        p++;
        if (*p == '%') continue;
        while (*p && is_spec_char((unsigned char)*p)) p++;
        if (*p == 'n') return 1;
        if (!*p) break;
    }
    return 0;
}

/* Decimal digits of v, written backwards ending at end; returns the first. */
static char *udec(char *end, unsigned long long v) {
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

/* Appends len bytes of src at dst + *n when they fit in avail; -1 when not. */
static int copy_out(char *dst, size_t avail, size_t *n, const char *src, size_t len) {
    if (len > avail - *n) return -1;
    char *d = dst + *n;
    if (len <= 16)
        for (size_t i = 0; i < len; i++) d[i] = src[i];
    else
        memcpy(d, src, len);
    *n += len;
    return 0;
}

/* The formats environments use most, without vsnprintf (which costs several
 * hundred instructions a call): literal text and %d %i %u %s %c %%, with an
 * optional l or ll (and z for %u), and %s with a precision (.N or .*). Writes
 * at most avail bytes at dst and returns how many; -1 when fmt needs vsnprintf:
 * any other conversion, flag or width (and so %n, which the caller refuses), a
 * NULL string, or output that does not fit (vsnprintf's path owns what
 * overflowing means). Byte for byte what vsnprintf writes for the same format. */
static long fast_format(char *dst, size_t avail, const char *fmt, va_list ap) {
    size_t n = 0;
    const char *p = fmt;
    for (;;) {
        /* Literal text: most runs are short, where a byte loop beats the
         * calls to strchrnul and memcpy; a long run takes them. */
        const char *pc = p;
        while (*pc && *pc != '%' && pc - p < 16) pc++;
        if (*pc && *pc != '%') pc = strchrnul(pc, '%');
        if (copy_out(dst, avail, &n, p, (size_t)(pc - p)) < 0) return -1;
        if (!*pc) return (long)n;
        p = pc + 1;
        long prec = -1; /* %s only; -1: none */
        if (*p == '.') {
            p++;
            if (*p == '*') {
                int pr = va_arg(ap, int);
                prec = pr < 0 ? -1 : pr; /* a negative precision is taken as omitted */
                p++;
            } else {
                prec = 0;
                for (; *p >= '0' && *p <= '9'; p++) {
                    if (prec > 100000000) return -1;
                    prec = prec * 10 + (*p - '0');
                }
            }
            if (*p != 's') return -1;
        }
        int len_mod = 0; /* 0 int, 1 long, 2 long long, 3 size_t */
        if (*p == 'l') {
            len_mod = 1;
            if (*++p == 'l') {
                len_mod = 2;
                p++;
            }
        } else if (*p == 'z') {
            len_mod = 3;
            p++;
        }
        char tmp[24];
        const char *s;
        size_t sl;
        switch (*p) {
        case 'd':
        case 'i': {
            if (len_mod == 3) return -1;
            long long v = len_mod == 0 ? va_arg(ap, int) : len_mod == 1 ? va_arg(ap, long) : va_arg(ap, long long);
            unsigned long long mag = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
            char *b = udec(tmp + sizeof tmp, mag);
            if (v < 0) *--b = '-';
            s = b;
            sl = (size_t)(tmp + sizeof tmp - b);
            break;
        }
        case 'u': {
            unsigned long long v = len_mod == 0   ? va_arg(ap, unsigned)
                                   : len_mod == 1 ? va_arg(ap, unsigned long)
                                   : len_mod == 2 ? va_arg(ap, unsigned long long)
                                                  : va_arg(ap, size_t);
            s = udec(tmp + sizeof tmp, v);
            sl = (size_t)(tmp + sizeof tmp - s);
            break;
        }
        case 's':
            if (len_mod) return -1; /* %ls: wide */
            s = va_arg(ap, const char *);
            if (!s) return -1; /* glibc prints "(null)", or nothing under a small precision */
            sl = prec < 0 ? strlen(s) : strnlen(s, (size_t)prec);
            break;
        case 'c':
            if (len_mod) return -1; /* %lc: wide */
            tmp[0] = (char)(unsigned char)va_arg(ap, int);
            s = tmp;
            sl = 1;
            break;
        case '%':
            if (len_mod) return -1;
            s = "%";
            sl = 1;
            break;
        default: return -1;
        }
        p++;
        if (copy_out(dst, avail, &n, s, sl) < 0) return -1;
    }
}

static void rt_vprint(int sink, const char *fmt, va_list ap) {
    spade_rt *rt = spade_rt_current;
    if (!rt || !rt->out || !fmt || rt->sink != sink) return;
    size_t avail = rt->out_cap - rt->out_len;
    va_list fast;
    va_copy(fast, ap);
    long f = fast_format(rt->out + rt->out_len, avail, fmt, fast);
    va_end(fast);
    if (f >= 0) {
        rt->out_len += (size_t)f;
        rt->out[rt->out_len] = '\0';
        return;
    }
    rt->out[rt->out_len] = '\0'; /* the fast path may have written past it before it gave up */
    if (format_writes_memory(fmt)) return;
    int n = vsnprintf(rt->out + rt->out_len, avail + 1, fmt, ap);
    if (n < 0) {
        rt->out[rt->out_len] = '\0';
        return;
    }
    if ((size_t)n > avail) {
        rt->overflow = 1;
        rt->out[rt->out_len] = '\0';
        return;
    }
    rt->out_len += (size_t)n;
}

void spade_say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rt_vprint(SPADE_RT_SAY, fmt, ap);
    va_end(ap);
}

void spade_act(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rt_vprint(SPADE_RT_ACT, fmt, ap);
    va_end(ap);
}

void spade_reward(double r) {
    spade_rt *rt = spade_rt_current;
    if (!rt) return;
    /* Refused, not ignored: a NaN reward is a bug the designer must see
     * (the host fails the step, core/host.h SPADE_REWARD_MAX). */
    if (isfinite(r) && fabs(r) <= SPADE_REWARD_MAX)
        rt->reward += r;
    else
        rt->bad_reward = 1;
}

void spade_finish(int success) {
    spade_rt *rt = spade_rt_current;
    if (!rt || rt->terminated) return;
    rt->terminated = 1;
    rt->success = success != 0;
    if (success) rt->reward += 1.0;
}

long spade_steps(void) { return spade_rt_current ? spade_rt_current->steps : 0; }

/* ---- randomness ----------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void spade_rng_seed(uint64_t state[4], uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) state[i] = splitmix64(&x);
    if (!(state[0] | state[1] | state[2] | state[3])) state[0] = 1; /* the one state xoshiro cannot leave */
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t spade_rng_next(uint64_t s[4]) {
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static uint64_t *current_rng(void) {
    static uint64_t fallback[4];
    static int fallback_seeded;
    if (spade_rt_current && spade_rt_current->rng) return spade_rt_current->rng;
    if (!fallback_seeded) {
        spade_rng_seed(fallback, 0);
        fallback_seeded = 1;
    }
    return fallback;
}

/* Two's complement u64 -> long without implementation-defined conversions. */
static long long_from_u64(uint64_t v) {
    if (v <= (uint64_t)LONG_MAX) return (long)v;
    return -(long)(~v) - 1;
}

static uint64_t u64_from_long(long v) { return v >= 0 ? (uint64_t)v : ~(uint64_t)(-(v + 1)); }

long spade_rand_range(long lo, long hi) {
    if (lo > hi) {
        long t = lo;
        lo = hi;
        hi = t;
    }
    uint64_t *s = current_rng();
    uint64_t span = u64_from_long(hi) - u64_from_long(lo); /* hi - lo, exact in u64 */
    if (span == UINT64_MAX) return long_from_u64(spade_rng_next(s));
    uint64_t n = span + 1;
    /* Reject the low 2^64 mod n draws so every residue is equally likely. */
    uint64_t threshold = (0 - n) % n;
    uint64_t x;
    do x = spade_rng_next(s);
    while (x < threshold);
    return long_from_u64(u64_from_long(lo) + x % n);
}

double spade_rand_real(void) { return (double)(spade_rng_next(current_rng()) >> 11) * 0x1.0p-53; }

int spade_chance(double p) {
    double u = spade_rand_real();
    return u < p; /* NaN p: never */
}

void spade_shuffle(void *base, long n, long size) {
    if (!base || n < 2 || size <= 0) return;
    unsigned char *b = base;
    size_t sz = (size_t)size;
    for (long i = n - 1; i > 0; i--) {
        long j = spade_rand_range(0, i);
        if (j == i) continue;
        unsigned char *x = b + (size_t)i * sz, *y = b + (size_t)j * sz;
        for (size_t k = 0; k < sz; k++) {
            unsigned char t = x[k];
            x[k] = y[k];
            y[k] = t;
        }
    }
}

/* ---- finding the answer --------------------------------------------------- */

static int is_blank(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_alpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_alnum(unsigned char c) { return is_digit(c) || is_alpha(c); }
static unsigned char lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c; }

static void trim(const char *t, size_t *start, size_t *len) {
    size_t a = *start, b = *start + *len;
    while (a < b && is_blank((unsigned char)t[a])) a++;
    while (b > a && is_blank((unsigned char)t[b - 1])) b--;
    *start = a;
    *len = b - a;
}

/* Case-insensitive: does t[i..) start with the lowercase word w (len wl)? */
static int has_word_at(const char *t, size_t len, size_t i, const char *w, size_t wl) {
    if (i > len || len - i < wl) return 0;
    for (size_t k = 0; k < wl; k++)
        if (lower((unsigned char)t[i + k]) != (unsigned char)w[k]) return 0;
    return 1;
}

/* The last "\boxed{" whose brace is closed within the text. If a brace at p is
 * never closed, no earlier brace can close after p (it would have to close p
 * first), so each earlier candidate only scans up to the previous one: linear. */
static int find_boxed(const char *t, size_t len, size_t *start, size_t *span) {
    static const char tag[] = "\\boxed{";
    const size_t tl = sizeof tag - 1;
    if (len < tl) return 0;
    size_t limit = len;
    for (size_t i = len - tl + 1; i-- > 0;) {
        if (memcmp(t + i, tag, tl) != 0) continue;
        long depth = 1;
        size_t q = i + tl;
        for (; q < limit; q++) {
            if (t[q] == '{')
                depth++;
            else if (t[q] == '}' && --depth == 0)
                break;
        }
        if (q < limit && depth == 0) {
            *start = i + tl;
            *span = q - (i + tl);
            return 1;
        }
        limit = i;
    }
    return 0;
}

/* The last <answer> that a </answer> follows, up to the first </answer> after it. */
static int find_answer_tag(const char *t, size_t len, size_t *start, size_t *span) {
    static const char open[] = "<answer>", close[] = "</answer>";
    const size_t ol = sizeof open - 1, cl = sizeof close - 1;
    if (len < ol + cl) return 0;
    size_t c = len - cl + 1, o;
    while (c-- > 0)
        if (has_word_at(t, len, c, close, cl)) break;
    if (c == (size_t)-1 || c < ol) return 0;
    for (o = c - ol + 1; o-- > 0;)
        if (has_word_at(t, len, o, open, ol)) break;
    if (o == (size_t)-1) return 0;
    size_t first_close = o + ol;
    while (!has_word_at(t, len, first_close, close, cl)) first_close++; /* stops at c at the latest */
    *start = o + ol;
    *span = first_close - (o + ol);
    return 1;
}

void spade_answer_span(const char *text, size_t len, size_t *start, size_t *span_len) {
    size_t s = 0, n = len;
    if (!text) {
        *start = 0;
        *span_len = 0;
        return;
    }
    if (!find_boxed(text, len, &s, &n) && !find_answer_tag(text, len, &s, &n)) {
        s = 0;
        n = len;
    }
    trim(text, &s, &n);
    *start = s;
    *span_len = n;
}

static char *answer_buf;
static size_t answer_cap;

const char *spade_answer(const char *text) {
    static const char empty[] = "";
    if (!text) return empty;
    size_t s, n;
    spade_answer_span(text, strlen(text), &s, &n);
    /* text may be our own buffer (answer(answer(x))): the span fits where it is. */
    uintptr_t tp = (uintptr_t)text, bp = (uintptr_t)answer_buf;
    int aliased = answer_buf && tp >= bp && tp < bp + answer_cap;
    if (!aliased && n + 1 > answer_cap) {
        size_t cap = n + 1 < 256 ? 256 : n + 1;
        char *nb = realloc(answer_buf, cap);
        if (!nb) return empty;
        answer_buf = nb;
        answer_cap = cap;
    }
    memmove(answer_buf, text + s, n);
    answer_buf[n] = '\0';
    return answer_buf;
}

/* ---- numbers -------------------------------------------------------------- */

typedef struct number {
    size_t start, end; /* bytes of the token in the text, sign included */
    int neg;
    int is_int; /* no exponent, no nonzero fraction digit, fits a long */
    long ival;
} number;

/* Digits of t[i..end), optionally grouped by thousands when the first run has
 * 1-3 digits; returns the index after them and accumulates into *acc (capped:
 * *over set when it exceeds 2^63). */
static size_t scan_int_digits(const char *t, size_t i, size_t end, uint64_t *acc, int *over) {
    size_t run0 = i;
    while (i < end && is_digit((unsigned char)t[i])) {
        unsigned d = (unsigned)(t[i] - '0');
        if (*acc > (UINT64_MAX - d) / 10)
            *over = 1;
        else
            *acc = *acc * 10 + d;
        i++;
    }
    if (i - run0 == 0 || i - run0 > 3) return i;
    while (i + 3 < end && t[i] == ',' && is_digit((unsigned char)t[i + 1]) && is_digit((unsigned char)t[i + 2]) &&
           is_digit((unsigned char)t[i + 3]) && (i + 4 >= end || !is_digit((unsigned char)t[i + 4]))) {
        for (size_t k = 1; k <= 3; k++) {
            unsigned d = (unsigned)(t[i + k] - '0');
            if (*acc > (UINT64_MAX - d) / 10)
                *over = 1;
            else
                *acc = *acc * 10 + d;
        }
        i += 4;
    }
    return i;
}

/* The next number token in t[*pos..end); 0 when there is none. */
static int next_number(const char *t, size_t end, size_t *pos, number *out) {
    size_t i = *pos;
    while (i < end) {
        unsigned char c = (unsigned char)t[i];
        int starts = is_digit(c) || (c == '.' && i + 1 < end && is_digit((unsigned char)t[i + 1]) &&
                                     (i == 0 || !is_digit((unsigned char)t[i - 1])));
        if (!starts) {
            i++;
            continue;
        }
        number n = {.start = i};
        /* A sign right before the number, not glued to a preceding word. */
        size_t sign_at = i, sign_len = 0;
        if (i >= 1 && (t[i - 1] == '-' || t[i - 1] == '+')) {
            sign_at = i - 1;
            sign_len = 1;
        } else if (i >= 3 && (unsigned char)t[i - 3] == 0xE2 && (unsigned char)t[i - 2] == 0x88 &&
                   (unsigned char)t[i - 1] == 0x92) {
            sign_at = i - 3;
            sign_len = 3;
        }
        if (sign_len && (sign_at == 0 || !(is_alnum((unsigned char)t[sign_at - 1]) || t[sign_at - 1] == '_' ||
                                           t[sign_at - 1] == '.'))) {
            n.start = sign_at;
            n.neg = t[sign_at] != '+';
        }
        uint64_t acc = 0;
        int over = 0, frac_nonzero = 0, has_exp = 0;
        i = scan_int_digits(t, i, end, &acc, &over);
        if (i + 1 < end && t[i] == '.' && is_digit((unsigned char)t[i + 1])) {
            i++;
            while (i < end && is_digit((unsigned char)t[i])) {
                if (t[i] != '0') frac_nonzero = 1;
                i++;
            }
        }
        if (i < end && (t[i] == 'e' || t[i] == 'E')) {
            size_t k = i + 1;
            if (k < end && (t[k] == '+' || t[k] == '-')) k++;
            if (k < end && is_digit((unsigned char)t[k])) {
                has_exp = 1;
                while (k < end && is_digit((unsigned char)t[k])) k++;
                i = k;
            }
        }
        n.end = i;
        n.is_int =
            !over && !frac_nonzero && !has_exp && (n.neg ? acc <= (uint64_t)LONG_MAX + 1 : acc <= (uint64_t)LONG_MAX);
        if (n.is_int) n.ival = n.neg ? long_from_u64(0 - acc) : (long)acc;
        *out = n;
        *pos = i;
        return 1;
    }
    *pos = i;
    return 0;
}

/* The last number of text's answer span: 1 and *last (offsets relative to *t),
 * or 0 when the answer holds no number. */
static int last_number(const char *text, const char **t, number *last) {
    size_t len = strlen(text), s, n;
    spade_answer_span(text, len, &s, &n);
    *t = text + s;
    size_t pos = 0;
    number num;
    int found = 0;
    while (next_number(*t, n, &pos, &num)) {
        *last = num;
        found = 1;
    }
    return found;
}

long spade_parse_int(const char *text) {
    const char *t;
    number last;
    if (!text || !last_number(text, &t, &last)) return SPADE_NO_INT;
    return last.is_int ? last.ival : SPADE_NO_INT;
}

int spade_parse_ints(const char *text, long *out, int cap) {
    if (!text || !out || cap <= 0) return 0;
    size_t len = strlen(text), s, n;
    spade_answer_span(text, len, &s, &n);
    const char *t = text + s;
    size_t pos = 0;
    number num;
    int count = 0;
    while (count < cap && next_number(t, n, &pos, &num))
        if (num.is_int) out[count++] = num.ival;
    return count;
}

double spade_parse_real(const char *text) {
    const char *t;
    number last;
    if (!text || !last_number(text, &t, &last)) return NAN;
    /* Rebuild the token in the form strtod reads: ASCII sign, no separators. */
    char small[512], *buf = small;
    size_t need = last.end - last.start + 2;
    if (need > sizeof small && !(buf = malloc(need))) return NAN;
    size_t k = 0, i = last.start;
    if (last.neg) buf[k++] = '-';
    while (i < last.end && !is_digit((unsigned char)t[i]) && t[i] != '.') i++; /* the sign, ASCII or U+2212 */
    for (; i < last.end; i++)
        if (t[i] != ',') buf[k++] = t[i];
    buf[k] = '\0';
    double v = strtod(buf, NULL);
    if (buf != small) free(buf);
    return v;
}

int spade_parse_word(const char *text, char *out, long cap) {
    if (!out || cap <= 0) return 0;
    out[0] = '\0';
    if (!text) return 0;
    size_t len = strlen(text), s, n;
    spade_answer_span(text, len, &s, &n);
    const char *t = text + s;
    size_t e = n;
    while (e > 0) {
        while (e > 0 && !(is_alnum((unsigned char)t[e - 1]) || t[e - 1] == '_' || t[e - 1] == '-')) e--;
        size_t b = e;
        int has_alnum = 0;
        while (b > 0 && (is_alnum((unsigned char)t[b - 1]) || t[b - 1] == '_' || t[b - 1] == '-')) {
            has_alnum |= is_alnum((unsigned char)t[b - 1]);
            b--;
        }
        if (has_alnum) {
            size_t wl = e - b;
            if (wl > (size_t)(cap - 1) || wl > INT_MAX) return 0;
            memcpy(out, t + b, wl);
            out[wl] = '\0';
            return (int)wl;
        }
        e = b;
    }
    return 0;
}

int spade_str_ieq(const char *a, const char *b) {
    if (!a || !b) return 0;
    size_t as = 0, an = strlen(a), bs = 0, bn = strlen(b);
    trim(a, &as, &an);
    trim(b, &bs, &bn);
    if (an != bn) return 0;
    for (size_t i = 0; i < an; i++)
        if (lower((unsigned char)a[as + i]) != lower((unsigned char)b[bs + i])) return 0;
    return 1;
}

/* ---- the allowlist -------------------------------------------------------- */

/* ASCII, locale-free, and defined for every int (glibc's index a table). */
static int safe_isdigit(int c) { return c >= '0' && c <= '9'; }
static int safe_isalpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int safe_isalnum(int c) { return safe_isdigit(c) || safe_isalpha(c); }
static int safe_isspace(int c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static int safe_isupper(int c) { return c >= 'A' && c <= 'Z'; }
static int safe_islower(int c) { return c >= 'a' && c <= 'z'; }
static int safe_toupper(int c) { return safe_islower(c) ? c - 'a' + 'A' : c; }
static int safe_tolower(int c) { return safe_isupper(c) ? c - 'A' + 'a' : c; }

#define SYM(n)                                                                                                         \
    { #n, (void *)n }
#define SYM_AS(n, f)                                                                                                   \
    { #n, (void *)f }

const spade_dsl_symbol spade_dsl_symbols[] = {
    /* the helpers */
    SYM(spade_say),
    SYM(spade_act),
    SYM(spade_reward),
    SYM(spade_finish),
    SYM(spade_steps),
    SYM(spade_rand_range),
    SYM(spade_rand_real),
    SYM(spade_chance),
    SYM(spade_shuffle),
    SYM(spade_answer),
    SYM(spade_parse_int),
    SYM(spade_parse_real),
    SYM(spade_parse_word),
    SYM(spade_parse_ints),
    SYM(spade_str_ieq),
    /* string and memory */
    SYM(strlen),
    SYM(strcmp),
    SYM(strncmp),
    SYM(strchr),
    SYM(strrchr),
    SYM(strstr),
    SYM(memcmp),
    SYM(memcpy),
    SYM(memmove),
    SYM(memset),
    SYM(snprintf),
    /* numbers */
    SYM(abs),
    SYM(labs),
    SYM(atoi),
    SYM(strtol),
    SYM(strtod),
    /* characters */
    SYM_AS(isdigit, safe_isdigit),
    SYM_AS(isalpha, safe_isalpha),
    SYM_AS(isalnum, safe_isalnum),
    SYM_AS(isspace, safe_isspace),
    SYM_AS(isupper, safe_isupper),
    SYM_AS(islower, safe_islower),
    SYM_AS(toupper, safe_toupper),
    SYM_AS(tolower, safe_tolower),
    /* math */
    SYM(sqrt),
    SYM(fabs),
    SYM(floor),
    SYM(ceil),
    SYM(pow),
    SYM(exp),
    SYM(log),
    SYM(sin),
    SYM(cos),
};

const size_t spade_dsl_nsymbols = sizeof spade_dsl_symbols / sizeof spade_dsl_symbols[0];

void *spade_dsl_symbol_lookup(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < spade_dsl_nsymbols; i++)
        if (strcmp(spade_dsl_symbols[i].name, name) == 0) return spade_dsl_symbols[i].addr;
    return NULL;
}
