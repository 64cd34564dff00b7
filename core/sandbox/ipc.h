/* ipc.h — the framed protocol between the parent and a sandbox worker.
 *
 * What it is: the wire format (one header {u32 magic, u32 type, u32 len} and a
 * payload, native byte order: both ends are the same binary on the same
 * machine), the encoders the parent and the worker use, and the parent-side
 * decoders, which treat every byte as hostile: lengths capped, counts checked
 * against what was asked, strings NUL-terminated, outputs within
 * SPADE_OBS_MAX. Exposed (not installed) so that tests can feed the decoders
 * crafted bytes.
 * What it is not: the process management (zygote.c, sandbox.c) nor a general
 * RPC layer. One request is in flight per worker at a time.
 */
#ifndef SPADE_SANDBOX_IPC_H
#define SPADE_SANDBOX_IPC_H

#include <stddef.h>
#include <stdint.h>

#include "host.h"
#include "sandbox/sandbox.h"

#define SPADE_IPC_MAGIC 0x30445053u /* "SPD0" read as little-endian bytes */
#define SPADE_IPC_HDR 12u

typedef enum spade_msg_type {
    /* parent -> worker */
    SPADE_MSG_LOAD = 1, /* u32 name_len, u32 src_len, name, source */
    SPADE_MSG_ADD = 2, /* i32 n, i32 n_values, f64 values[n_values] (0 values: defaults) */
    SPADE_MSG_BATCH = 3, /* u32 n, n x spade_wire_item, then each action + NUL */
    SPADE_MSG_HINT = 4, /* i32 id */
    SPADE_MSG_SOLVE = 5, /* i32 id */
    /* worker -> parent */
    SPADE_MSG_LOADED = 0x101, /* spade_env_info, raw */
    SPADE_MSG_ADDED = 0x102, /* i32 first_id */
    SPADE_MSG_RESULTS = 0x103, /* u32 n, n x spade_wire_result, then each obs + NUL */
    SPADE_MSG_TEXT = 0x104, /* u32 status, u32 len, text + NUL */
    SPADE_MSG_FAIL = 0x105, /* u32 outcome, i32 line, u32 msg_len, msg */
} spade_msg_type;

typedef enum spade_wire_op {
    SPADE_OP_RESET = SPADE_BATCH_RESET, /* the public ops of sandbox.h's mixed batch, on the wire as they are */
    SPADE_OP_STEP = SPADE_BATCH_STEP,
    SPADE_OP_HINT = SPADE_BATCH_HINT, /* the result's obs is the hint (reward, return and flags 0) */
    SPADE_OP_SOLVE = SPADE_BATCH_SOLVE, /* the result's obs is SOLVE's action */
    SPADE_OP_POISON = 5, /* the worker's poison seed becomes seed (spade_host_set_poison; 0: off); empty result */
} spade_wire_op;

/* One item of a batch: reset (with seed), step (with an action), or the hint
 * or SOLVE's action for the instance's current state (neither changes it). */
typedef struct spade_wire_item {
    int32_t id;
    uint32_t op; /* spade_wire_op */
    uint64_t seed;
    uint32_t action_len;
    uint32_t pad_;
} spade_wire_item;

/* One result; status is a spade_host_status. obs_len is 0 unless status is OK. */
typedef struct spade_wire_result {
    double reward;
    double episode_return;
    uint32_t obs_len;
    uint8_t terminated, truncated, success, status;
} spade_wire_result;

/* A growable byte buffer; len is the bytes in use. */
typedef struct spade_ipc_buf {
    unsigned char *p;
    size_t len, cap;
} spade_ipc_buf;

int spade_ipc_buf_reserve(spade_ipc_buf *b, size_t cap);
void spade_ipc_buf_free(spade_ipc_buf *b);
/* Starts a frame of the given type in b (header reserved, len filled by end). */
int spade_ipc_begin(spade_ipc_buf *b, uint32_t type);
int spade_ipc_put(spade_ipc_buf *b, const void *p, size_t n);
void spade_ipc_end(spade_ipc_buf *b);

/* ---- parent side: I/O with deadlines (CLOCK_MONOTONIC seconds) ------------ */
double spade_ipc_now(void);

typedef enum spade_ipc_io {
    SPADE_IO_OK = 0,
    SPADE_IO_TIMEOUT, /* the deadline passed */
    SPADE_IO_CLOSED, /* EOF, EPIPE or ECONNRESET: the worker is gone or going */
    SPADE_IO_PROTOCOL, /* bad header: magic, length over the cap, bytes past the frame */
    SPADE_IO_ERROR, /* our own failure (memory, unexpected errno) */
} spade_ipc_io;

/* Sends all of p[0..n) on a non-blocking socket (MSG_NOSIGNAL: a dead worker
 * never raises SIGPIPE in the caller). */
spade_ipc_io spade_ipc_send(int fd, const void *p, size_t n, double deadline, char *err, size_t errlen);

/* Receives exactly one frame into b: header checked (magic, len <= max_frame);
 * any byte past the frame is a protocol violation (one request is in flight at
 * a time, so a worker has nothing else to say). On OK, *type and the payload
 * (b->p + SPADE_IPC_HDR, *len bytes). */
spade_ipc_io spade_ipc_recv(int fd, spade_ipc_buf *b, size_t max_frame, double deadline, uint32_t *type, size_t *len,
                            char *err, size_t errlen);

/* ---- parent side: decoders. Each returns 0, or -1 with err naming the field */
/* RESULTS for a batch of want_n items. results[i].obs point into payload
 * (NUL-terminated in place). Items whose status is not OK are reported through
 * *first_bad (index, else -1) and *bad_status. */
int spade_ipc_decode_results(const unsigned char *payload, size_t len, uint32_t want_n, spade_step_result *results,
                             int *first_bad, int *bad_status, char *err, size_t errlen);
/* TEXT: status, and the text (NUL-terminated in place, len <= SPADE_OBS_MAX). */
int spade_ipc_decode_text(const unsigned char *payload, size_t len, int *status, const char **text, size_t *tlen,
                          char *err, size_t errlen);
/* FAIL: outcome must be one the worker may report (compile, link, invalid,
 * out of memory, output too large, bad call, internal); message is copied and
 * NUL-terminated into f. */
int spade_ipc_decode_fail(const unsigned char *payload, size_t len, spade_failure *f, char *err, size_t errlen);
/* LOADED: exactly sizeof(spade_env_info); every string forced NUL-terminated,
 * counts and limits checked. */
int spade_ipc_decode_info(const unsigned char *payload, size_t len, spade_env_info *info, char *err, size_t errlen);
/* ADDED: the first id, within [0, INT_MAX - n]. */
int spade_ipc_decode_added(const unsigned char *payload, size_t len, int n, int *first_id, char *err, size_t errlen);

#endif /* SPADE_SANDBOX_IPC_H */
