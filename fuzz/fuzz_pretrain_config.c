/* fuzz_pretrain_config.c — libFuzzer harness for the config of
 * `spade pretrain` (the inih handler and the checks of load_config in
 * cli/cmd_pretrain.c): the input is written to config.ini in a private
 * directory and read by the same function the command uses.
 * The parser is a static function of the command; this file includes
 * cmd_pretrain.c whole, so the harness calls load_config itself and nothing
 * in the command changes.
 * What it is not: a test of pretraining (tests/test_policy_pretrain.c).
 */
#include "../cli/cmd_pretrain.c"

#include "fuzz_util.h"

static pt_config cfg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file("config.ini", data, size);
    memset(&cfg, 0, sizeof cfg);
    int rc = load_config(path, &cfg);
    if (rc != 0 && rc != 1 && rc != 2) abort();
    if (rc == 0 && (cfg.seq < 1 || cfg.seq > cfg.gpt.context || !cfg.data[0])) abort();
    return 0;
}
