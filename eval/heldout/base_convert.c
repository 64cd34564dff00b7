/* base_convert.c — convert numbers between bases, one conversion after another.
 * Teaches: positional notation (digit values times powers of the base) and repeated
 * division for the way back, with letters for digits above 9. Params: rounds = how
 * many conversions; top = largest number converted; maxbase = largest base used. Held out. */
#include <spade/dsl.h>
ENV("base_convert", "Convert numbers between number bases.", .family = "math", .max_steps = 6)
PARAM(int, rounds, 1, 1, 6)
PARAM(int, top, 255, 8, 1000000)
PARAM(int, maxbase, 10, 3, 16)
STATE { long value; int to, done; char want[40]; };
static void write_in(long x, int base, char *out) {
    char tmp[40]; int n = 0;
    do { tmp[n++] = "0123456789ABCDEF"[x % base]; x /= base; } while (x);
    for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    out[n] = 0;
}
static void make(void) {
    char shown[40]; int from;
    S->value = rand_range(2, top);
    do { from = rand_range(2, maxbase); S->to = rand_range(2, maxbase); } while (from == S->to);
    write_in(S->value, from, shown); write_in(S->value, S->to, S->want);
    say("Conversion %d: write the base-%d number %s in base %d (digits above 9 are A-F).\n", S->done + 1, from, shown, S->to);
}
RESET { make(); }
STEP {
    char got[40]; int n = 0; const char *a = answer(action);
    while (*a == ' ') a++;
    while (n < 39 && isalnum(a[n])) { got[n] = (char)toupper(a[n]); n++; }
    got[n] = 0;
    if (strcmp(got, S->want)) { say("Wrong: it is %s.\n", S->want); lose(); return; }
    if (++S->done == rounds) { say("Correct.\n"); win(); return; }
    say("Correct.\n");
    make();
}
HINT { say("First turn the given digits into an ordinary number: multiply the running total by the old base and add each digit, left to right. Then divide by the new base again and again; the remainders, read from last to first, are the new digits."); }
SOLVE { act("%s", S->want); }
