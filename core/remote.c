/* remote.c — the OpenAI-compatible chat client (remote.h): libcurl multi for
 * the requests in flight, core/json.c for both directions.
 *
 * What it is not: a server of its own, or a retry loop without bounds: every
 * request has at most 1 + retries tries, each bounded by timeout_s, with
 * waits of at most SPADE_REMOTE_BACKOFF_MAX_S between them.
 */
#include "remote.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errbuf.h"
#include "json.h"

struct spade_remote {
    spade_remote_opts o;
    char *base; /* url without a trailing / or /v1 */
    char *chat_url; /* base + /v1/chat/completions */
    char *models_url;
    char *model;
    char *auth; /* "Authorization: Bearer KEY" or NULL */
    CURLM *multi;
    long requests, retries;
    double outage_s;
};

void spade_remote_opts_default(spade_remote_opts *o) {
    *o = (spade_remote_opts){
        .concurrency = 8,
        .timeout_s = 120,
        .retries = 6,
        .backoff_s = 0.25,
        .max_tokens = 64,
        .temperature = 1.0f,
        .logprobs = 1,
    };
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void note(const spade_remote *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const spade_remote *r, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (r->o.on_note)
        r->o.on_note(r->o.ctx, line);
    else
        fprintf(stderr, "%s\n", line);
}

int spade_remote_parse_spec(const char *s, char *url, size_t url_cap, char *model, size_t model_cap, char *err,
                            size_t errlen) {
    if (strncmp(s, "remote:", 7)) return 0;
    const char *u = s + 7, *hash = strrchr(u, '#');
    if (!hash || hash == u || !hash[1]) {
        spade_errf(err, errlen, "'%s': a remote policy is remote:URL#MODEL (e.g. remote:http://127.0.0.1:8080#smollm2)",
                   s);
        return -1;
    }
    if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)) {
        spade_errf(err, errlen, "'%s': the URL must start with http:// or https://", s);
        return -1;
    }
    size_t ul = (size_t)(hash - u), ml = strlen(hash + 1);
    if (ul >= url_cap || ml >= model_cap) {
        spade_errf(err, errlen, "'%s': URL or model name too long", s);
        return -1;
    }
    memcpy(url, u, ul);
    url[ul] = 0;
    memcpy(model, hash + 1, ml + 1);
    return 1;
}

/* ---- one transfer --------------------------------------------------------- */
typedef struct xfer {
    CURL *h;
    struct curl_slist *hdrs;
    char *body; /* the request body (kept for retries) */
    char *resp;
    size_t len, cap;
    int over; /* the response passed SPADE_REMOTE_REPLY_MAX */
    int idx;
    int tries;
    double started, wait_until;
    int state; /* 0 queued, 1 in flight, 2 waiting to retry, 3 done */
} xfer;

static size_t on_data(char *p, size_t sz, size_t nm, void *ud) {
    xfer *x = ud;
    size_t n = sz * nm;
    if (x->len + n > SPADE_REMOTE_REPLY_MAX) {
        x->over = 1;
        return 0; /* curl aborts the transfer: CURLE_WRITE_ERROR */
    }
    if (x->len + n + 1 > x->cap) {
        size_t c = x->cap ? x->cap : 4096;
        while (c < x->len + n + 1) c *= 2;
        char *q = realloc(x->resp, c);
        if (!q) return 0;
        x->resp = q;
        x->cap = c;
    }
    memcpy(x->resp + x->len, p, n);
    x->len += n;
    x->resp[x->len] = 0;
    return n;
}

