/* cmd_play.c — `spade play SPEC`: a person plays an environment in the
 * terminal, one action per line, with :commands for the hint, the reference
 * action, resets and help.
 *
 * The environment is served hot (spade_hotenv): edit the file while playing
 * and the next episode uses the new version; a version that does not compile
 * is reported with its line and the old one keeps serving. Input may be piped:
 * without a terminal there is no prompt, each line read is echoed after "> "
 * so the transcript reads like a session, and EOF ends the session cleanly.
 * What it is not: an agent or an evaluator (spade run).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/policy_agent.h"
#include "cli.h"

void cli_usage_play(FILE *out) {
    fprintf(out, "usage: spade play SPEC [--seed S] [--policy CKPT]\n"
                 "\n"
                 "Plays the environment SPEC (NAME or FILE.c, optionally :key=value,...) in the terminal.\n"
                 "Each line you type is one action; lines starting with ':' are commands:\n"
                 "  :hint          print the privileged hint for the current state\n"
                 "  :solve         print the environment's reference action (not played)\n"
                 "  :reset [SEED]  start a new episode (default: the next seed)\n"
                 "  :info          the environment's name, params, limits and tools\n"
                 "  :help          this list\n"
                 "  :quit          leave (end of input does the same)\n"
                 "  ::text         play the action ':text'\n"
                 "  :policy, :p    with --policy CKPT: the policy of that checkpoint plays the next step\n"
                 "                 (its action is shown after 'policy> '); you can go on typing your own\n"
                 "The return is printed at the end of each episode, and the next episode starts\n"
                 "with the next seed. Edit the file while playing: the next episode uses the new\n"
                 "version (a version that does not compile is reported and the old one kept).\n"
                 "\n"
                 "  -s, --seed S   seed of the first episode (default 0)\n"
                 "  -h, --help     this help\n");
}

typedef struct session {
    spade_hotenv *h;
    spade_hotenv_version *v; /* the version the current episode runs on */
    int inst; /* instance id in v->worker */
    uint64_t seed;
    int steps, in_episode;
    int failures; /* calls the environment failed (crash, timeout, ...): reported, the session goes on */
    long episodes, wins;
    long started; /* episodes begun, the one running included: its number (a :reset begins a new one) */
    char shown_error[1200]; /* last reload error printed, to print each once */
    char *obs; /* the latest observation (for :policy) */
    size_t obs_len;
    spade_agent *policy; /* --policy CKPT: the policy agent, and its state for this episode */
    void *policy_state;
    int policy_live;
} session;

static void keep_obs(session *s, const char *obs, size_t len) {
    char *n = realloc(s->obs, len + 1);
    if (!n) return;
    memcpy(n, obs, len);
    n[len] = 0;
    s->obs = n;
    s->obs_len = len;
}

static spade_ep_view policy_view(const session *s) {
    spade_ep_view v;
    memset(&v, 0, sizeof v);
    v.episode = s->started;
    v.seed = s->seed;
    v.step = s->steps;
    v.obs = s->obs ? s->obs : "";
    v.obs_len = s->obs_len;
    v.info = s->v ? s->v->info : NULL;
    v.state = s->policy_state;
    return v;
}

/* The policy's slot follows the episodes: ended with the old one, begun with the new one. */
static void policy_episode(session *s) {
    if (!s->policy) return;
    spade_ep_view v = policy_view(s);
    if (s->policy_live && s->policy->end) {
        spade_ep_outcome o;
        memset(&o, 0, sizeof o);
        s->policy->end(s->policy->ctx, &v, s->policy_state, &o);
    }
    s->policy_live = 0;
    s->policy_state = NULL;
    char err[512];
    if (s->in_episode && s->policy->begin(s->policy->ctx, &v, &s->policy_state, err, sizeof err) == 0)
        s->policy_live = 1;
}

static void print_text(const char *prefix, const char *text, size_t len) {
    fputs(prefix, stdout);
    fwrite(text, 1, len, stdout);
    if (!len || text[len - 1] != '\n') putchar('\n');
}

static void print_info(const spade_env_info *in, const double *values) {
    printf("%s (%s): %s\n", in->name, *in->family ? in->family : "no family", in->description);
    printf("max_steps %d, success when return >= %g, %s\n", in->max_steps, in->success,
           in->has_solve ? "has a reference solution (:solve)" : "no reference solution");
    for (int i = 0; i < in->n_params; i++) {
        char d[32], lo[32], hi[32];
        printf("param %s = %s (%s in [%s, %s])\n", in->params[i].name, cli_num(values[i], d, sizeof d),
               in->params[i].type == SPADE_PARAM_INT ? "int" : "real", cli_num(in->params[i].min, lo, sizeof lo),
               cli_num(in->params[i].max, hi, sizeof hi));
    }
    for (int i = 0; i < in->n_tools; i++)
        printf("tool %s %s: %s\n", in->tools[i].name, in->tools[i].signature, in->tools[i].description);
}

