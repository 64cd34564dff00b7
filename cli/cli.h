/* cli.h — what the spade subcommands share: the command signature, argument
 * helpers that print their own errors, and loading an environment spec.
 *
 * What it is not: library code. These functions print to stdout/stderr and
 * follow the CLI's exit-status convention: 0 ok, 1 failure, 2 usage error.
 */
#ifndef SPADE_CLI_H
#define SPADE_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/policy.h"
#include "registry.h"
#include "sandbox/sandbox.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* A subcommand: argv[0] is its name. sb is the sandbox main() started before
 * anything else (NULL for commands that do not run environments, and when
 * --help was asked). */
typedef int (*cli_cmd_fn)(spade_sandbox *sb, int argc, char **argv);
typedef void (*cli_usage_fn)(FILE *out);

int cli_check(spade_sandbox *sb, int argc, char **argv);
int cli_run(spade_sandbox *sb, int argc, char **argv);
int cli_play(spade_sandbox *sb, int argc, char **argv);
int cli_new(spade_sandbox *sb, int argc, char **argv);
int cli_list(spade_sandbox *sb, int argc, char **argv);
int cli_tokenizer(spade_sandbox *sb, int argc, char **argv);
void cli_usage_check(FILE *out);
void cli_usage_run(FILE *out);
void cli_usage_play(FILE *out);
void cli_usage_new(FILE *out);
void cli_usage_list(FILE *out);
int cli_vendi(spade_sandbox *sb, int argc, char **argv);
void cli_usage_vendi(FILE *out);
int cli_archive(spade_sandbox *sb, int argc, char **argv);
void cli_usage_archive(FILE *out);
int cli_train(spade_sandbox *sb, int argc, char **argv);
void cli_usage_train(FILE *out);
int cli_eval(spade_sandbox *sb, int argc, char **argv);
void cli_usage_eval(FILE *out);
/* `spade check --gates FILE` (cmd_gates.c): the self-play loop's gates, one line each. */
int cli_check_gates(spade_sandbox *sb, const char *file, int require_solve);
void cli_usage_tokenizer(FILE *out);
/* `spade report` (cli/cmd_report.c, its SVG plots in cli/report_svg.c). */
int cli_report(spade_sandbox *sb, int argc, char **argv);
void cli_usage_report(FILE *out);
/* `spade serve` (cli/cmd_serve.c, protocol in cli/serve_proto.c). */
int cli_serve(spade_sandbox *sb, int argc, char **argv);
void cli_usage_serve(FILE *out);
int cli_demos(spade_sandbox *sb, int argc, char **argv);
void cli_usage_demos(FILE *out);
/* `spade model fetch|list|info` (cli/cmd_model.c): pretrained GGUF models. */
int cli_model(spade_sandbox *sb, int argc, char **argv);
void cli_usage_model(FILE *out);
/* `spade generate MODEL|CKPT` (cli/cmd_generate.c). */
int cli_generate(spade_sandbox *sb, int argc, char **argv);
void cli_usage_generate(FILE *out);
/* `spade export CKPT|MODEL --gguf OUT` (cli/cmd_export.c). */
int cli_export(spade_sandbox *sb, int argc, char **argv);
void cli_usage_export(FILE *out);

/* "spade CMD: message" on stderr; returns code, so `return cli_err(...)` reads well. */
int cli_err(int code, const char *cmd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Whole-string integer in [min, max]; on failure prints an error naming the flag
 * and returns -1. */
int cli_parse_long(const char *cmd, const char *flag, const char *text, long min, long max, long *out);
int cli_parse_u64(const char *cmd, const char *flag, const char *text, uint64_t *out);

/* The getopt_long diagnostic for the option that just failed (unknown option,
 * missing argument) and usage hint; returns CLI_USAGE. */
int cli_bad_option(const char *cmd, int argc, char **argv, int optopt_);

/* Resolves SPEC (NAME_OR_FILE[:params]) through the registry and reads the
 * file. Prints the error and returns CLI_FAIL on failure. *src is malloc'd. */
int cli_load_spec(const char *cmd, const char *spec, char *path, size_t pathcap, char *params, size_t paramscap,
                  char **src, size_t *len);

/* The policy SPEC names: a pretrained model (a known NAME or a PATH.gguf,
 * core/policy/models.h) loaded with `context` positions (0: the smaller of
 * the model's and 2048, what an episode needs, not the 8192+ a model's KV
 * caches would take per decoding slot), or a checkpoint. 0, or -1 with err. */
int cli_load_policy(const char *spec, int context, spade_policy **out, char *err, size_t errlen);

/* Prints a sandbox failure: "spade CMD: outcome (signal N): message". */
void cli_print_failure(const char *cmd, const char *what, const spade_failure *f);

/* A param value as people write it: integers without exponent ("1000000", not
 * "1e+06"), others with %g. Returns buf. */
const char *cli_num(double v, char *buf, size_t cap);

/* mkdir -p: dir and its missing parents (0755). 0, or -1 with errno set. */
int cli_mkdir_p(const char *dir);

/* All of f to EOF, in a malloc'd NUL-terminated buffer (*len bytes before
 * the NUL), with no size limit (pretraining data, tokenizer input); the
 * caller closes f. NULL on failure, *read_error 1 for a read error, 0 for out
 * of memory. */
char *cli_read_stream(FILE *f, size_t *len, int *read_error);

/* Monotonic seconds. */
double cli_now(void);

/* The shared token of `spade serve` (docs/protocol.md): from the first line of
 * file (--token-file) or the variable env (--token-env); 16..4096 bytes, one
 * line. Into buf (NUL-terminated); 0, or -1 after an error message. */
#define CLI_TOKEN_MIN 16
#define CLI_TOKEN_MAX 4096
int cli_read_token(const char *cmd, const char *file, const char *env, char *buf, size_t cap, size_t *len);

/* Writes s as a JSON string literal (quotes included). */
void cli_json_string(FILE *out, const char *s, size_t len);

/* The program as the user started it, for the commands a message suggests:
 * "./spade" when it was run by a path (the README's build leaves ./spade),
 * "spade" when found on PATH. main() records argv[0]. */
void cli_set_self(const char *argv0);
const char *cli_self(void);

/* Cleans a path in place, by its text: "a/./b" -> "a/b", "configs/../runs" ->
 * "runs", "x//y/" -> "x/y"; a leading ".." that has nothing to cancel stays.
 * For paths the CLI prints and writes, so that they read as the user would
 * type them (a symlinked directory followed by ".." is taken as text). */
void cli_path_clean(char *path);

/* The closing words of `spade train` (cli/train_summary.c): what the run did,
 * from RUN/train.jsonl's own figures, and the commands that look at it, go on
 * with it or evaluate it. ckpt: the latest checkpoint ("" when none). */
void cli_train_summary(FILE *out, const char *run, const char *ckpt, int selfplay, int iterations);

#endif /* SPADE_CLI_H */
