/* serve_client.c — a client of the `spade serve` protocol (serve_client.h):
 * the socket, the hello and its token, bounded reply lines, and the checked
 * readers of replies.
 *
 * Every reply is hostile input: a line longer than SPADE_SCLIENT_REPLY_MAX
 * ends the connection (SPADE_SCLIENT_BAD), and each field a reader takes is
 * checked for type, length and range before it is used.
 * What it is not: the episode loop (served_episodes.c).
 */
#include "serve_client.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "errbuf.h"

struct spade_sclient {
    int fd;
    int timeout_ms;
    char addr[256];
    char *buf; /* bytes read and not yet handed out */
    size_t len, cap, start;
};

const char *spade_sclient_address(const spade_sclient *c) { return c->addr; }

void spade_sclient_free(spade_sclient *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    free(c->buf);
    free(c);
}

/* A connected socket to addr, or -1 with err. */
static int dial(const char *addr, int timeout_ms, char *err, size_t errlen) {
    if (!strncmp(addr, "unix:", 5)) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (!addr[5] || strlen(addr + 5) >= sizeof sa.sun_path)
            return spade_errf(err, errlen, "%s: the socket path must be 1..%zu bytes", addr, sizeof sa.sun_path - 1),
                   -1;
        strcpy(sa.sun_path, addr + 5);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
            spade_errf(err, errlen, "%s: %s", addr, strerror(errno));
            if (fd >= 0) close(fd);
            return -1;
        }
        return fd;
    }
    const char *hp = strncmp(addr, "tcp:", 4) ? addr : addr + 4, *colon = strrchr(hp, ':');
    char host[200];
    size_t hl = colon ? (size_t)(colon - hp) : 0;
    if (!colon || !hl || hl >= sizeof host || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
        return spade_errf(err, errlen, "%s: expected HOST:PORT (or tcp:HOST:PORT, unix:PATH)", addr), -1;
    memcpy(host, hp, hl);
    host[hl] = 0;
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = 0;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gr = getaddrinfo(host, colon + 1, &hints, &res);
    if (gr != 0) return spade_errf(err, errlen, "%s: %s", addr, gai_strerror(gr)), -1;
    int fd = -1, why = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            why = errno;
            continue;
        }
        /* connect is bounded like every read: SO_SNDTIMEO bounds it on Linux */
        struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
            why = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) return spade_errf(err, errlen, "%s: %s", addr, strerror(why)), -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

int spade_sclient_send(spade_sclient *c, const char *line, size_t len, char *err, size_t errlen) {
    struct piece {
        const char *p;
        size_t n;
    } parts[2] = {{line, len}, {"\n", 1}};
    for (int k = 0; k < 2; k++) {
        const char *p = parts[k].p;
        size_t n = parts[k].n;
        while (n) {
            ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return spade_errf(err, errlen, "%s: send: %s", c->addr, strerror(errno)), SPADE_SCLIENT_LOST;
            p += w;
            n -= (size_t)w;
        }
    }
    return SPADE_SCLIENT_OK;
}

static int fail_field(char *err, size_t errlen, const char *field, const char *what) {
    spade_errf(err, errlen, "reply: '%s': %s", field, what);
    return SPADE_SCLIENT_BAD;
}

int spade_sclient_parse_reply(const char *line, size_t len, spade_json_doc **doc, char *err, size_t errlen) {
    *doc = NULL;
    char jerr[256];
    spade_json_doc *d = NULL;
    if (spade_json_parse(line, len, &d, jerr, sizeof jerr) < 0)
        return spade_errf(err, errlen, "reply: not JSON: %s", jerr), SPADE_SCLIENT_BAD;
    const spade_json *r = spade_json_root(d), *ok = spade_json_get(r, "ok");
    if (r->type != SPADE_JSON_OBJECT) {
        spade_json_doc_free(d);
        return spade_errf(err, errlen, "reply: not an object"), SPADE_SCLIENT_BAD;
    }
    if (!ok || ok->type != SPADE_JSON_BOOL) {
        spade_json_doc_free(d);
        return fail_field(err, errlen, "ok", "missing or not a boolean");
    }
    if (ok->boolean) {
        *doc = d;
        return SPADE_SCLIENT_OK;
    }
    const spade_json *e = spade_json_get(r, "error"), *code = spade_json_get(e, "code"),
                     *msg = spade_json_get(e, "message");
    int rc = SPADE_SCLIENT_REFUSED;
    if (!code || code->type != SPADE_JSON_STRING || !msg || msg->type != SPADE_JSON_STRING)
        rc = fail_field(err, errlen, "error", "an ok:false reply without error.code and error.message strings");
    else
        spade_errf(err, errlen, "%.64s: %.900s", code->str, msg->str);
    spade_json_doc_free(d);
    return rc;
}

