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
                 "return and mean steps; with --hint, the same seeds again with the hint (a MODEL reads\n"
                 "it as a system line, as in self-play; spade's own format after the first\n"
                 "observation), and the seeds won only with it and only without; and the random and\n"
                 "SOLVE agents on the same seeds (floor and ceiling). --suite heldout adds the held-out suite "
                 "(eval/heldout), environments\n"
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
            "\"failed\":%ld,\"tokens\":%ld,\"turns\":%ld,\"unboxed\":%ld}",
            name, a->n, a->success, a->lo, a->hi, a->mean_return, a->mean_steps, a->failed, a->tokens, a->turns,
            a->unboxed);
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

/* What one `spade eval` holds, from its options to its rows; its phases fill
 * it in order and eval_close frees it. One per process (the tables are large:
 * static, as they were). */
typedef struct eval_run {
    spade_eval_opts o;
    const char *suite, *jsonl, *token_file, *token_env, *ckpt;
    char *servers;
    long context;
    /* --servers: the arms play on running servers (core/served_episodes.h) */
    spade_served_opts so;
    char token[CLI_TOKEN_MAX + 1];
    const char *addrs[64];
    /* the environments: n of them, from the command line then the suite */
    int n;
    char paths[MAX_ENVS][SPADE_PATH_MAX], params[MAX_ENVS][SPADE_SPEC_PARAMS_MAX], names[MAX_ENVS][300];
    char *srcs[MAX_ENVS];
    spade_ep_spec specs[MAX_ENVS];
    spade_eval_row rows[MAX_ENVS];
    /* the policy: a checkpoint or model (p), a remote endpoint, or neither ('none') */
    spade_policy *p;
    char rurl[1024], rmodel[256];
    spade_remote *remote;
    remote_maker maker;
    char err[2048];
} eval_run;

static void eval_close(eval_run *r) {
    for (int i = 0; i < MAX_ENVS; i++) free(r->srcs[i]);
    spade_policy_free(r->p);
    spade_remote_free(r->remote);
}

enum { EVAL_GO = -1 }; /* a phase's "carry on"; anything else is the command's status */

/* The options into r; argv[optind] is then the checkpoint. */
static int eval_options(eval_run *r, int argc, char **argv) {
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
    spade_eval_opts *o = &r->o;
    long v;
    uint64_t seed;
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "s:n:HghS:Rj:r:A:c:", longopts, NULL)) != -1) {
        switch (ch) {
        case 's': r->suite = optarg; break;
        case 'n':
            if (cli_parse_long("eval", "--episodes", optarg, 1, 1000000, &v) < 0) return CLI_USAGE;
            o->episodes = (int)v;
            break;
        case 'H': o->hint = 1; break;
        case 'S':
            if (cli_parse_u64("eval", "--seed", optarg, &seed) < 0) return CLI_USAGE;
            o->seed = seed;
            break;
        case 'g': o->temperature = 0; break;
        case 'R': o->references = 0; break;
        case 'j': r->jsonl = optarg; break;
        case 'V': r->servers = optarg; break;
        case 'T': r->token_file = optarg; break;
        case 'E': r->token_env = optarg; break;
        case 'r':
            if (cli_parse_long("eval", "--reasoning-tokens", optarg, 0, 8192, &v) < 0) return CLI_USAGE;
            o->reasoning_tokens = (int)v;
            break;
        case 'A':
            if (cli_parse_long("eval", "--action-tokens", optarg, 1, 4096, &v) < 0) return CLI_USAGE;
            o->max_action_tokens = (int)v;
            break;
        case 'c':
            if (cli_parse_long("eval", "--context", optarg, 64, 65536, &r->context) < 0) return CLI_USAGE;
            break;
        case 'h': cli_usage_eval(stdout); return CLI_OK;
        default: return cli_bad_option("eval", argc, argv, optopt);
        }
    }
    if (optind >= argc) return cli_err(CLI_USAGE, "eval", "name a checkpoint (or 'none') first (spade eval --help)");
    if (r->suite && strcmp(r->suite, "heldout"))
        return cli_err(CLI_USAGE, "eval", "unknown suite '%s' (heldout)", r->suite);
    return EVAL_GO;
}

