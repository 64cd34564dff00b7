/* embed.c — a complete program that embeds spade through its public API
 * (<spade/spade.h>): starts the sandbox, loads an environment as 4 instances,
 * plays 20 steps of fixed moves, then runs the checker on it. Built against an
 * installed spade by `make installcheck` (tests/test_install.sh):
 *
 *     cc -o embed embed.c $(pkg-config --cflags --libs spade)
 *     ./embed maze:size=4
 *
 * Not part of the library; an example to copy from (docs/embedding.md). */
#include <spade/spade.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    const char *spec = argc > 1 ? argv[1] : "maze";
    char err[1024];
    spade_sandbox *sb;
    /* First, before anything heavy: every worker forks from the sandbox's zygote. */
    if (spade_sandbox_new(&sb, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "embed: %s\n", err);
        return 1;
    }
    spade_env *env;
    if (spade_env_open(sb, spec, 4, &env, err, sizeof err) != 0) {
        fprintf(stderr, "embed: %s\n", err);
        spade_sandbox_free(sb);
        return 1;
    }
    spade_result res[4];
    if (spade_env_reset(env, 7, res, err, sizeof err) != 0) goto fail;
    printf("%s (spade %s), instance 0 says:\n%s\n", spade_env_name(env), spade_version(), res[0].obs);
    static const char *const moves[] = {"north", "east", "south", "west"};
    int ended = 0;
    for (int t = 0; t < 20; t++) {
        const char *acts[4];
        for (int i = 0; i < 4; i++) acts[i] = moves[(t + i) % 4];
        if (spade_env_step(env, acts, res, err, sizeof err) != 0) goto fail;
        for (int i = 0; i < 4; i++) ended += res[i].terminated || res[i].truncated;
    }
    printf("20 steps of 4 instances: %d episode ends\n", ended);
    spade_env_free(env);

    char *report = NULL;
    int rc = spade_check_spec(sb, spec, &report, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "embed: %s\n", err);
    } else {
        fputs(report, stdout);
        printf("check: %s\n", rc == 0 ? "passed" : "failed");
    }
    spade_free(report);
    spade_sandbox_free(sb);
    return rc == 0 ? 0 : 1;
fail:
    fprintf(stderr, "embed: %s\n", err);
    spade_env_free(env);
    spade_sandbox_free(sb);
    return 1;
}
