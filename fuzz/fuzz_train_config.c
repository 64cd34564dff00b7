/* fuzz_train_config.c — libFuzzer harness for the run config of `spade train`
 * (cli/train_config.c: the inih handler of every section and the checks across
 * keys): the input is written to a config.ini in a private directory and read
 * by the function the command uses.
 * What it is not: a test of a run (tests/test_train.sh); nothing is trained.
 */
#include <stdlib.h>

#include "../cli/train_config.h"

#include "fuzz_util.h"

static tr_config cfg; /* ~1 MB: not on the stack */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file("config.ini", data, size);
    int rc = cli_train_config_load(path, NULL, &cfg);
    if (rc == 0 && (cfg.iterations < 0 || cfg.n_specs > TR_MAX_LIST || cfg.n_dirs > TR_MAX_LIST ||
                    cfg.n_corpus > TR_MAX_LIST || cfg.n_tpl > TR_MAX_LIST))
        abort();
    for (int i = 0; i < cfg.n_tpl && i < TR_MAX_LIST; i++) spade_template_free(cfg.tpl[i]), cfg.tpl[i] = NULL;
    return 0;
}
