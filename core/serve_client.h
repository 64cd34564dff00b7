/* serve_client.h — a client of the `spade serve` protocol (docs/protocol.md):
 * one TCP or Unix-socket connection to a running server, the hello with its
 * shared token, one request line out and one reply line back, and the readers
 * of the replies the episode player needs (the batch columns, an info).
 *
 * What it is: role-neutral transport and parsing. The bytes come from the
 * network, so every reply is hostile input: a line is at most
 * SPADE_SCLIENT_REPLY_MAX bytes, every field is checked for presence, type
 * and range, and a malformed reply is an error naming the server and the
 * field, never a crash (fuzz/fuzz_sclient.c fuzzes the readers).
 * What it is not: the episode loop over several servers (served_episodes.h),
 * nor thread-safe per connection.
 */
#ifndef SPADE_SERVE_CLIENT_H
#define SPADE_SERVE_CLIENT_H

#include <stddef.h>

#include "host.h"
#include "json.h"
#include "sandbox/sandbox.h"

/* The longest reply line read (a batch of 4096 observations of 16 KiB fits). */
#define SPADE_SCLIENT_REPLY_MAX (96u << 20)

typedef struct spade_sclient spade_sclient;

/* Connects to addr ("HOST:PORT", "tcp:HOST:PORT", "[V6]:PORT" or "unix:PATH")
 * and says hello, with token when non-NULL; refuses a server of another
 * protocol version. timeout_s bounds the connect and every later read.
 * 0, or -1 with err naming the address. */
int spade_sclient_connect(spade_sclient **out, const char *addr, const char *token, double timeout_s, char *err,
                          size_t errlen);
void spade_sclient_free(spade_sclient *c);
const char *spade_sclient_address(const spade_sclient *c);

/* What a request came back as. */
enum {
    SPADE_SCLIENT_OK = 0, /* an "ok": true reply, in *doc */
    SPADE_SCLIENT_REFUSED = 1, /* an "ok": false reply: err says "CODE: message" */
    SPADE_SCLIENT_LOST = -2, /* the connection broke or timed out (a reconnect may help) */
    SPADE_SCLIENT_BAD = -1, /* the reply is not the protocol's (err names the field) */
};

/* Writes one request (len bytes; the newline is added). SPADE_SCLIENT_OK or _LOST. */
int spade_sclient_send(spade_sclient *c, const char *line, size_t len, char *err, size_t errlen);
/* Reads and parses the next reply line: a SPADE_SCLIENT_* value; *doc (OK
 * only) is the caller's to free. */
int spade_sclient_recv(spade_sclient *c, spade_json_doc **doc, char *err, size_t errlen);

/* The reply reader alone (fuzzed): parses line, checks it is an object with a
 * boolean "ok" and, when false, an "error" with string "code" and "message".
 * SPADE_SCLIENT_OK (*doc set), _REFUSED or _BAD. */
int spade_sclient_parse_reply(const char *line, size_t len, spade_json_doc **doc, char *err, size_t errlen);

/* One item of a reset or step reply's batch columns. obs points into the doc. */
typedef struct spade_sclient_item {
    const char *obs;
    size_t obs_len;
    double reward, ret;
    int terminated, truncated, success;
    int failed; /* failures[j] was an object: failure holds it */
    spade_failure failure;
} spade_sclient_item;

/* The columns of obj (a reset/step reply, or its "reset" member) for exactly
 * n items: obs, reward, terminated, truncated, success, return, failures?.
 * 0, or -1 with err naming the column and the item. */
int spade_sclient_parse_batch(const spade_json *obj, int n, spade_sclient_item *items, char *err, size_t errlen);

/* The "info" object of an info or make reply into *info (name, description,
 * family, max_steps, success, has_solve; params and tools by name). 0, or -1
 * with err naming the field. */
int spade_sclient_parse_info(const spade_json *obj, spade_env_info *info, char *err, size_t errlen);

#endif /* SPADE_SERVE_CLIENT_H */