int spade_sclient_recv(spade_sclient *c, spade_json_doc **doc, char *err, size_t errlen) {
    *doc = NULL;
    for (;;) {
        char *nl = c->len > c->start ? memchr(c->buf + c->start, '\n', c->len - c->start) : NULL;
        if (nl) {
            size_t at = c->start, n = (size_t)(nl - (c->buf + at));
            c->start = at + n + 1;
            char why[1200];
            int rc = spade_sclient_parse_reply(c->buf + at, n, doc, why, sizeof why);
            if (rc != SPADE_SCLIENT_OK) spade_errf(err, errlen, "%s: %s", c->addr, why);
            return rc;
        }
        if (c->len - c->start > SPADE_SCLIENT_REPLY_MAX)
            return spade_errf(err, errlen, "%s: a reply line over %u bytes", c->addr, SPADE_SCLIENT_REPLY_MAX),
                   SPADE_SCLIENT_BAD;
        if (c->start) { /* keep only the unread tail */
            memmove(c->buf, c->buf + c->start, c->len - c->start);
            c->len -= c->start;
            c->start = 0;
        }
        if (c->cap - c->len < 65536) {
            size_t ncap = c->cap ? c->cap * 2 : 1 << 20;
            char *p = realloc(c->buf, ncap);
            if (!p) return spade_errf(err, errlen, "%s: out of memory reading a reply", c->addr), SPADE_SCLIENT_BAD;
            c->buf = p;
            c->cap = ncap;
        }
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int pr = poll(&p, 1, c->timeout_ms);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0)
            return spade_errf(err, errlen, "%s: no reply in %d s", c->addr, c->timeout_ms / 1000), SPADE_SCLIENT_LOST;
        ssize_t k = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return spade_errf(err, errlen, "%s: %s", c->addr, strerror(errno)), SPADE_SCLIENT_LOST;
        if (k == 0) return spade_errf(err, errlen, "%s: the server closed the connection", c->addr), SPADE_SCLIENT_LOST;
        c->len += (size_t)k;
    }
}

