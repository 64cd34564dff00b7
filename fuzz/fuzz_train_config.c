/* fuzz_train_config.c — libFuzzer harness for the run config of `spade train`
 * (the inih handler and the checks of load_config in cli/cmd_train.c): the
 * input is written to RUN-less config.ini in a private directory and read by
 * the same function the command uses.
 * The parser is a static function of the command, and cmd_train.c is not
 * split up for the fuzzer's sake: this file includes it whole, so the harness
 * calls load_config itself and nothing in the command changes.
 * What it is not: a test of a run (tests/test_train.sh); nothing is trained.
 */
#include "../cli/cmd_train.c"

#include "fuzz_util.h"

static tr_config cfg; /* ~1 MB: not on the stack */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file("config.ini", data, size);
    int rc = load_config(path, NULL, &cfg);
    if (rc == 0 && (cfg.iterations < 0 || cfg.n_specs > MAX_LIST || cfg.n_dirs > MAX_LIST ||
                    cfg.n_corpus > MAX_LIST || cfg.n_tpl > MAX_LIST))
        abort();
    for (int i = 0; i < cfg.n_tpl && i < MAX_LIST; i++) spade_template_free(cfg.tpl[i]), cfg.tpl[i] = NULL;
    return 0;
}
