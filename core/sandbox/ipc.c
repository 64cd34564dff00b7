/* ipc.c — frames between the parent and a sandbox worker (see ipc.h).
 *
 * What it is: frame building, deadline-bounded non-blocking send/receive for
 * the parent, and the parent's decoders, which assume the worker lies: every
 * length is checked against what remains of the payload before it is used,
 * every count against what was asked, every string is NUL-terminated before
 * anyone reads it.
 * What it is not: process management (zygote.c, sandbox.c). The worker's side
 * of the loop lives in zygote.c and trusts the parent.
 */
#include "sandbox/ipc.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "errbuf.h"
#include "tools/tools.h"

/* ---- buffers ----------------------------------------------------------------- */
int spade_ipc_buf_reserve(spade_ipc_buf *b, size_t cap) {
    if (cap <= b->cap) return 0;
    size_t n = b->cap ? b->cap : 4096;
    while (n < cap) {
        if (n > SIZE_MAX / 2) return -1;
        n *= 2;
    }
    unsigned char *p = realloc(b->p, n);
    if (!p) return -1;
    b->p = p;
    b->cap = n;
    return 0;
}

void spade_ipc_buf_free(spade_ipc_buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

int spade_ipc_begin(spade_ipc_buf *b, uint32_t type) {
    b->len = 0;
    if (spade_ipc_buf_reserve(b, SPADE_IPC_HDR + 256) < 0) return -1;
    uint32_t h[3] = {SPADE_IPC_MAGIC, type, 0};
    memcpy(b->p, h, sizeof h);
    b->len = SPADE_IPC_HDR;
    return 0;
}

int spade_ipc_put(spade_ipc_buf *b, const void *p, size_t n) {
    if (n > SIZE_MAX - b->len || spade_ipc_buf_reserve(b, b->len + n) < 0) return -1;
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

void spade_ipc_end(spade_ipc_buf *b) {
    uint32_t len = (uint32_t)(b->len - SPADE_IPC_HDR);
    memcpy(b->p + 8, &len, sizeof len);
}

/* ---- deadline I/O -------------------------------------------------------------- */
double spade_ipc_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits for events on fd until the deadline: 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, short events, double deadline) {
    for (;;) {
        double left = deadline - spade_ipc_now();
        if (left <= 0) return 0;
        int ms = left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1;
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, ms);
        if (r > 0) return 1; /* POLLHUP/POLLERR too: the next send/recv tells what happened */
        if (r == 0) continue; /* re-check the clock: poll may wake a little early */
        if (errno != EINTR) return -1;
    }
}

spade_ipc_io spade_ipc_send(int fd, const void *p, size_t n, double deadline, char *err, size_t errlen) {
    const unsigned char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            c += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = wait_fd(fd, POLLOUT, deadline);
            if (r == 0) {
                spade_errf(err, errlen, "worker did not read its request before the deadline");
                return SPADE_IO_TIMEOUT;
            }
            if (r < 0) {
                spade_errf(err, errlen, "poll: %s", strerror(errno));
                return SPADE_IO_ERROR;
            }
            continue;
        }
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)) {
            spade_errf(err, errlen, "worker closed its socket");
            return SPADE_IO_CLOSED;
        }
        spade_errf(err, errlen, "send: %s", w < 0 ? strerror(errno) : "wrote nothing");
        return SPADE_IO_ERROR;
    }
    return SPADE_IO_OK;
}

