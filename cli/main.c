/* main.c — the spade command-line program: dispatches subcommands. Not library code. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help")) {
        printf("usage: spade COMMAND [ARGS]\n");
        return argc < 2;
    }
    fprintf(stderr, "spade: unknown command '%s'\n", argv[1]);
    return 2;
}