static int xfer_setup(spade_remote *r, xfer *x, const char *url, const char *body) {
    x->len = 0;
    x->over = 0;
    if (!x->h)
        x->h = curl_easy_init();
    else
        curl_easy_reset(x->h);
    if (!x->h) return -1;
    if (!x->hdrs) {
        x->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
        /* no "Expect: 100-continue": libcurl adds it to bodies over 1 KiB and then waits up to 1 s for a
         * "100 Continue" that uvicorn-based servers (llama-cpp-python, vLLM, SGLang) do not send */
        if (x->hdrs) x->hdrs = curl_slist_append(x->hdrs, "Expect:");
        if (r->auth && x->hdrs) x->hdrs = curl_slist_append(x->hdrs, r->auth);
        if (!x->hdrs) return -1;
    }
    curl_easy_setopt(x->h, CURLOPT_URL, url);
    curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
    curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, (long)(r->o.timeout_s * 1000));
    curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, (long)(r->o.timeout_s * 1000));
    curl_easy_setopt(x->h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(x->h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
    if (body) {
        curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(x->h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    return 0;
}

static void xfer_clean(xfer *x) {
    if (x->h) curl_easy_cleanup(x->h);
    curl_slist_free_all(x->hdrs);
    free(x->body);
    free(x->resp);
}

/* The server's own error message, when the body is an OpenAI error object. */
static void server_message(const char *body, size_t len, char *out, size_t cap) {
    out[0] = 0;
    spade_json_doc *d = NULL;
    char e[64];
    if (spade_json_parse(body, len, &d, e, sizeof e) < 0) return;
    const spade_json *er = spade_json_get(spade_json_root(d), "error");
    const spade_json *m = er && er->type == SPADE_JSON_OBJECT   ? spade_json_get(er, "message")
                          : er && er->type == SPADE_JSON_STRING ? er
                                                                : NULL;
    if (!m) m = spade_json_get(spade_json_root(d), "detail");
    if (m && m->type == SPADE_JSON_STRING) snprintf(out, cap, ": %.*s", (int)(m->len > 300 ? 300 : m->len), m->str);
    spade_json_doc_free(d);
}

/* How a finished try went: 0 ok, 1 retry, -1 fail (err). */
static int judge(spade_remote *r, const char *url, xfer *x, CURLcode cc, char *err, size_t errlen) {
    if (x->over) {
        spade_errf(err, errlen, "%s: response over %d bytes", url, SPADE_REMOTE_REPLY_MAX);
        return -1;
    }
    if (cc != CURLE_OK) {
        spade_errf(err, errlen, "%s: %s", url, curl_easy_strerror(cc));
        return cc == CURLE_COULDNT_CONNECT || cc == CURLE_OPERATION_TIMEDOUT || cc == CURLE_GOT_NOTHING ||
                       cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR || cc == CURLE_PARTIAL_FILE
                   ? 1
                   : -1;
    }
    long code = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200 && code < 300) return 0;
    char msg[320];
    server_message(x->resp ? x->resp : "", x->len, msg, sizeof msg);
    spade_errf(err, errlen, "%s: HTTP %ld%s", url, code, msg);
    (void)r;
    return code == 429 || code >= 500 ? 1 : -1;
}

/* ---- the request body ----------------------------------------------------- */
static char *chat_body(const spade_remote *r, const spade_remote_req *q) {
    spade_jbuf b = {0};
    spade_jw_obj(&b);
    spade_jw_key(&b, "model");
    spade_jw_cstr(&b, r->model);
    spade_jw_key(&b, "messages");
    spade_jw_arr(&b);
    for (int i = 0; i < q->n_msgs; i++) {
        spade_jw_obj(&b);
        spade_jw_key(&b, "role");
        spade_jw_cstr(&b, q->msgs[i].role);
        spade_jw_key(&b, "content");
        spade_jw_str(&b, q->msgs[i].text, q->msgs[i].len);
        spade_jw_end_obj(&b);
    }
    spade_jw_end_arr(&b);
    spade_jw_key(&b, "max_tokens");
    spade_jw_int(&b, q->max_tokens > 0 ? q->max_tokens : r->o.max_tokens);
    spade_jw_key(&b, "temperature");
    spade_jw_num(&b, r->o.temperature);
    spade_jw_key(&b, "seed");
    spade_jw_u64(&b, q->seed & 0x7fffffffULL); /* servers read it as a 32-bit int */
    if (r->o.logprobs) {
        spade_jw_key(&b, "logprobs");
        spade_jw_bool(&b, 1);
    }
    if (q->stop_newline) {
        spade_jw_key(&b, "stop");
        spade_jw_arr(&b);
        spade_jw_cstr(&b, "\n");
        spade_jw_end_arr(&b);
    }
    spade_jw_end_obj(&b);
    spade_jw_raw(&b, "", 1);
    if (b.oom) {
        spade_jbuf_free(&b);
        return NULL;
    }
    return b.p;
}

/* choices[0].message.content (and the log-probs) of a 2xx body. */
static int parse_reply(const spade_remote *r, const xfer *x, spade_remote_reply *out, char *err, size_t errlen) {
    const char *url = r->chat_url;
    spade_json_doc *d = NULL;
    char e[256];
    if (spade_json_parse(x->resp ? x->resp : "", x->len, &d, e, sizeof e) < 0) {
        spade_errf(err, errlen, "%s: the response is not JSON (%s)", url, e);
        return -1;
    }
    const spade_json *root = spade_json_root(d), *ch = spade_json_get(root, "choices");
    int rc = -1;
    if (!root || root->type != SPADE_JSON_OBJECT) {
        spade_errf(err, errlen, "%s: the response is not an object", url);
        goto done;
    }
    if (!ch) {
        spade_errf(err, errlen, "%s: choices: missing", url);
        goto done;
    }
    if (ch->type != SPADE_JSON_ARRAY || ch->len < 1) {
        spade_errf(err, errlen, "%s: choices: not a non-empty array", url);
        goto done;
    }
    const spade_json *m = spade_json_get(&ch->items[0], "message");
    if (!m || m->type != SPADE_JSON_OBJECT) {
        spade_errf(err, errlen, "%s: choices[0].message: %s", url, m ? "not an object" : "missing");
        goto done;
    }
    const spade_json *c = spade_json_get(m, "content");
    if (!c || (c->type != SPADE_JSON_STRING && c->type != SPADE_JSON_NULL)) {
        spade_errf(err, errlen, "%s: choices[0].message.content: %s", url, c ? "not a string" : "missing");
        goto done;
    }
    size_t len = c->type == SPADE_JSON_STRING ? c->len : 0;
    if (len > SPADE_REMOTE_TEXT_MAX) {
        spade_errf(err, errlen, "%s: choices[0].message.content: over %d bytes", url, SPADE_REMOTE_TEXT_MAX);
        goto done;
    }
    out->text = malloc(len + 1);
    if (!out->text) {
        spade_errf(err, errlen, "%s: out of memory", url);
        goto done;
    }
    if (len) memcpy(out->text, c->str, len);
    out->text[len] = 0;
    out->len = len;
    /* choices[0].logprobs.content[i].logprob: optional; a malformed one is ignored, not trusted */
    const spade_json *lp = spade_json_get(&ch->items[0], "logprobs"), *lc = lp ? spade_json_get(lp, "content") : NULL;
    if (lc && lc->type == SPADE_JSON_ARRAY) {
        double sum = 0;
        int ok = 1;
        for (size_t i = 0; i < lc->len && ok; i++) {
            const spade_json *v = spade_json_get(&lc->items[i], "logprob");
            if (v && v->type == SPADE_JSON_NUMBER && v->number <= 0)
                sum += v->number;
            else
                ok = 0;
        }
        out->has_logprob = ok;
        out->logprob = ok ? sum : 0;
    }
    rc = 0;
done:
    spade_json_doc_free(d);
    return rc;
}

/* ---- the drive loop ------------------------------------------------------- */
/* Runs xs[0..n) (bodies set; NULL: a GET) against url, at most conc at once.
 * on_ok(i) for each success; 0, or -1 with err. */
typedef int (*ok_fn)(spade_remote *r, xfer *x, void *ctx, char *err, size_t errlen);

static int drive(spade_remote *r, const char *url, xfer *xs, int n, int conc, ok_fn ok, void *ctx, char *err,
                 size_t errlen) {
    int done = 0, live = 0, rc = -1;
    double outage_from = 0;
    char why[1024];
    while (done < n) {
        double t = now_s(), next_wait = 1.0;
        for (int i = 0; i < n && live < conc; i++) {
            xfer *x = &xs[i];
            if (x->state == 2 && x->wait_until <= t) x->state = 0;
            if (x->state != 0) continue;
            if (xfer_setup(r, x, url, x->body) < 0 || curl_multi_add_handle(r->multi, x->h) != CURLM_OK) {
                spade_errf(err, errlen, "%s: cannot start a request (out of memory)", url);
                goto out;
            }
            x->state = 1;
            x->tries++;
            x->started = t;
            r->requests++;
            live++;
        }
        for (int i = 0; i < n; i++)
            if (xs[i].state == 2 && xs[i].wait_until - t < next_wait) next_wait = xs[i].wait_until - t;
        int running = 0;
        if (curl_multi_perform(r->multi, &running) != CURLM_OK) {
            spade_errf(err, errlen, "%s: curl_multi_perform failed", url);
            goto out;
        }
        CURLMsg *m;
        int q;
        int progressed = 0;
        while ((m = curl_multi_info_read(r->multi, &q))) {
            if (m->msg != CURLMSG_DONE) continue;
            xfer *x = NULL;
            CURLcode cc = m->data.result;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            curl_multi_remove_handle(r->multi, m->easy_handle);
            live--;
            progressed = 1;
            int j = judge(r, url, x, cc, why, sizeof why);
            if (j == 0) {
                if (outage_from > 0) {
                    note(r, "remote: %s: back after %.1f s", url, now_s() - outage_from);
                    r->outage_s += now_s() - outage_from;
                    outage_from = 0;
                }
                if (ok && ok(r, x, ctx, err, errlen) < 0) goto out;
                x->state = 3;
                done++;
            } else if (j > 0 && x->tries <= r->o.retries) {
                double w = r->o.backoff_s;
                for (int k = 1; k < x->tries && w < SPADE_REMOTE_BACKOFF_MAX_S; k++) w *= 2;
                if (w > SPADE_REMOTE_BACKOFF_MAX_S) w = SPADE_REMOTE_BACKOFF_MAX_S;
                if (outage_from == 0) outage_from = x->started;
                note(r, "remote: %s; retry %d/%d in %.2f s", why, x->tries, r->o.retries, w);
                r->retries++;
                x->state = 2;
                x->wait_until = now_s() + w;
            } else {
                if (j > 0)
                    spade_errf(err, errlen, "%s (outage: %d tries over %.1f s, the server did not come back)", why,
                               x->tries, now_s() - (outage_from > 0 ? outage_from : x->started));
                else
                    spade_errf(err, errlen, "%s", why);
                goto out;
            }
        }
        if (done < n && !progressed) {
            int ms = live ? (int)(next_wait * 1000) : (int)(next_wait * 1000) + 1;
            if (ms < 1) ms = 1;
            if (ms > 1000) ms = 1000;
            curl_multi_poll(r->multi, NULL, 0, ms, NULL);
        }
    }
    rc = 0;
out:
    for (int i = 0; i < n; i++)
        if (xs[i].state == 1) curl_multi_remove_handle(r->multi, xs[i].h);
    return rc;
}

/* GET /v1/models: data[].id must include the model. */
static int models_ok(spade_remote *r, xfer *x, void *ctx, char *err, size_t errlen) {
    (void)ctx;
    const char *url = r->models_url;
    spade_json_doc *d = NULL;
    char e[256];
    if (spade_json_parse(x->resp ? x->resp : "", x->len, &d, e, sizeof e) < 0) {
        spade_errf(err, errlen, "%s: the response is not JSON (%s)", url, e);
        return -1;
    }
    const spade_json *data = spade_json_get(spade_json_root(d), "data");
    int rc = -1;
    if (!data || data->type != SPADE_JSON_ARRAY) {
        spade_errf(err, errlen, "%s: data: %s", url, data ? "not an array" : "missing");
        goto done;
    }
    char have[512] = "";
    size_t hl = 0;
    for (size_t i = 0; i < data->len; i++) {
        const spade_json *id = spade_json_get(&data->items[i], "id");
        if (!id || id->type != SPADE_JSON_STRING) {
            spade_errf(err, errlen, "%s: data[%zu].id: %s", url, i, id ? "not a string" : "missing");
            goto done;
        }
        if (id->len == strlen(r->model) && !memcmp(id->str, r->model, id->len)) {
            rc = 0;
            goto done;
        }
        if (hl < sizeof have - 1)
            hl += (size_t)snprintf(have + hl, sizeof have - hl, "%s'%.*s'", i ? ", " : "",
                                   (int)(id->len > 100 ? 100 : id->len), id->str);
        if (hl > sizeof have - 1) hl = sizeof have - 1;
    }
    spade_errf(err, errlen, "%s: data[].id: no model '%s' (the server has %s)", url, r->model,
               data->len ? have : "none");
done:
    spade_json_doc_free(d);
    return rc;
}

static char *dup_cat(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 1);
    if (p) memcpy(p, a, la), memcpy(p + la, b, lb + 1);
    return p;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

int spade_remote_new(spade_remote **out, const spade_remote_opts *o, char *err, size_t errlen) {
    *out = NULL;
    if (!o->url || (strncmp(o->url, "http://", 7) && strncmp(o->url, "https://", 8))) {
        spade_errf(err, errlen, "remote: url: '%s' is not an http:// or https:// URL", o->url ? o->url : "");
        return -1;
    }
    if (!o->model || !o->model[0]) {
        spade_errf(err, errlen, "remote: model: missing (the served model's name, as %s/v1/models lists it)", o->url);
        return -1;
    }
    if (o->concurrency < 1 || o->concurrency > SPADE_REMOTE_CONCURRENCY_MAX || o->retries < 0 ||
        o->retries > SPADE_REMOTE_RETRIES_MAX || !(o->timeout_s > 0 && o->timeout_s <= 86400) ||
        !(o->backoff_s >= 0 && o->backoff_s <= SPADE_REMOTE_BACKOFF_MAX_S) || o->max_tokens < 1 ||
        o->max_tokens > 65536) {
        spade_errf(err, errlen,
                   "remote: concurrency (1..%d), retries (0..%d), timeout_s (0..86400], backoff_s or max_tokens out of "
                   "range",
                   SPADE_REMOTE_CONCURRENCY_MAX, SPADE_REMOTE_RETRIES_MAX);
        return -1;
    }
    const char *key = NULL;
    if (o->api_key_env && o->api_key_env[0]) {
        key = getenv(o->api_key_env);
        if (!key || !key[0]) {
            spade_errf(err, errlen, "remote: api_key_env: the variable %s is not set", o->api_key_env);
            return -1;
        }
        if (strpbrk(key, "\r\n")) {
            spade_errf(err, errlen, "remote: api_key_env: %s holds a line break", o->api_key_env);
            return -1;
        }
    }
    pthread_once(&curl_once, curl_init_once);
    spade_remote *r = calloc(1, sizeof *r);
    if (!r) {
        spade_errf(err, errlen, "remote: out of memory");
        return -1;
    }
    r->o = *o;
    r->base = dup_cat(o->url, "");
    r->model = dup_cat(o->model, "");
    if (r->base) {
        size_t l = strlen(r->base);
        while (l && r->base[l - 1] == '/') r->base[--l] = 0;
        if (l >= 3 && !strcmp(r->base + l - 3, "/v1")) r->base[l - 3] = 0;
    }
    r->chat_url = r->base ? dup_cat(r->base, "/v1/chat/completions") : NULL;
    r->models_url = r->base ? dup_cat(r->base, "/v1/models") : NULL;
    r->auth = key ? dup_cat("Authorization: Bearer ", key) : NULL;
    r->multi = curl_multi_init();
    if (!r->base || !r->model || !r->chat_url || !r->models_url || (key && !r->auth) || !r->multi) {
        spade_errf(err, errlen, "remote: out of memory");
        spade_remote_free(r);
        return -1;
    }
    r->o.url = r->base;
    r->o.model = r->model;
    r->o.api_key_env = NULL; /* not kept: the name was only needed to read the key */
    xfer x = {0};
    int rc = drive(r, r->models_url, &x, 1, 1, models_ok, NULL, err, errlen);
    xfer_clean(&x);
    if (rc < 0) {
        spade_remote_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

void spade_remote_free(spade_remote *r) {
    if (!r) return;
    if (r->multi) curl_multi_cleanup(r->multi);
    free(r->base);
    free(r->chat_url);
    free(r->models_url);
    free(r->model);
    if (r->auth) memset(r->auth, 0, strlen(r->auth));
    free(r->auth);
    free(r);
}

const char *spade_remote_endpoint(const spade_remote *r) { return r->chat_url; }
const char *spade_remote_model(const spade_remote *r) { return r->model; }

void spade_remote_counts(const spade_remote *r, long *requests, long *retries, double *outage_s) {
    if (requests) *requests = r->requests;
    if (retries) *retries = r->retries;
    if (outage_s) *outage_s = r->outage_s;
}

typedef struct chat_ctx {
    spade_remote_reply *out;
} chat_ctx;

static int chat_ok(spade_remote *r, xfer *x, void *ctx, char *err, size_t errlen) {
    chat_ctx *c = ctx;
    spade_remote_reply *o = &c->out[x->idx];
    if (parse_reply(r, x, o, err, errlen) < 0) return -1;
    o->tries = x->tries;
    o->latency_s = now_s() - x->started;
    return 0;
}

int spade_remote_chat(spade_remote *r, int n, const spade_remote_req *reqs, spade_remote_reply *out, char *err,
                      size_t errlen) {
    if (n <= 0) return 0;
    memset(out, 0, (size_t)n * sizeof *out);
    xfer *xs = calloc((size_t)n, sizeof *xs);
    int rc = -1;
    if (!xs) {
        spade_errf(err, errlen, "remote: out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        xs[i].idx = i;
        xs[i].body = chat_body(r, &reqs[i]);
        if (!xs[i].body) {
            spade_errf(err, errlen, "remote: out of memory");
            goto done;
        }
    }
    chat_ctx c = {.out = out};
    rc = drive(r, r->chat_url, xs, n, r->o.concurrency, chat_ok, &c, err, errlen);
done:
    for (int i = 0; i < n; i++) xfer_clean(&xs[i]);
    free(xs);
    if (rc < 0)
        for (int i = 0; i < n; i++) free(out[i].text), out[i].text = NULL;
    return rc;
}