spade_ipc_io spade_ipc_recv(int fd, spade_ipc_buf *b, size_t max_frame, double deadline, uint32_t *type, size_t *len,
                            char *err, size_t errlen) {
    size_t want = SPADE_IPC_HDR; /* bytes the frame has, once the header is known */
    int have_hdr = 0;
    b->len = 0;
    if (spade_ipc_buf_reserve(b, 64 * 1024) < 0) {
        spade_errf(err, errlen, "out of memory for the receive buffer");
        return SPADE_IO_ERROR;
    }
    for (;;) {
        if (!have_hdr && b->len >= SPADE_IPC_HDR) {
            uint32_t h[3];
            memcpy(h, b->p, sizeof h);
            if (h[0] != SPADE_IPC_MAGIC) {
                spade_errf(err, errlen, "bad frame magic 0x%08x", h[0]);
                return SPADE_IO_PROTOCOL;
            }
            if (h[2] > max_frame) {
                spade_errf(err, errlen, "frame of %u bytes exceeds the cap of %zu", h[2], max_frame);
                return SPADE_IO_PROTOCOL;
            }
            want = SPADE_IPC_HDR + (size_t)h[2];
            *type = h[1];
            have_hdr = 1;
        }
        if (have_hdr && b->len >= want) {
            if (b->len > want) {
                spade_errf(err, errlen, "%zu unexpected bytes after a frame", b->len - want);
                return SPADE_IO_PROTOCOL;
            }
            *len = want - SPADE_IPC_HDR;
            return SPADE_IO_OK;
        }
        /* Room for the frame and one byte more, so that trailing garbage is
         * seen rather than left in the socket; grown as bytes arrive, so that
         * a header that claims a large frame costs nothing until it is sent. */
        if (b->len == b->cap) {
            size_t next = b->cap * 2 < want + 1 ? b->cap * 2 : want + 1;
            if (next <= b->len || spade_ipc_buf_reserve(b, next) < 0) {
                spade_errf(err, errlen, "out of memory for a frame of %zu bytes", want);
                return SPADE_IO_ERROR;
            }
        }
        size_t room = b->cap - b->len;
        if (have_hdr && room > want + 1 - b->len) room = want + 1 - b->len;
        ssize_t r = recv(fd, b->p + b->len, room, MSG_DONTWAIT);
        if (r > 0) {
            b->len += (size_t)r;
            continue;
        }
        if (r == 0) {
            if (b->len)
                spade_errf(err, errlen, "worker closed its socket after %zu of %zu bytes of a frame", b->len, want);
            else
                spade_errf(err, errlen, "worker closed its socket");
            return SPADE_IO_CLOSED;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w = wait_fd(fd, POLLIN, deadline);
            if (w == 0) {
                spade_errf(err, errlen, "no reply before the deadline");
                return SPADE_IO_TIMEOUT;
            }
            if (w < 0) {
                spade_errf(err, errlen, "poll: %s", strerror(errno));
                return SPADE_IO_ERROR;
            }
            continue;
        }
        if (errno == ECONNRESET || errno == EPIPE || errno == ENOTCONN) {
            spade_errf(err, errlen, "worker closed its socket");
            return SPADE_IO_CLOSED;
        }
        spade_errf(err, errlen, "recv: %s", strerror(errno));
        return SPADE_IO_ERROR;
    }
}