/* Starts an episode on the current version of the file. -1 when nothing can
 * serve (the session ends). */
static int new_episode(session *s, uint64_t seed) {
    spade_hotenv_version *nv;
    int reloaded = 0;
    if (spade_hotenv_acquire(s->h, &nv, &reloaded) != 0) {
        cli_err(CLI_FAIL, "play", "%s", spade_hotenv_last_error(s->h));
        return -1;
    }
    const char *e = spade_hotenv_last_error(s->h);
    if (*e && strcmp(e, s->shown_error))
        printf("[%s changed but does not load: %s; still playing version %d]\n", spade_hotenv_path(s->h), e,
               nv->generation);
    snprintf(s->shown_error, sizeof s->shown_error, "%s", e);
    if (nv != s->v) {
        spade_hotenv_release(s->h, s->v);
        s->v = nv;
        spade_failure f;
        if (spade_worker_add_instances(nv->worker, 1, nv->info->n_params ? nv->param_values : NULL, &s->inst, &f) !=
            0) {
            cli_print_failure("play", spade_hotenv_path(s->h), &f);
            return -1;
        }
        if (reloaded) printf("[reloaded %s: version %d]\n", spade_hotenv_path(s->h), nv->generation);
    } else {
        spade_hotenv_release(s->h, nv); /* we already hold this version */
    }
    spade_step_result r;
    spade_failure f;
    s->seed = seed;
    s->in_episode = 0;
    if (spade_worker_reset(s->v->worker, 1, &s->inst, &seed, &r, &f) != 0) {
        /* Not the end of the session: the person may be fixing the file. */
        char what[64];
        snprintf(what, sizeof what, "reset (seed %llu)", (unsigned long long)seed);
        fflush(stdout); /* the failure goes to stderr: keep the transcript in order */
        cli_print_failure("play", what, &f);
        printf("[no episode: fix the file and :reset, or :quit]\n");
        s->failures++;
        return 0;
    }
    s->steps = 0;
    s->in_episode = 1;
    s->started++;
    printf("--- episode %ld, seed %llu ---\n", s->started, (unsigned long long)seed);
    print_text("", r.obs, r.obs_len);
    keep_obs(s, r.obs, r.obs_len);
    policy_episode(s);
    return 0;
}

/* :hint and :solve: the worker's text for the current state, printed after
 * label. A failure is reported and starts a new episode; -1 when that new
 * episode cannot start (the session ends). */
static int show_text(session *s, const char *what, const char *label,
                     int (*get)(spade_worker *, int, const char **, size_t *, spade_failure *)) {
    if (!s->in_episode) {
        printf("no episode running (:reset starts one)\n");
        return 0;
    }
    const char *t;
    size_t tl;
    spade_failure f;
    if (get(s->v->worker, s->inst, &t, &tl, &f) != 0) {
        fflush(stdout);
        cli_print_failure("play", what, &f);
        s->failures++;
        printf("[the environment failed; starting a new episode]\n");
        return new_episode(s, s->seed + 1);
    }
    print_text(label, t, tl);
    return 0;
}

/* A line that starts like a call, name(, of an environment with tools, where
 * name is not one of them, goes to STEP as text (docs/tools.md: prose is not a
 * call); the person is told, since it looks like a call that did nothing. */
static void note_unknown_tool(const spade_env_info *in, const char *a) {
    if (!in->n_tools) return;
    while (*a == ' ' || *a == '\t') a++;
    size_t n = 0;
    while ((a[n] >= 'a' && a[n] <= 'z') || (a[n] >= 'A' && a[n] <= 'Z') || a[n] == '_' ||
           (n && a[n] >= '0' && a[n] <= '9'))
        n++;
    if (!n || a[n] != '(') return;
    for (int i = 0; i < in->n_tools; i++)
        if (strlen(in->tools[i].name) == n && !strncmp(in->tools[i].name, a, n)) return;
    printf("[%.*s(...) is not a tool of this environment, so it is played as text (tools:", (int)(n > 40 ? 40 : n), a);
    for (int i = 0; i < in->n_tools; i++) printf("%s %s", i ? "," : "", in->tools[i].name);
    printf(")]\n");
}

