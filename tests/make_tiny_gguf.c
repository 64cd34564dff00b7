/* make_tiny_gguf.c — the command the shell tests run to get tiny model files
 * (tests/tiny_gguf.h) and a trained checkpoint of one:
 *   make_tiny_gguf llama|qwen2 OUT.gguf [SEED]
 *   make_tiny_gguf --ckpt MODEL.gguf OUT.ckpt [STEPS]
 * The second loads the model as a policy (cpu_ref), takes STEPS (2) AdamW
 * steps of next-token loss on a fixed text (so its weights are no longer the
 * file's) and saves a spade checkpoint: what spade export is given.
 * What it is not: installed, or part of spade: a test helper (the tests name
 * it by its build path).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/pretrained.h"
#include "tiny_gguf.h"

static int train_ckpt(const char *model, const char *out, int steps) {
    char err[1200];
    spade_policy *p;
    spade_model_opts mo = {.backend = "cpu_ref", .context = 64};
    if (spade_policy_from_model(&p, model, &mo, err, sizeof err)) {
        fprintf(stderr, "make_tiny_gguf: %s\n", err);
        return 1;
    }
    static const char text[] = "int add(int a, int b) {\n    return a + b;\n}\nThe cat is on the mat, and the dog.";
    int tok[64], tg[64];
    size_t n = spade_tokenizer_encode(spade_policy_tokenizer(p), text, strlen(text), tok);
    if (n > 64) n = 64;
    for (size_t i = 0; i < n; i++) tg[i] = i + 1 < n ? tok[i + 1] : -1;
    spade_adamw_opts o;
    spade_adamw_opts_default(&o);
    o.lr = 1e-2f;
    int rc = 0;
    for (int s = 0; s < steps && !rc; s++) {
        float loss;
        rc = spade_policy_forward(p, tok, tg, NULL, 1, (int)n, &loss, NULL, err, sizeof err) ||
             spade_policy_backward(p, 1, err, sizeof err) || spade_policy_step(p, &o, NULL, err, sizeof err);
        if (!rc) fprintf(stderr, "make_tiny_gguf: step %d loss %.4f\n", s + 1, loss);
    }
    if (!rc) rc = spade_policy_save(p, out, err, sizeof err);
    if (rc) fprintf(stderr, "make_tiny_gguf: %s\n", err);
    spade_policy_free(p);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "--ckpt")) return train_ckpt(argv[2], argv[3], argc > 4 ? atoi(argv[4]) : 2);
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: make_tiny_gguf llama|qwen2 OUT.gguf [SEED]\n"
                        "       make_tiny_gguf --ckpt MODEL.gguf OUT.ckpt [STEPS]\n");
        return 2;
    }
    char err[512];
    if (tiny_gguf_write(argv[2], argv[1], argc > 3 ? strtoull(argv[3], NULL, 10) : 1, err, sizeof err)) {
        fprintf(stderr, "make_tiny_gguf: %s\n", err);
        return 1;
    }
    return 0;
}