int spade_sclient_connect(spade_sclient **out, const char *addr, const char *token, double timeout_s, char *err,
                          size_t errlen) {
    *out = NULL;
    spade_sclient *c = calloc(1, sizeof *c);
    if (!c) return spade_errf(err, errlen, "%s: out of memory", addr), -1;
    c->timeout_ms = timeout_s > 0 && timeout_s < 86400 ? (int)(timeout_s * 1000) : 120000;
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    c->fd = dial(addr, c->timeout_ms, err, errlen);
    if (c->fd < 0) {
        spade_sclient_free(c);
        return -1;
    }
    spade_jbuf b = {0};
    spade_jw_obj(&b);
    spade_jw_key(&b, "op");
    spade_jw_cstr(&b, "hello");
    if (token) {
        spade_jw_key(&b, "token");
        spade_jw_cstr(&b, token);
    }
    spade_jw_end_obj(&b);
    spade_json_doc *d = NULL;
    int rc = b.oom ? SPADE_SCLIENT_BAD : spade_sclient_send(c, b.p, b.len, err, errlen);
    spade_jbuf_free(&b);
    if (rc == SPADE_SCLIENT_OK) rc = spade_sclient_recv(c, &d, err, errlen);
    if (rc == SPADE_SCLIENT_OK) {
        long long v;
        const spade_json *p = spade_json_get(spade_json_root(d), "protocol");
        if (!p || spade_json_int(p, 0, 1 << 30, &v) < 0 || v != 1) {
            spade_errf(err, errlen, "%s: hello: 'protocol' is not 1 (this client speaks version 1)", addr);
            rc = SPADE_SCLIENT_BAD;
        }
    }
    spade_json_doc_free(d);
    if (rc != SPADE_SCLIENT_OK) {
        spade_sclient_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

/* ---- readers of replies ----------------------------------------------------------- */
static const spade_json *column(const spade_json *obj, const char *key, int n, spade_json_type t, char *err,
                                size_t errlen) {
    const spade_json *a = spade_json_get(obj, key);
    if (!a || a->type != SPADE_JSON_ARRAY)
        return spade_errf(err, errlen, "reply: '%s': missing or not an array", key), NULL;
    if (a->len != (size_t)n)
        return spade_errf(err, errlen, "reply: '%s' has %zu items, the request %d", key, a->len, n), NULL;
    for (int j = 0; j < n; j++)
        if (a->items[j].type != t)
            return spade_errf(err, errlen, "reply: '%s'[%d] is %s, not %s", key, j,
                              spade_json_type_name(a->items[j].type), spade_json_type_name(t)),
                   NULL;
    return a;
}

static int read_failure(const spade_json *f, spade_failure *out, int j, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const spade_json *o = spade_json_get(f, "outcome"), *m = spade_json_get(f, "message");
    if (!o || o->type != SPADE_JSON_STRING || !m || m->type != SPADE_JSON_STRING)
        return spade_errf(err, errlen, "reply: 'failures'[%d]: outcome and message must be strings", j), -1;
    int k = spade_outcome_from_name(o->str);
    if (k <= SPADE_OUT_OK || k >= SPADE_OUT_COUNT_)
        return spade_errf(err, errlen, "reply: 'failures'[%d].outcome: '%.40s' is not a failure", j, o->str), -1;
    out->outcome = (spade_outcome)k;
    long long v;
    const spade_json *sig = spade_json_get(f, "signal"), *line = spade_json_get(f, "line");
    if (sig && spade_json_int(sig, 0, 1024, &v) == 0) out->signal = (int)v;
    if (line && spade_json_int(line, 0, 1 << 30, &v) == 0) out->line = (int)v;
    snprintf(out->message, sizeof out->message, "%s", m->str);
    return 0;
}

int spade_sclient_parse_batch(const spade_json *obj, int n, spade_sclient_item *items, char *err, size_t errlen) {
    if (!obj || obj->type != SPADE_JSON_OBJECT) return spade_errf(err, errlen, "reply: the batch is not an object"), -1;
    const spade_json *obs = column(obj, "obs", n, SPADE_JSON_STRING, err, errlen);
    const spade_json *rw = obs ? column(obj, "reward", n, SPADE_JSON_NUMBER, err, errlen) : NULL;
    const spade_json *te = rw ? column(obj, "terminated", n, SPADE_JSON_BOOL, err, errlen) : NULL;
    const spade_json *tr = te ? column(obj, "truncated", n, SPADE_JSON_BOOL, err, errlen) : NULL;
    const spade_json *su = tr ? column(obj, "success", n, SPADE_JSON_BOOL, err, errlen) : NULL;
    const spade_json *rt = su ? column(obj, "return", n, SPADE_JSON_NUMBER, err, errlen) : NULL;
    if (!rt) return -1;
    const spade_json *fl = spade_json_get(obj, "failures");
    if (fl && fl->type != SPADE_JSON_NULL) {
        if (fl->type != SPADE_JSON_ARRAY || fl->len != (size_t)n)
            return spade_errf(err, errlen, "reply: 'failures' must be an array of %d items", n), -1;
    } else {
        fl = NULL;
    }
    for (int j = 0; j < n; j++) {
        spade_sclient_item *it = &items[j];
        memset(it, 0, sizeof *it);
        if (obs->items[j].len > SPADE_OBS_MAX * 3u) /* U+FFFD for a bad byte triples it at most */
            return spade_errf(err, errlen, "reply: 'obs'[%d] is %zu bytes", j, obs->items[j].len), -1;
        it->obs = obs->items[j].str;
        it->obs_len = obs->items[j].len;
        it->reward = rw->items[j].number;
        it->ret = rt->items[j].number;
        it->terminated = te->items[j].boolean;
        it->truncated = tr->items[j].boolean;
        it->success = su->items[j].boolean;
        if (fl && fl->items[j].type != SPADE_JSON_NULL) {
            if (fl->items[j].type != SPADE_JSON_OBJECT)
                return spade_errf(err, errlen, "reply: 'failures'[%d] is neither null nor an object", j), -1;
            if (read_failure(&fl->items[j], &it->failure, j, err, errlen) < 0) return -1;
            it->failed = 1;
        }
    }
    return 0;
}

static int copy_str(const spade_json *obj, const char *key, char *out, size_t cap, char *err, size_t errlen) {
    const spade_json *v = spade_json_get(obj, key);
    if (!v || v->type != SPADE_JSON_STRING)
        return spade_errf(err, errlen, "reply: info.%s: missing or not a string", key), -1;
    if (v->len >= cap || memchr(v->str, 0, v->len))
        return spade_errf(err, errlen, "reply: info.%s: longer than %zu bytes or holds a NUL", key, cap - 1), -1;
    memcpy(out, v->str, v->len + 1);
    return 0;
}

int spade_sclient_parse_info(const spade_json *obj, spade_env_info *info, char *err, size_t errlen) {
    memset(info, 0, sizeof *info);
    if (!obj || obj->type != SPADE_JSON_OBJECT) return spade_errf(err, errlen, "reply: 'info' is not an object"), -1;
    if (copy_str(obj, "name", info->name, sizeof info->name, err, errlen) < 0 ||
        copy_str(obj, "description", info->description, sizeof info->description, err, errlen) < 0 ||
        copy_str(obj, "family", info->family, sizeof info->family, err, errlen) < 0)
        return -1;
    long long v;
    const spade_json *ms = spade_json_get(obj, "max_steps"), *su = spade_json_get(obj, "success"),
                     *hs = spade_json_get(obj, "has_solve"), *abi = spade_json_get(obj, "abi");
    if (!ms || spade_json_int(ms, 1, SPADE_MAX_STEPS_LIMIT, &v) < 0)
        return spade_errf(err, errlen, "reply: info.max_steps: not a whole number in [1, %d]", SPADE_MAX_STEPS_LIMIT),
               -1;
    info->max_steps = (int)v;
    if (!su || su->type != SPADE_JSON_NUMBER) return spade_errf(err, errlen, "reply: info.success: not a number"), -1;
    info->success = su->number;
    if (!hs || hs->type != SPADE_JSON_BOOL) return spade_errf(err, errlen, "reply: info.has_solve: not a boolean"), -1;
    info->has_solve = hs->boolean;
    if (abi && spade_json_int(abi, 0, 1 << 20, &v) == 0) info->abi = (int)v;
    const spade_json *ps = spade_json_get(obj, "params"), *ts = spade_json_get(obj, "tools");
    if (ps && ps->type == SPADE_JSON_ARRAY)
        for (size_t i = 0; i < ps->len && info->n_params < SPADE_INFO_MAX_PARAMS; i++) {
            spade_param_info *p = &info->params[info->n_params];
            const spade_json *x = &ps->items[i];
            if (copy_str(x, "name", p->name, sizeof p->name, err, errlen) < 0) return -1;
            const spade_json *t = spade_json_get(x, "type"), *d = spade_json_get(x, "default"),
                             *lo = spade_json_get(x, "min"), *hi = spade_json_get(x, "max");
            p->type = t && t->type == SPADE_JSON_STRING && !strcmp(t->str, "int") ? SPADE_PARAM_INT : SPADE_PARAM_REAL;
            p->def = d && d->type == SPADE_JSON_NUMBER ? d->number : 0;
            p->min = lo && lo->type == SPADE_JSON_NUMBER ? lo->number : 0;
            p->max = hi && hi->type == SPADE_JSON_NUMBER ? hi->number : 0;
            info->n_params++;
        }
    if (ts && ts->type == SPADE_JSON_ARRAY)
        for (size_t i = 0; i < ts->len && info->n_tools < SPADE_INFO_MAX_TOOLS; i++) {
            spade_tool_info *t = &info->tools[info->n_tools];
            const spade_json *x = &ts->items[i];
            if (copy_str(x, "name", t->name, sizeof t->name, err, errlen) < 0 ||
                copy_str(x, "signature", t->signature, sizeof t->signature, err, errlen) < 0 ||
                copy_str(x, "description", t->description, sizeof t->description, err, errlen) < 0)
                return -1;
            info->n_tools++;
        }
    return 0;
}