/* ---- decoders -------------------------------------------------------------------- */
int spade_ipc_decode_results(const unsigned char *payload, size_t len, uint32_t want_n, spade_step_result *results,
                             int *first_bad, int *bad_status, char *err, size_t errlen) {
    *first_bad = -1;
    *bad_status = SPADE_HOST_OK;
    uint32_t n;
    if (len < sizeof n) {
        spade_errf(err, errlen, "results frame of %zu bytes has no count", len);
        return -1;
    }
    memcpy(&n, payload, sizeof n);
    if (n != want_n) {
        spade_errf(err, errlen, "results count %u, asked for %u", n, want_n);
        return -1;
    }
    size_t recs = (size_t)n * sizeof(spade_wire_result);
    if ((len - sizeof n) / sizeof(spade_wire_result) < n) {
        spade_errf(err, errlen, "results frame of %zu bytes too short for %u records", len, n);
        return -1;
    }
    const unsigned char *rec = payload + sizeof n;
    unsigned char *text = (unsigned char *)rec + recs; /* obs are NUL-terminated in place */
    size_t left = len - sizeof n - recs;
    for (uint32_t i = 0; i < n; i++) {
        spade_wire_result w;
        memcpy(&w, rec + (size_t)i * sizeof w, sizeof w);
        /* The common case costs one test per field group; which test failed
         * is worked out only on the way to the error message. */
        if ((w.terminated | w.truncated | w.success) > 1) {
            spade_errf(err, errlen, "result %u: flags out of range (terminated %u, truncated %u, success %u)", i,
                       w.terminated, w.truncated, w.success);
            return -1;
        }
        /* The host never returns NaN, inf or a reward beyond SPADE_REWARD_MAX
         * (core/host.h), so no return beyond SPADE_REWARD_MAX *
         * SPADE_MAX_STEPS_LIMIT; one would poison every mean, advantage and
         * gradient downstream. (The comparisons are false for NaN.) */
        if (!(fabs(w.reward) <= SPADE_REWARD_MAX) ||
            !(fabs(w.episode_return) <= SPADE_REWARD_MAX * SPADE_MAX_STEPS_LIMIT)) {
            spade_errf(err, errlen, "result %u: reward %g or episode_return %g not finite or out of bounds", i,
                       w.reward, w.episode_return);
            return -1;
        }
        if (w.status != SPADE_HOST_OK) {
            if (w.status != SPADE_HOST_OUTPUT_TOO_LARGE && w.status != SPADE_HOST_BAD_CALL &&
                w.status != SPADE_HOST_BAD_REWARD) {
                spade_errf(err, errlen, "result %u: unknown status %u", i, w.status);
                return -1;
            }
            if (w.obs_len != 0) {
                spade_errf(err, errlen, "result %u: failed item carries %u bytes of observation", i, w.obs_len);
                return -1;
            }
            if (*first_bad < 0) {
                *first_bad = (int)i;
                *bad_status = w.status;
            }
        } else if (w.obs_len > SPADE_OBS_MAX) {
            spade_errf(err, errlen, "result %u: observation of %u bytes exceeds SPADE_OBS_MAX", i, w.obs_len);
            return -1;
        }
        size_t used = (size_t)w.obs_len + 1;
        if (left < used) {
            spade_errf(err, errlen, "result %u: observation of %u bytes overruns the frame", i, w.obs_len);
            return -1;
        }
        if (text[w.obs_len] != '\0') {
            spade_errf(err, errlen, "result %u: observation not NUL-terminated", i);
            return -1;
        }
        spade_step_result *r = &results[i];
        r->obs = (const char *)text;
        r->obs_len = w.obs_len;
        r->reward = w.reward;
        r->episode_return = w.episode_return;
        r->terminated = w.terminated;
        r->truncated = w.truncated;
        r->success = w.success;
        text += used;
        left -= used;
    }
    if (left != 0) {
        spade_errf(err, errlen, "%zu bytes left over after %u results", left, n);
        return -1;
    }
    return 0;
}

int spade_ipc_decode_text(const unsigned char *payload, size_t len, int *status, const char **text, size_t *tlen,
                          char *err, size_t errlen) {
    uint32_t h[2];
    if (len < sizeof h) {
        spade_errf(err, errlen, "text frame of %zu bytes too short", len);
        return -1;
    }
    memcpy(h, payload, sizeof h);
    if (h[0] != SPADE_HOST_OK && h[0] != SPADE_HOST_OUTPUT_TOO_LARGE && h[0] != SPADE_HOST_BAD_CALL) {
        spade_errf(err, errlen, "text: unknown status %u", h[0]);
        return -1;
    }
    if (h[1] > SPADE_OBS_MAX) {
        spade_errf(err, errlen, "text of %u bytes exceeds SPADE_OBS_MAX", h[1]);
        return -1;
    }
    if (len - sizeof h != (size_t)h[1] + 1 || payload[sizeof h + h[1]] != '\0') {
        spade_errf(err, errlen, "text length %u does not match the frame (%zu bytes)", h[1], len);
        return -1;
    }
    *status = (int)h[0];
    *text = (const char *)payload + sizeof h;
    *tlen = h[1];
    return 0;
}

