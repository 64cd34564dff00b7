/* expect: ok
 * tries: nothing: calls every allowlisted helper and libc function on every action (including
 * empty, 1 MB and binary ones) and must run clean.
 */
#include <spade/dsl.h>
ENV("every-helper", "Guess a number; uses every allowed helper.", .max_steps = 40, .family = "logic", .success = 1.0)
PARAM(int, size, 5, 1, 20)
PARAM(double, noise, 0.5, 0.0, 1.0)
STATE { long target; long order[8]; char word[32]; double x; int coin; };
RESET {
    int i;
    S->target = rand_range(1, 100);
    for (i = 0; i < 8; i++) S->order[i] = i;
    shuffle(S->order, 8, sizeof S->order[0]);
    S->x = rand_real();
    S->coin = chance(noise);
    say("Guess a number in [1, 100]. size %d noise %.2f coin %d first %ld x %.3f", size, noise, S->coin, S->order[0], S->x);
}
STEP {
    char buf[64], tmp[64];
    long ints[4];
    char *end = NULL;
    int n = parse_ints(action, ints, 4);
    long g = parse_int(action);
    double r = parse_real(action);
    int wl = parse_word(action, S->word, sizeof S->word);
    const char *a = answer(action);
    size_t alen = strlen(a);
    long sum = 0;
    snprintf(buf, sizeof buf, "%ld", S->target);
    memset(tmp, 0, sizeof tmp);
    memcpy(tmp, buf, strlen(buf));
    memmove(tmp + 1, tmp, 8);
    sum += strcmp(buf, "50") > 0;
    sum += strncmp(buf, "5", 1) == 0;
    sum += strchr(buf, '7') != NULL;
    sum += strrchr(buf, '1') != NULL;
    sum += strstr(a, "42") != NULL;
    sum += memcmp(tmp, buf, 1) == 0;
    sum += abs(-3) + labs(-4L) + atoi("5") + strtol("0x10", &end, 16);
    sum += (long)strtod("2.5", &end);
    sum += isdigit('7') + isalpha('q') + isalnum('_') + isspace(' ') + isupper('Q') + islower('q');
    sum += toupper('a') - tolower('A');
    sum += (long)(sqrt(16.0) + fabs(-1.0) + floor(2.7) + ceil(2.2) + pow(2.0, 3.0) + exp(0.0) + log(1.0) + sin(0.0) + cos(0.0));
    say("n=%d g=%ld r=%g wl=%d alen=%lu sum=%ld steps=%ld len=%lu", n, g, r, wl, (unsigned long)alen, sum, steps(), (unsigned long)action_len);
    if (g == S->target || str_ieq(a, buf)) win();
    else if (steps() >= 30) lose();
    else reward(g < S->target ? -0.01 : -0.02);
}
HINT { say("Binary search: halve the interval with each guess."); }
SOLVE { act("\\boxed{%ld}", S->target); }
