/* cmd_export.c — `spade export CKPT|MODEL --gguf OUT.gguf [--type f32|f16|q8_0]`:
 * a trained policy as a GGUF file for llama.cpp, Ollama or anything that
 * reads GGUF.
 *
 * What it is: load a spade checkpoint of the Llama family (or a model,
 * a known NAME or a PATH.gguf: exporting the untouched model is the
 * round-trip test), then core/policy/gguf_export.c writes it. One line on
 * stdout says what was written. A GPT checkpoint is refused before its
 * weights are read.
 * What it is not: the exporter itself, or a converter of other formats.
 */
#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "policy/gguf.h"
#include "policy/models.h"
#include "policy/policy.h"
#include "policy/pretrained.h"

#define CMD "export"

void cli_usage_export(FILE *out) {
    fprintf(out, "usage: spade export CKPT|MODEL --gguf OUT.gguf [--type f32|f16|q8_0] [--backend B]\n"
                 "\n"
                 "Writes a policy of the Llama family (a checkpoint of a policy started from a GGUF model,\n"
                 "or a model itself: a known NAME or a PATH.gguf) as a GGUF file llama.cpp loads.\n"
                 "  --gguf OUT     the file to write (atomically: OUT.tmp.PID, then renamed)\n"
                 "  --type T       f32 (default), f16 or q8_0 for the matrices; norms and biases stay f32\n"
                 "  --backend B    where the checkpoint is loaded (cpu: the default; the weights only pass through)\n");
}

static int is_model_spec(const char *s) {
    size_t n = strlen(s);
    return spade_model_find(s) || (n > 5 && !strcmp(s + n - 5, ".gguf"));
}

int cli_export(spade_sandbox *sb, int argc, char **argv) {
    (void)sb;
    static const struct option opts[] = {
        {"gguf", required_argument, 0, 'g'},
        {"type", required_argument, 0, 't'},
        {"backend", required_argument, 0, 'b'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *out = NULL, *backend = "cpu";
    int type = SPADE_GGML_F32, opt;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (opt) {
        case 'g': out = optarg; break;
        case 't':
            if (spade_export_type_parse(optarg, &type))
                return cli_err(CLI_USAGE, CMD, "--type '%s': expected f32, f16 or q8_0", optarg);
            break;
        case 'b': backend = optarg; break;
        case 'h': cli_usage_export(stdout); return CLI_OK;
        default: return cli_bad_option(CMD, argc, argv, optopt);
        }
    }
    if (optind + 1 != argc) return cli_err(CLI_USAGE, CMD, "expected one CKPT or MODEL (spade export --help)");
    if (!out) return cli_err(CLI_USAGE, CMD, "--gguf OUT.gguf is required");
    const char *spec = argv[optind];
    char err[1200];
    spade_policy *p = NULL;
    int rc;
    if (is_model_spec(spec)) {
        /* no position is computed: the smallest context the model allows */
        spade_model_opts mo = {.backend = backend};
        spade_gpt_config mc;
        if ((rc = spade_model_config(spec, &mo, &mc, err, sizeof err))) return cli_err(CLI_FAIL, CMD, "%s", err);
        mo.context = mc.context < 64 ? mc.context : 64;
        rc = spade_policy_from_model(&p, spec, &mo, err, sizeof err);
    } else {
        spade_gpt_config cc;
        if ((rc = spade_policy_read_config(spec, &cc, err, sizeof err))) return cli_err(CLI_FAIL, CMD, "%s", err);
        if (strcmp(cc.arch, "llama"))
            return cli_err(CLI_FAIL, CMD,
                           "%s: a GPT checkpoint (policy.arch = gpt): llama.cpp has no architecture that computes "
                           "spade's GPT with its tokenizer; export takes a Llama-family policy (one started from "
                           "[policy] model = NAME|PATH.gguf)",
                           spec);
        rc = spade_policy_load_weights(&p, spec, backend, err, sizeof err);
    }
    if (rc) return cli_err(CLI_FAIL, CMD, "%s", err);
    spade_export_info info;
    rc = spade_policy_export_gguf(p, out, type, &info, err, sizeof err);
    const spade_gpt_config *c = spade_policy_config(p);
    if (!rc)
        printf("%s: %s, %d layers, width %d, vocabulary %d, %s, %d tensors, %zu parameters (tokenizer from %s)\n", out,
               info.arch, c->layers, c->width, c->vocab, spade_export_type_name(type), info.n_tensors, info.n_params,
               info.source);
    spade_policy_free(p);
    if (rc) return cli_err(CLI_FAIL, CMD, "%s", err);
    return CLI_OK;
}