int spade_ipc_decode_fail(const unsigned char *payload, size_t len, spade_failure *f, char *err, size_t errlen) {
    uint32_t outcome, mlen;
    int32_t line;
    if (len < 12) {
        spade_errf(err, errlen, "failure frame of %zu bytes too short", len);
        return -1;
    }
    memcpy(&outcome, payload, 4);
    memcpy(&line, payload + 4, 4);
    memcpy(&mlen, payload + 8, 4);
    switch (outcome) {
    case SPADE_OUT_COMPILE:
    case SPADE_OUT_LINK:
    case SPADE_OUT_INVALID:
    case SPADE_OUT_OOM:
    case SPADE_OUT_OUTPUT:
    case SPADE_OUT_BAD_CALL:
    case SPADE_OUT_INTERNAL: break;
    default:
        spade_errf(err, errlen, "failure frame with outcome %u, which a worker may not report", outcome);
        return -1;
    }
    if (line < 0) {
        spade_errf(err, errlen, "failure frame with line %d", line);
        return -1;
    }
    if ((size_t)mlen != len - 12) {
        spade_errf(err, errlen, "failure message length %u does not match the frame (%zu bytes)", mlen, len);
        return -1;
    }
    f->outcome = (spade_outcome)outcome;
    f->line = line;
    f->signal = 0;
    size_t n = mlen < sizeof f->message - 1 ? mlen : sizeof f->message - 1;
    memcpy(f->message, payload + 12, n);
    f->message[n] = '\0';
    /* The message is shown to people and logged: no control bytes but tab and
     * newline (a compile error ends with lines of the user's source). */
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)f->message[i] < 0x20 && f->message[i] != '\t' && f->message[i] != '\n') f->message[i] = ' ';
    return 0;
}

/* A field the host filled with strncpy-like care must hold its NUL: one that
 * does not was not written by the host. */
static int terminated(const char *s, size_t cap) { return memchr(s, '\0', cap) != NULL; }

static int finite3(double a, double b, double c) { return isfinite(a) && isfinite(b) && isfinite(c); }

/* The rules core/host.c applies to what an environment declares
 * (spade_info_*_ok in host.h) are applied again here: the worker runs the
 * environment's code, so the host's checks in it prove nothing. The parent
 * prints these strings on terminals (spade list, play, run) and in logs, and
 * loops up to max_steps (spade check). */
