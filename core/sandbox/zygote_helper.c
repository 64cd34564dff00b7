/* zygote_helper.c — the spade-zygote program: what the sandbox executes as its
 * zygote (core/sandbox/zygote.c says why a fresh exec, and why this small
 * program rather than the caller's own binary). Its argv and options come from
 * spade_zygote_start; run by hand it only says what it is.
 * What it is not: a command for people (spade is). */
#include <stdio.h>

#include "sandbox/internal.h"

int main(int argc, char **argv) {
    spade_zygote_exec_entry(argc, argv); /* returns only when argv is not the zygote's */
    fprintf(stderr, "spade-zygote: the sandbox starts this program itself; it takes no commands\n");
    return 2;
}