static void help(int policy) {
    printf("commands: :hint  :solve  :reset [SEED]  :info  :help  :quit  (::text plays ':text');\n"
           "%sany other line is your action.\n",
           policy ? ":policy (or :p) lets the policy play the next step;\n" : "");
}

/* What one typed line came to. */
enum { LINE_DONE, LINE_QUIT, LINE_FAIL, LINE_PLAY };

/* A ':' command. LINE_PLAY when :policy chose an action: *play and *play_len
 * then point at the agent's text, valid until its next call. */
static int play_command(session *s, const char *line, const char **play, size_t *play_len) {
    char cmd[32] = "", arg[64] = "", extra[2] = "";
    sscanf(line + 1, "%31s %63s %1s", cmd, arg, extra);
    if (!strcmp(cmd, "quit") || !strcmp(cmd, "q") || !strcmp(cmd, "exit")) return LINE_QUIT;
    if ((!strcmp(cmd, "policy") || !strcmp(cmd, "p")) && s->policy) {
        if (!s->in_episode || !s->policy_live) {
            printf("no episode running (:reset starts one)\n");
            return LINE_DONE;
        }
        spade_ep_view v = policy_view(s);
        spade_ep_act act;
        char err[512];
        if (s->policy->act(s->policy->ctx, 1, &v, &act, err, sizeof err) != 0) {
            cli_err(CLI_FAIL, "play", "the policy: %s", err);
            return LINE_FAIL;
        }
        if (act.stop) {
            printf("[the policy stops this episode: %s; :reset starts a new one]\n", act.stop);
            return LINE_DONE;
        }
        printf("policy> %.*s\n", (int)act.len, act.text);
        *play = act.text;
        *play_len = act.len;
        return LINE_PLAY;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "h") || !strcmp(cmd, "?")) {
        help(s->policy != NULL);
    } else if (!strcmp(cmd, "info")) {
        print_info(s->v->info, s->v->param_values);
    } else if (!strcmp(cmd, "hint")) {
        if (show_text(s, "hint", "hint: ", spade_worker_hint) != 0) return LINE_FAIL;
    } else if (!strcmp(cmd, "solve")) {
        if (!s->v->info->has_solve)
            printf("this environment has no reference solution (no SOLVE block)\n");
        else if (show_text(s, "solve", "reference action: ", spade_worker_solve) != 0)
            return LINE_FAIL;
    } else if (!strcmp(cmd, "reset")) {
        uint64_t ns = s->seed + 1;
        if (*extra) {
            cli_err(CLI_USAGE, "play", ":reset takes at most one SEED");
            return LINE_DONE;
        }
        if (*arg && cli_parse_u64("play", ":reset", arg, &ns) < 0) return LINE_DONE;
        if (new_episode(s, ns) != 0) return LINE_FAIL;
    } else {
        printf("unknown command ':%s' (:help lists the commands)\n", cmd);
    }
    return LINE_DONE;
}

/* Plays one action in the running episode; -1 when a new episode cannot be started. */
static int play_action(session *s, const char *action, size_t alen) {
    if (!s->in_episode) {
        printf("no episode running (:reset starts one)\n");
        return 0;
    }
    if (alen > SPADE_ACTION_MAX) {
        /* the person's line, not the environment, is at fault: nothing is played */
        printf("[action not played: %zu bytes, at most %d]\n", alen, SPADE_ACTION_MAX);
        return 0;
    }
    note_unknown_tool(s->v->info, action);
    spade_step_result r;
    spade_failure f;
    if (spade_worker_step(s->v->worker, 1, &s->inst, &action, &alen, &r, &f) != 0) {
        fflush(stdout);
        cli_print_failure("play", "step", &f);
        s->failures++;
        printf("[the environment failed; starting a new episode]\n");
        return new_episode(s, s->seed + 1) != 0 ? -1 : 0;
    }
    s->steps++;
    if (r.obs_len) print_text("", r.obs, r.obs_len);
    keep_obs(s, r.obs, r.obs_len);
    if (r.reward != 0) printf("(reward %g)\n", r.reward);
    if (r.terminated || r.truncated) {
        s->episodes++;
        s->wins += r.success != 0;
        printf("=== episode over (%s): return %g after %d step%s, %s ===\n",
               r.terminated ? "terminated" : "truncated at max_steps", r.episode_return, s->steps,
               s->steps == 1 ? "" : "s", r.success ? "success" : "failure");
        if (new_episode(s, s->seed + 1) != 0) return -1;
    }
    return 0;
}

