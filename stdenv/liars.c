/* liars.c — tell the knights (who always tell the truth) from the knaves (who always lie).
 * Teaches: reasoning by cases: assume someone is a knight, follow what that
 * forces, and reject assumptions that contradict a statement. Params: people =
 * how many speak; level = kinds of statement (1: about one person or a pair
 * being both knights, 2: + same or different kinds, 3: + how many knights
 * there are). Puzzles are drawn again until exactly one answer fits. */
#include <spade/dsl.h>
ENV("liars", "Work out who is a knight and who is a knave.", .family = "deduction", .max_steps = 1)
PARAM(int, people, 3, 2, 6)
PARAM(int, level, 2, 1, 3)
STATE { int kind[6], a[6], b[6], k[6], knights; }; /* what person i says, about a and b (or a count k) */
static int says(int i, int set) { /* is person i's statement true when set holds the knights? */
    int x = set >> S->a[i] & 1, y = set >> S->b[i] & 1, n = 0, kind = S->kind[i];
    for (int j = 0; j < people; j++) n += set >> j & 1;
    return kind == 0 ? x : kind == 1 ? !x : kind == 2 ? x && y : kind == 3 ? !(x && y) : kind == 4 ? x == y : kind == 5 ? x != y : n == S->k[i];
}
static int fits(int set) { for (int i = 0; i < people; i++) if (says(i, set) != (set >> i & 1)) return 0; return 1; }
RESET {
    static const char *SAY[6] = {"%c is a knight", "%c is a knave", "%c and %c are both knights",
                                 "at least one of %c and %c is a knave", "%c and %c are the same kind", "%c and %c are different kinds"};
    int solutions;
    do {
        S->knights = rand_range(0, (1 << people) - 1); solutions = 0;
        for (int i = 0; i < people; i++) {
            S->kind[i] = 2 * rand_range(0, level); S->a[i] = rand_range(0, people - 1);
            do S->b[i] = rand_range(0, people - 1); while (S->b[i] == S->a[i]);
            while (S->a[i] == i && S->kind[i] < 2) S->a[i] = rand_range(0, people - 1); /* "I am a knight" says nothing */
            S->k[i] = 0;
            for (int j = 0; j < people; j++) S->k[i] += S->knights >> j & 1; /* a knight says the true count, a knave another */
            if (!(S->knights >> i & 1)) S->k[i] = (S->k[i] + rand_range(1, people)) % (people + 1);
            if (S->kind[i] < 6 && says(i, S->knights) != (S->knights >> i & 1)) S->kind[i]++; /* the other of the pair */
        }
        for (int set = 0; set < 1 << people; set++) solutions += fits(set);
    } while (solutions != 1 || !fits(S->knights));
    say("Each of these people is a knight, who always tells the truth, or a knave, who always lies.\n");
    for (int i = 0; i < people; i++) {
        say("%c says: ", 'A' + i);
        if (S->kind[i] == 6) say("exactly %d of us are knights.\n", S->k[i]);
        else { say(SAY[S->kind[i]], 'A' + S->a[i], 'A' + S->b[i]); say(".\n"); }
    }
    say("Answer with the letters of all the knights written together in one word, or with \"none\".\n");
}
STEP {
    char w[16]; int set = 0, n = parse_word(action, w, sizeof w);
    for (int i = 0; i < n; i++) { int p = toupper((unsigned char)w[i]) - 'A'; set |= p >= 0 && p < people ? 1 << p : 1 << 30; }
    if (str_ieq(w, "none")) set = 0;
    if (n && set == S->knights) { say("Correct.\n"); win(); } else { say("Wrong.\n"); lose(); }
}
HINT { say("Suppose one person is a knight and follow what that forces: what a knight says is true, what a knave says is false. When an assumption leads to a contradiction, swap it. Check the final answer against every statement."); }
SOLVE {
    if (!S->knights) act("none");
    for (int i = 0; i < people; i++) if (S->knights >> i & 1) act("%c", 'A' + i);
}