static int decode_info(const unsigned char *payload, size_t len, spade_env_info *info, char *err, size_t errlen) {
    if (len != sizeof *info) {
        spade_errf(err, errlen, "environment info of %zu bytes, expected %zu", len, sizeof *info);
        return -1;
    }
    memcpy(info, payload, sizeof *info);
    if (!terminated(info->name, sizeof info->name) || !terminated(info->description, sizeof info->description) ||
        !terminated(info->family, sizeof info->family)) {
        spade_errf(err, errlen, "info: name, description or family not NUL-terminated");
        return -1;
    }
    /* From here on every string below index n_* is NUL-terminated before use;
     * entries past n_params/n_tools are zeroed, so no reader meets garbage. */
    if (info->abi != SPADE_ENV_ABI) {
        spade_errf(err, errlen, "info: abi %d, expected %d", info->abi, SPADE_ENV_ABI);
        return -1;
    }
    if (!spade_info_name_ok(info->name)) {
        spade_errf(err, errlen, "info: name is not [a-z0-9_-]+");
        return -1;
    }
    if (!spade_info_one_line_ok(info->description)) {
        spade_errf(err, errlen, "info: description is empty or has control bytes");
        return -1;
    }
    if (info->family[0] && !spade_info_name_ok(info->family)) {
        spade_errf(err, errlen, "info: family is not [a-z0-9_-]*");
        return -1;
    }
    if (info->max_steps <= 0 || info->max_steps > SPADE_MAX_STEPS_LIMIT) {
        spade_errf(err, errlen, "info: max_steps %d outside [1, %d]", info->max_steps, SPADE_MAX_STEPS_LIMIT);
        return -1;
    }
    if (!(fabs(info->success) <= SPADE_SUCCESS_MAX)) {
        spade_errf(err, errlen, "info: success threshold not finite or beyond +-%g", SPADE_SUCCESS_MAX);
        return -1;
    }
    if (info->state_size > SPADE_STATE_MAX) {
        spade_errf(err, errlen, "info: state_size %llu exceeds SPADE_STATE_MAX", (unsigned long long)info->state_size);
        return -1;
    }
    if (info->has_solve != 0 && info->has_solve != 1) {
        spade_errf(err, errlen, "info: has_solve %d", info->has_solve);
        return -1;
    }
    if (info->n_params < 0 || info->n_params > SPADE_INFO_MAX_PARAMS) {
        spade_errf(err, errlen, "info: n_params %d", info->n_params);
        return -1;
    }
    if (info->n_tools < 0 || info->n_tools > SPADE_INFO_MAX_TOOLS) {
        spade_errf(err, errlen, "info: n_tools %d", info->n_tools);
        return -1;
    }
    for (int i = info->n_params; i < SPADE_INFO_MAX_PARAMS; i++) memset(&info->params[i], 0, sizeof info->params[i]);
    for (int i = info->n_tools; i < SPADE_INFO_MAX_TOOLS; i++) memset(&info->tools[i], 0, sizeof info->tools[i]);
    for (int i = 0; i < info->n_params; i++) {
        spade_param_info *p = &info->params[i];
        if (!terminated(p->name, sizeof p->name) || !spade_info_c_ident_ok(p->name)) {
            spade_errf(err, errlen, "info: param %d: name is not a C identifier", i);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(info->params[j].name, p->name) == 0) {
                spade_errf(err, errlen, "info: param %d (%s) declared twice", i, p->name);
                return -1;
            }
        if (p->type != SPADE_PARAM_INT && p->type != SPADE_PARAM_REAL) {
            spade_errf(err, errlen, "info: param %d type %d", i, p->type);
            return -1;
        }
        if (!finite3(p->def, p->min, p->max) || !(p->min <= p->def && p->def <= p->max)) {
            spade_errf(err, errlen, "info: param %d (%s): default/min/max out of order or not finite", i, p->name);
            return -1;
        }
        if (p->type == SPADE_PARAM_INT &&
            !(spade_info_whole_int(p->def) && spade_info_whole_int(p->min) && spade_info_whole_int(p->max))) {
            spade_errf(err, errlen, "info: int param %d (%s): default/min/max not all ints", i, p->name);
            return -1;
        }
    }
    for (int i = 0; i < info->n_tools; i++) {
        spade_tool_info *t = &info->tools[i];
        if (!terminated(t->name, sizeof t->name) || !terminated(t->signature, sizeof t->signature) ||
            !terminated(t->description, sizeof t->description)) {
            spade_errf(err, errlen, "info: tool %d: a string is not NUL-terminated", i);
            return -1;
        }
        spade_tool_sig sig;
        char why[128];
        if (!spade_info_c_ident_ok(t->name) || !spade_info_one_line_ok(t->description) ||
            !spade_info_one_line_ok(t->signature) || spade_tool_sig_parse(t->signature, &sig, why, sizeof why) != 0) {
            spade_errf(err, errlen, "info: tool %d: bad name, description or signature", i);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(info->tools[j].name, t->name) == 0) {
                spade_errf(err, errlen, "info: tool %d (%s) declared twice", i, t->name);
                return -1;
            }
    }
    return 0;
}

int spade_ipc_decode_info(const unsigned char *payload, size_t len, spade_env_info *info, char *err, size_t errlen) {
    if (decode_info(payload, len, info, err, errlen) == 0) return 0;
    memset(info, 0, sizeof *info); /* a rejected info leaves nothing half-checked behind */
    return -1;
}

int spade_ipc_decode_added(const unsigned char *payload, size_t len, int n, int *first_id, char *err, size_t errlen) {
    int32_t id;
    if (len != sizeof id) {
        spade_errf(err, errlen, "added frame of %zu bytes, expected 4", len);
        return -1;
    }
    memcpy(&id, payload, sizeof id);
    if (id < 0 || n < 0 || id > INT_MAX - n) {
        spade_errf(err, errlen, "added: first id %d for %d instances", id, n);
        return -1;
    }
    *first_id = id;
    return 0;
}