/* Parses argv; -1 to go on, or the exit code to return now. */
static int parse_play_args(int argc, char **argv, uint64_t *seed, const char **policy_ckpt, const char **spec) {
    static const struct option longopts[] = {{"seed", required_argument, 0, 's'},
                                             {"policy", required_argument, 0, 'p'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "s:p:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'p': *policy_ckpt = optarg; break;
        case 's':
            if (cli_parse_u64("play", "--seed", optarg, seed) < 0) return CLI_USAGE;
            break;
        case 'h': cli_usage_play(stdout); return CLI_OK;
        default: return cli_bad_option("play", argc, argv, optopt);
        }
    }
    if (optind != argc - 1)
        return cli_err(CLI_USAGE, "play", "expected one environment: spade play NAME_OR_FILE[:params]");
    *spec = argv[optind];
    return -1;
}

int cli_play(spade_sandbox *sb, int argc, char **argv) {
    uint64_t seed = 0;
    const char *policy_ckpt = NULL, *spec = NULL;
    int early = parse_play_args(argc, argv, &seed, &policy_ckpt, &spec);
    if (early >= 0) return early;
    char path[SPADE_PATH_MAX], params[SPADE_SPEC_PARAMS_MAX];
    char *src = NULL;
    size_t len;
    if (cli_load_spec("play", spec, path, sizeof path, params, sizeof params, &src, &len) != CLI_OK) return CLI_FAIL;
    free(src);

    session s;
    memset(&s, 0, sizeof s);
    spade_failure f;
    spade_policy *pol = NULL;
    if (policy_ckpt) {
        char err[2048];
        if (spade_policy_load_weights(&pol, policy_ckpt, NULL, err, sizeof err))
            return cli_err(CLI_FAIL, "play", "--policy %s: %s", policy_ckpt, err);
        spade_policy_agent_opts po;
        spade_policy_agent_opts_default(&po);
        po.max_live = 1;
        po.max_action_tokens = 64;
        po.seed = seed;
        if (!(s.policy = spade_agent_policy(pol, &po, err, sizeof err))) {
            spade_policy_free(pol);
            return cli_err(CLI_FAIL, "play", "%s", err);
        }
    }
    if (spade_hotenv_new(&s.h, sb, path, params, &f) != 0) {
        cli_print_failure("play", NULL, &f);
        return CLI_FAIL;
    }
    int tty = isatty(0);
    int rc = CLI_OK;
    {
        spade_hotenv_version *v0;
        if (spade_hotenv_acquire(s.h, &v0, NULL) == 0) {
            printf("%s — %s\n", v0->info->name, v0->info->description);
            spade_hotenv_release(s.h, v0);
        }
    }
    help(s.policy != NULL);
    char *line = NULL;
    size_t cap = 0;
    if (new_episode(&s, seed) != 0) {
        rc = CLI_FAIL;
        goto out;
    }
    for (;;) {
        if (tty) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) {
            if (tty) putchar('\n');
            break;
        }
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (!tty) printf("> %s\n", line);
        const char *action = line[0] == ':' ? line + 1 : line; /* "::x" plays ":x" */
        size_t alen = (size_t)n - (size_t)(action - line);
        if (line[0] == ':' && line[1] != ':') {
            int how = play_command(&s, line, &action, &alen); /* the policy's action is played as it is */
            if (how == LINE_QUIT) break;
            if (how == LINE_FAIL) goto fail;
            if (how == LINE_DONE) {
                fflush(stdout);
                continue;
            }
            char *nl = realloc(line, alen + 1); /* the agent's text, NUL-terminated like a typed line */
            if (!nl) goto fail;
            memcpy(nl, action, alen);
            nl[alen] = 0;
            line = nl;
            cap = alen + 1;
            action = line;
        }
        if (play_action(&s, action, alen) != 0) goto fail;
        fflush(stdout);
    }
    printf("played %ld episode%s, won %ld", s.episodes, s.episodes == 1 ? "" : "s", s.wins);
    if (s.failures) printf("; the environment failed %d time%s", s.failures, s.failures == 1 ? "" : "s");
    printf("\n");
    /* Status 0: the person ended the session. An environment failure was
     * reported where it happened and the session went on, so it is not this
     * session's failure (spade check is the command whose status judges the
     * environment). */
    goto out;
fail:
    rc = CLI_FAIL;
out:
    fflush(stdout);
    free(line);
    if (s.policy) {
        s.in_episode = 0;
        policy_episode(&s); /* ends the slot */
        spade_agent_free(s.policy);
    }
    spade_policy_free(pol);
    free(s.obs);
    spade_hotenv_release(s.h, s.v);
    spade_hotenv_free(s.h);
    return rc;
}