/* --servers HOST:PORT,... and their token into r->so, which the arms then play on. */
static int eval_servers(eval_run *r) {
    spade_served_opts_default(&r->so);
    if ((r->token_file || r->token_env) && !r->servers)
        return cli_err(CLI_USAGE, "eval", "--token-file/--token-env go with --servers");
    if (!r->servers) return EVAL_GO;
    size_t tl;
    if ((r->token_file || r->token_env) &&
        cli_read_token("eval", r->token_file, r->token_env, r->token, sizeof r->token, &tl) < 0)
        return CLI_USAGE;
    for (char *save = NULL, *t = strtok_r(r->servers, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (r->so.n_servers == 64) return cli_err(CLI_USAGE, "eval", "--servers: at most 64");
        r->addrs[r->so.n_servers++] = t;
    }
    if (!r->so.n_servers) return cli_err(CLI_USAGE, "eval", "--servers: no HOST:PORT given");
    r->so.servers = r->addrs;
    r->so.token = r->token_file || r->token_env ? r->token : NULL;
    r->o.served = &r->so;
    return EVAL_GO;
}

/* The environments named on the command line (n_specs of them from argv[first]), read. */
static int eval_specs(eval_run *r, char **argv, int first, int n_specs) {
    for (int i = 0; i < n_specs && r->n < MAX_ENVS; i++, r->n++) {
        int n = r->n;
        size_t len;
        if (cli_load_spec("eval", argv[first + i], r->paths[n], sizeof r->paths[n], r->params[n], sizeof r->params[n],
                          &r->srcs[n], &len))
            return CLI_FAIL;
        r->specs[n] = (spade_ep_spec){.filename = r->paths[n],
                                      .source = r->srcs[n],
                                      .len = len,
                                      .params = r->params[n][0] ? r->params[n] : NULL,
                                      .expected = r->o.episodes};
        snprintf(r->names[n], sizeof r->names[n], "%s", argv[first + i]);
    }
    return EVAL_GO;
}

/* The held-out suite's environments after them, each named by its file's stem;
 * one that cannot be read is left out, as are those past MAX_ENVS. */
static int eval_suite(eval_run *r) {
    char dir[SPADE_PATH_MAX], **files;
    int nf;
    if (spade_heldout_dir(dir, sizeof dir, r->err, sizeof r->err) < 0 ||
        spade_heldout_files(dir, &files, &nf, r->err, sizeof r->err) < 0)
        return cli_err(CLI_FAIL, "eval", "%s", r->err);
    for (int i = 0; i < nf; i++) {
        int n = r->n;
        if (n < MAX_ENVS) {
            size_t len;
            snprintf(r->paths[n], sizeof r->paths[n], "%s", files[i]);
            if (spade_read_source(files[i], &r->srcs[n], &len, r->err, sizeof r->err) == 0) {
                r->specs[n] = (spade_ep_spec){
                    .filename = r->paths[n], .source = r->srcs[n], .len = len, .expected = r->o.episodes};
                const char *b = strrchr(files[i], '/');
                snprintf(r->names[n], sizeof r->names[n], "%.*s", (int)strcspn(b + 1, "."), b + 1);
                r->n++;
            }
        }
        free(files[i]);
    }
    free(files);
    return EVAL_GO;
}

/* A remote:URL#MODEL policy: its client, and the agents the arms make of it. */
static int eval_open_remote(eval_run *r) {
    spade_remote_opts ro;
    spade_remote_opts_default(&ro);
    ro.url = r->rurl;
    ro.model = r->rmodel;
    ro.api_key_env = getenv("SPADE_API_KEY_ENV");
    ro.temperature = r->o.temperature;
    ro.max_tokens = r->o.max_action_tokens;
    const char *c = getenv("SPADE_REMOTE_CONCURRENCY");
    if (c) ro.concurrency = atoi(c);
    if ((c = getenv("SPADE_REMOTE_RETRIES"))) ro.retries = atoi(c); /* spade_remote_new checks the range */
    if (spade_remote_new(&r->remote, &ro, r->err, sizeof r->err) < 0) return cli_err(CLI_FAIL, "eval", "%s", r->err);
    r->maker = (remote_maker){.r = r->remote,
                              .seed = r->o.seed ^ 0x6576616cULL,
                              .reasoning_tokens = r->o.reasoning_tokens,
                              .answer_tokens = r->o.max_action_tokens};
    r->o.make_agent = make_remote;
    r->o.agent_ctx = &r->maker;
    return EVAL_GO;
}

/* The policy r->ckpt names: remote, 'none', or a checkpoint or model loaded. */
static int eval_open_policy(eval_run *r) {
    int is_remote =
        spade_remote_parse_spec(r->ckpt, r->rurl, sizeof r->rurl, r->rmodel, sizeof r->rmodel, r->err, sizeof r->err);
    if (is_remote < 0) return cli_err(CLI_USAGE, "eval", "%s", r->err);
    if (is_remote) return eval_open_remote(r);
    if (strcmp(r->ckpt, "none") && cli_load_policy(r->ckpt, (int)r->context, &r->p, r->err, sizeof r->err))
        return cli_err(CLI_FAIL, "eval", "%s", r->err);
    return EVAL_GO;
}

/* Environment i's line of the table on t, and its JSON object on j when there is one. */
static void eval_row(const eval_run *r, int i, FILE *t, FILE *j) {
    const spade_eval_opts *o = &r->o;
    const spade_eval_row *row = &r->rows[i];
    int has_policy = r->p || r->remote;
    char a[64], b[64], rd[64], s[64];
    cell(a, sizeof a, &row->policy);
    cell(b, sizeof b, &row->hint);
    cell(rd, sizeof rd, &row->random);
    cell(s, sizeof s, &row->solve);
    const spade_eval_arm *m = has_policy ? &row->policy : &row->random;
    fprintf(t, "| %s | %s | %s%s%.3f | %.1f | %s | %s |\n", r->names[i], a, o->hint ? b : "", o->hint ? " | " : "",
            m->mean_return, m->mean_steps, rd, s);
    if (!j) return;
    fprintf(j, "{\"env\":\"%s\",\"episodes\":%d,\"seed\":%llu", r->names[i], o->episodes, (unsigned long long)o->seed);
    if (r->remote) fprintf(j, ",\"endpoint\":\"%s\",\"model\":\"%s\"", spade_remote_endpoint(r->remote), r->rmodel);
    if (has_policy) arm_json(j, "policy", &row->policy);
    if (o->hint && has_policy) {
        arm_json(j, "hint", &row->hint);
        fprintf(j, ",\"hint_only\":%ld,\"policy_only\":%ld", row->hint_only, row->policy_only);
    }
    if (o->references) arm_json(j, "random", &row->random), arm_json(j, "solve", &row->solve);
    fprintf(j, "}\n");
}

/* What the policy wrote over all environments, per arm, and the hint arm's pairs. */
static void eval_writing(const eval_run *r, FILE *t) {
    const spade_eval_opts *o = &r->o;
    for (int h = 0; r->p && h <= (o->hint ? 1 : 0); h++) {
        long n = 0, tokens = 0, turns = 0, unboxed = 0;
        for (int i = 0; i < r->n; i++) {
            const spade_eval_arm *a = h ? &r->rows[i].hint : &r->rows[i].policy;
            n += a->n, tokens += a->tokens, turns += a->turns, unboxed += a->unboxed;
        }
        fprintf(t, "%s wrote %.1f tokens in %.1f turns an episode; %ld of %ld turns had no \\boxed{}\n",
                h ? "policy + hint" : "policy", n ? (double)tokens / n : 0, n ? (double)turns / n : 0, unboxed, turns);
    }
    if (!o->hint || !(r->p || r->remote)) return;
    long ho = 0, po = 0;
    for (int i = 0; i < r->n; i++) ho += r->rows[i].hint_only, po += r->rows[i].policy_only;
    fprintf(t, "paired seeds: %ld won only with the hint, %ld only without\n", ho, po);
}

/* The markdown table and its mean line (on stderr when stdout carries the
 * JSONL, so that stdout stays clean JSON), and the JSONL with its summary. */
static int eval_print(const eval_run *r) {
    const spade_eval_opts *o = &r->o;
    FILE *j = NULL;
    if (r->jsonl) {
        j = strcmp(r->jsonl, "-") ? fopen(r->jsonl, "w") : stdout;
        if (!j) return cli_err(CLI_FAIL, "eval", "%s: cannot write", r->jsonl);
    }
    FILE *t = j == stdout ? stderr : stdout;
    fprintf(t, "| environment | policy | %smean return | mean steps | random | solve |\n",
            o->hint ? "policy + hint | " : "");
    fprintf(t, "|---|---|%s---|---|---|---|\n", o->hint ? "---|" : "");
    double sum[4] = {0};
    for (int i = 0; i < r->n; i++) {
        eval_row(r, i, t, j);
        sum[0] += r->rows[i].policy.success;
        sum[1] += r->rows[i].hint.success;
        sum[2] += r->rows[i].random.success;
        sum[3] += r->rows[i].solve.success;
    }
    int n = r->n;
    char hint_part[64] = "";
    if (o->hint) snprintf(hint_part, sizeof hint_part, ", with hint %.3f", sum[1] / n);
    fprintf(t, "\nmean over %d environments: policy %.3f%s, random %.3f, solve %.3f\n", n, sum[0] / n, hint_part,
            sum[2] / n, sum[3] / n);
    eval_writing(r, t);
    if (j) {
        fprintf(j, "{\"summary\":true,\"envs\":%d,\"policy\":%.6f,\"hint\":%.6f,\"random\":%.6f,\"solve\":%.6f}\n", n,
                sum[0] / n, sum[1] / n, sum[2] / n, sum[3] / n);
        if (j != stdout) fclose(j);
    }
    return CLI_OK;
}

/* The phases after the options, each carrying on or giving the status. */
static int eval_phases(eval_run *r, spade_sandbox *sb, int argc, char **argv) {
    int rc;
    if ((rc = eval_servers(r)) != EVAL_GO) return rc;
    r->ckpt = argv[optind++];
    int n_specs = argc - optind;
    if (!r->suite && !n_specs) return cli_err(CLI_USAGE, "eval", "name environments or --suite heldout");
    if ((rc = eval_specs(r, argv, optind, n_specs)) != EVAL_GO) return rc;
    if (r->suite && (rc = eval_suite(r)) != EVAL_GO) return rc;
    if ((rc = eval_open_policy(r)) != EVAL_GO) return rc;
    if (spade_eval(r->p, sb, r->specs, r->n, &r->o, r->rows, r->err, sizeof r->err) < 0)
        return cli_err(CLI_FAIL, "eval", "%s", r->err);
    return eval_print(r);
}

int cli_eval(spade_sandbox *sb, int argc, char **argv) {
    static eval_run r;
    memset(&r, 0, sizeof r);
    spade_eval_opts_default(&r.o);
    int rc = eval_options(&r, argc, argv);
    if (rc != EVAL_GO) return rc;
    rc = eval_phases(&r, sb, argc, argv);
    eval_close(&r);
    return rc;
}
