/* report_log.h — train.jsonl as `spade report` reads it: one row per
 * iteration (a later line of the same iteration wins, an "eval" line joins
 * its iteration's metrics), the gates' names in the order first met, the
 * warnings it gave. Shared by the one-run report (cmd_report.c) and the
 * comparison of arms (report_compare.c).
 *
 * What it is not: a schema of train.jsonl (docs/selfplay.md is), nor a
 * writer; a value the log did not have is NAN, never 0.
 */
#ifndef SPADE_CLI_REPORT_LOG_H
#define SPADE_CLI_REPORT_LOG_H

#include <stddef.h>

#define MAX_GATES 24
#define MAX_POOL_ENVS 12
#define N_TIMES 7

typedef struct row {
    int iteration;
    double written, valid, gate[MAX_GATES];
    double pass, pass_hint, regret, reward, vendi_n, pool_success, eval;
    int eval_only; /* the line held only an "eval" */
    double t[N_TIMES], t_total; /* t_total: time_s.total, the whole iteration (NAN in an older log) */
    double success, mean_return, loss, env_success[MAX_POOL_ENVS];
    int selfplay;
} row;

typedef struct run_log {
    row *rows; /* by iteration, increasing, one each */
    int n, cap;
    char gates[MAX_GATES][32];
    int n_gates;
    char envs[MAX_POOL_ENVS][96];
    int n_envs, more_envs;
    int skipped, torn_tail; /* lines not read; the last line was half written */
    char warnings[8][320];
    int n_warnings;
} run_log;

/* Reads every line of path into *L (zeroed by the caller); a line that is not
 * a JSON object with an iteration is skipped with a warning naming the file and
 * line (on stderr and in L->warnings). 0, or -1 with a message. */
int cli_report_read_log(const char *path, run_log *L, char *err, size_t errlen);

/* `spade report --compare ARM=RUN[,RUN...] ...`: argv[0..argc) are the arm
 * arguments; out is the directory to write (NULL: ./compare); last is how many
 * of the common iterations the summary covers (0: all). A CLI exit code. */
int cli_report_compare(int argc, char **argv, const char *out, long last);

#endif /* SPADE_CLI_REPORT_LOG_H */
