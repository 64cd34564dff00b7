/* cmd_eval.c — `spade eval CKPT|MODEL [SPEC...] [--suite heldout]`: how often a
 * policy succeeds on each environment, with a Wilson 95% interval, the hint
 * arm beside it when asked, and the random and SOLVE agents on the same seeds
 * as floor and ceiling; a markdown table on stdout and JSONL on request.
 * What it is not: the measurement (agent/eval.h).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "agent/eval.h"
#include "cli.h"
#include "agent/remote_agent.h"
#include "heldout.h"
#include "remote.h"
#include "served_episodes.h"

#define MAX_ENVS 256

void cli_usage_eval(FILE *out) {
    fprintf(out, "usage: spade eval CKPT|MODEL [SPEC...] [--suite heldout] [--episodes N] [--hint] [--seed S]\n"
                 "                  [--greedy] [--no-reference] [--jsonl FILE] [--reasoning-tokens R]\n"
                 "                  [--action-tokens A] [--context C]\n"
                 "                  [--servers HOST:PORT,... [--token-file F | --token-env VAR]]\n"
                 "\n"
                 "Plays each environment N times (seeds S, S+1, ...) with the policy of checkpoint\n"
                 "CKPT, or of the pretrained MODEL (a known name or a .gguf, in its chat template),\n"
                 "and prints, per environment, its success rate with a Wilson 95%% interval, mean\n"
                 "return and mean steps; with --hint, the same seeds again with the hint appended to\n"
                 "the first observation; and the random and SOLVE agents on the same seeds (floor\n"
                 "and ceiling). --suite heldout adds the held-out suite (eval/heldout), environments\n"
                 "whose mechanics are never trained on. CKPT may be 'none' for the reference columns only.\n"
                 "\n"
                 "  -s, --suite NAME     heldout\n"
                 "  -n, --episodes N     per environment and arm (default 32)\n"
                 "  -H, --hint           also the hint arm\n"
                 "      --seed S         first seed (default 0)\n"
                 "  -g, --greedy         the policy samples at temperature 0 (default 1, as in training)\n"
                 "      --no-reference   skip the random and SOLVE columns\n"
                 "      --jsonl FILE     one JSON object per environment and a summary ('-': stdout)\n"
                 "  -r, --reasoning-tokens R  tokens the policy may write before its answer, which is then\n"
                 "                       its last \\boxed{...} (default 0: it answers at once)\n"
                 "  -A, --action-tokens A  tokens of the answer itself (default 32)\n"
                 "  -c, --context C      a MODEL's context (default: the model's, at most 2048)\n"
                 "      --servers LIST   play on running `spade serve --listen` servers (HOST:PORT,\n"
                 "                       comma-separated) instead of this host's sandbox (docs/scale.md)\n"
                 "      --token-file F, --token-env VAR  the servers' shared token\n"
                 "  -h, --help           this help\n");
}

static void arm_json(FILE *f, const char *name, const spade_eval_arm *a) {
    fprintf(f,
            ",\"%s\":{\"n\":%ld,\"success\":%.6f,\"lo\":%.6f,\"hi\":%.6f,\"mean_return\":%.6f,\"mean_steps\":%.4f,"
            "\"failed\":%ld}",
            name, a->n, a->success, a->lo, a->hi, a->mean_return, a->mean_steps, a->failed);
}

typedef struct remote_maker {
    spade_remote *r;
    uint64_t seed;
    int reasoning_tokens, answer_tokens;
} remote_maker;

static spade_agent *make_remote(void *ctx, char *err, size_t errlen) {
    remote_maker *m = ctx;
    return spade_agent_remote(m->r, m->seed, m->reasoning_tokens, m->answer_tokens, err, errlen);
}

static void cell(char *buf, size_t cap, const spade_eval_arm *a) {
    if (!a->n)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.2f [%.2f, %.2f]", a->success, a->lo, a->hi);
}

int cli_eval(spade_sandbox *sb, int argc, char **argv) {
    static const struct option longopts[] = {{"suite", required_argument, 0, 's'},
                                             {"episodes", required_argument, 0, 'n'},
                                             {"hint", no_argument, 0, 'H'},
                                             {"seed", required_argument, 0, 'S'},
                                             {"greedy", no_argument, 0, 'g'},
                                             {"no-reference", no_argument, 0, 'R'},
                                             {"jsonl", required_argument, 0, 'j'},
                                             {"servers", required_argument, 0, 'V'},
                                             {"token-file", required_argument, 0, 'T'},
                                             {"token-env", required_argument, 0, 'E'},
                                             {"reasoning-tokens", required_argument, 0, 'r'},
                                             {"action-tokens", required_argument, 0, 'A'},
                                             {"context", required_argument, 0, 'c'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    spade_eval_opts o;
    spade_eval_opts_default(&o);
    const char *suite = NULL, *jsonl = NULL, *token_file = NULL, *token_env = NULL;
    char *servers = NULL;
    long v, context = 0;
    uint64_t seed;
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "s:n:HghS:Rj:r:A:c:", longopts, NULL)) != -1) {
        switch (ch) {
        case 's': suite = optarg; break;
        case 'n':
            if (cli_parse_long("eval", "--episodes", optarg, 1, 1000000, &v) < 0) return CLI_USAGE;
            o.episodes = (int)v;
            break;
        case 'H': o.hint = 1; break;
        case 'S':
            if (cli_parse_u64("eval", "--seed", optarg, &seed) < 0) return CLI_USAGE;
            o.seed = seed;
            break;
        case 'g': o.temperature = 0; break;
        case 'R': o.references = 0; break;
        case 'j': jsonl = optarg; break;
        case 'V': servers = optarg; break;
        case 'T': token_file = optarg; break;
        case 'E': token_env = optarg; break;
        case 'r':
            if (cli_parse_long("eval", "--reasoning-tokens", optarg, 0, 8192, &v) < 0) return CLI_USAGE;
            o.reasoning_tokens = (int)v;
            break;
        case 'A':
            if (cli_parse_long("eval", "--action-tokens", optarg, 1, 4096, &v) < 0) return CLI_USAGE;
            o.max_action_tokens = (int)v;
            break;
        case 'c':
            if (cli_parse_long("eval", "--context", optarg, 64, 65536, &context) < 0) return CLI_USAGE;
            break;
        case 'h': cli_usage_eval(stdout); return CLI_OK;
        default: return cli_bad_option("eval", argc, argv, optopt);
        }
    }
    if (optind >= argc) return cli_err(CLI_USAGE, "eval", "name a checkpoint (or 'none') first (spade eval --help)");
    if (suite && strcmp(suite, "heldout")) return cli_err(CLI_USAGE, "eval", "unknown suite '%s' (heldout)", suite);
    /* --servers: the arms play on running servers (core/served_episodes.h) */
    static char token[CLI_TOKEN_MAX + 1];
    static const char *addrs[64];
    spade_served_opts so;
    spade_served_opts_default(&so);
    if ((token_file || token_env) && !servers)
        return cli_err(CLI_USAGE, "eval", "--token-file/--token-env go with --servers");
    if (servers) {
        size_t tl;
        if ((token_file || token_env) && cli_read_token("eval", token_file, token_env, token, sizeof token, &tl) < 0)
            return CLI_USAGE;
        for (char *save = NULL, *t = strtok_r(servers, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (so.n_servers == 64) return cli_err(CLI_USAGE, "eval", "--servers: at most 64");
            addrs[so.n_servers++] = t;
        }
        if (!so.n_servers) return cli_err(CLI_USAGE, "eval", "--servers: no HOST:PORT given");
        so.servers = addrs;
        so.token = token_file || token_env ? token : NULL;
        o.served = &so;
    }
    const char *ckpt = argv[optind++];
    int n_specs = argc - optind;
    if (!suite && !n_specs) return cli_err(CLI_USAGE, "eval", "name environments or --suite heldout");
    static char paths[MAX_ENVS][SPADE_PATH_MAX], params[MAX_ENVS][SPADE_SPEC_PARAMS_MAX], names[MAX_ENVS][300];
    static spade_ep_spec specs[MAX_ENVS];
    static spade_eval_row rows[MAX_ENVS];
    char *srcs[MAX_ENVS] = {0};
    int n = 0, rc = CLI_FAIL;
    char err[2048];
    spade_policy *p = NULL;
    char rurl[1024], rmodel[256];
    spade_remote *remote = NULL;
    remote_maker maker = {0};
    for (int i = 0; i < n_specs && n < MAX_ENVS; i++, n++) {
        size_t len;
        if (cli_load_spec("eval", argv[optind + i], paths[n], sizeof paths[n], params[n], sizeof params[n], &srcs[n],
                          &len))
            goto done;
        specs[n] = (spade_ep_spec){.filename = paths[n],
                                   .source = srcs[n],
                                   .len = len,
                                   .params = params[n][0] ? params[n] : NULL,
                                   .expected = o.episodes};
        snprintf(names[n], sizeof names[n], "%s", argv[optind + i]);
    }
    if (suite) {
        char dir[SPADE_PATH_MAX], **files;
        int nf;
        if (spade_heldout_dir(dir, sizeof dir, err, sizeof err) < 0 ||
            spade_heldout_files(dir, &files, &nf, err, sizeof err) < 0) {
            cli_err(CLI_FAIL, "eval", "%s", err);
            goto done;
        }
        for (int i = 0; i < nf; i++) {
            if (n < MAX_ENVS) {
                size_t len;
                snprintf(paths[n], sizeof paths[n], "%s", files[i]);
                if (spade_read_source(files[i], &srcs[n], &len, err, sizeof err) == 0) {
                    specs[n] =
                        (spade_ep_spec){.filename = paths[n], .source = srcs[n], .len = len, .expected = o.episodes};
                    const char *b = strrchr(files[i], '/');
                    snprintf(names[n], sizeof names[n], "%.*s", (int)strcspn(b + 1, "."), b + 1);
                    n++;
                }
            }
            free(files[i]);
        }
        free(files);
    }
    int is_remote = spade_remote_parse_spec(ckpt, rurl, sizeof rurl, rmodel, sizeof rmodel, err, sizeof err);
    if (is_remote < 0) {
        cli_err(CLI_USAGE, "eval", "%s", err);
        rc = CLI_USAGE;
        goto done;
    }
    if (is_remote) {
        spade_remote_opts ro;
        spade_remote_opts_default(&ro);
        ro.url = rurl;
        ro.model = rmodel;
        ro.api_key_env = getenv("SPADE_API_KEY_ENV");
        ro.temperature = o.temperature;
        ro.max_tokens = o.max_action_tokens;
        const char *c = getenv("SPADE_REMOTE_CONCURRENCY");
        if (c) ro.concurrency = atoi(c);
        if ((c = getenv("SPADE_REMOTE_RETRIES"))) ro.retries = atoi(c); /* spade_remote_new checks the range */
        if (spade_remote_new(&remote, &ro, err, sizeof err) < 0) {
            cli_err(CLI_FAIL, "eval", "%s", err);
            goto done;
        }
        maker = (remote_maker){.r = remote,
                               .seed = o.seed ^ 0x6576616cULL,
                               .reasoning_tokens = o.reasoning_tokens,
                               .answer_tokens = o.max_action_tokens};
        o.make_agent = make_remote;
        o.agent_ctx = &maker;
    } else if (strcmp(ckpt, "none") && cli_load_policy(ckpt, (int)context, &p, err, sizeof err)) {
        cli_err(CLI_FAIL, "eval", "%s", err);
        goto done;
    }
    if (spade_eval(p, sb, specs, n, &o, rows, err, sizeof err) < 0) {
        cli_err(CLI_FAIL, "eval", "%s", err);
        goto done;
    }
    FILE *j = NULL;
    if (jsonl) {
        j = strcmp(jsonl, "-") ? fopen(jsonl, "w") : stdout;
        if (!j) {
            cli_err(CLI_FAIL, "eval", "%s: cannot write", jsonl);
            goto done;
        }
    }
    FILE *t = j == stdout ? stderr : stdout; /* stdout stays clean JSON when it carries JSONL */
    fprintf(t, "| environment | policy | %smean return | mean steps | random | solve |\n",
            o.hint ? "policy + hint | " : "");
    fprintf(t, "|---|---|%s---|---|---|---|\n", o.hint ? "---|" : "");
    double sum[4] = {0};
    for (int i = 0; i < n; i++) {
        char a[64], b[64], r[64], s[64];
        cell(a, sizeof a, &rows[i].policy);
        cell(b, sizeof b, &rows[i].hint);
        cell(r, sizeof r, &rows[i].random);
        cell(s, sizeof s, &rows[i].solve);
        const spade_eval_arm *m = p || remote ? &rows[i].policy : &rows[i].random;
        fprintf(t, "| %s | %s | %s%s%.3f | %.1f | %s | %s |\n", names[i], a, o.hint ? b : "", o.hint ? " | " : "",
                m->mean_return, m->mean_steps, r, s);
        sum[0] += rows[i].policy.success;
        sum[1] += rows[i].hint.success;
        sum[2] += rows[i].random.success;
        sum[3] += rows[i].solve.success;
        if (j) {
            fprintf(j, "{\"env\":\"%s\",\"episodes\":%d,\"seed\":%llu", names[i], o.episodes,
                    (unsigned long long)o.seed);
            if (remote) fprintf(j, ",\"endpoint\":\"%s\",\"model\":\"%s\"", spade_remote_endpoint(remote), rmodel);
            if (p || remote) arm_json(j, "policy", &rows[i].policy);
            if (o.hint && (p || remote)) arm_json(j, "hint", &rows[i].hint);
            if (o.references) arm_json(j, "random", &rows[i].random), arm_json(j, "solve", &rows[i].solve);
            fprintf(j, "}\n");
        }
    }
    char hint_part[64] = "";
    if (o.hint) snprintf(hint_part, sizeof hint_part, ", with hint %.3f", sum[1] / n);
    fprintf(t, "\nmean over %d environments: policy %.3f%s, random %.3f, solve %.3f\n", n, sum[0] / n, hint_part,
            sum[2] / n, sum[3] / n);
    if (j) {
        fprintf(j, "{\"summary\":true,\"envs\":%d,\"policy\":%.6f,\"hint\":%.6f,\"random\":%.6f,\"solve\":%.6f}\n", n,
                sum[0] / n, sum[1] / n, sum[2] / n, sum[3] / n);
        if (j != stdout) fclose(j);
    }
    rc = CLI_OK;
done:
    for (int i = 0; i < MAX_ENVS; i++) free(srcs[i]);
    spade_policy_free(p);
    spade_remote_free(remote);
    return rc;
}
