/* run_dir.h — the run directory of `spade train` (the layout is in cmd_train.c's
 * header comment): files written atomically (a temporary, fsync, rename, fsync
 * of the directory), the state file "iteration K checkpoint NAME" read back,
 * and what a killed run can leave behind removed.
 * What it is not: the config (train_config.h) or the run itself.
 */
#ifndef SPADE_CLI_RUN_DIR_H
#define SPADE_CLI_RUN_DIR_H

#include <stddef.h>

/* path holds text[0..n) or, on failure (-1), what it held before. */
int cli_write_atomic(const char *path, const char *text, size_t n);
int cli_copy_file(const char *from, const char *to);
/* The iteration the state file says is done (-1 when there is none, -2 when it is unreadable)
 * and its checkpoint's path in ckpt. */
int cli_run_read_state(const char *dir, char *ckpt, size_t cap);
/* Removes checkpoints other than keep (a kill between the state and the unlink of the old one)
 * and temporary files of an interrupted atomic write. */
void cli_run_tidy(const char *dir, const char *keep);
/* Keeps the log lines of iterations <= last and drops a line a kill cut short. */
int cli_run_trim_log(const char *log, int last);
/* Takes back what a new run wrote before it failed to start, so it does not look like a run. */
void cli_run_unmake(const char *dir);

#endif /* SPADE_CLI_RUN_DIR_H */
