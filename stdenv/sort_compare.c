/* sort_compare.c — sort hidden items using only pairwise comparisons.
 * Teaches: algorithmic thinking under a query budget (binary insertion or merge
 * sort), and bookkeeping of what is already known. Params: items = how many;
 * spare = comparisons allowed beyond what binary insertion sort needs at worst. */
#include <spade/dsl.h>
ENV("sort_compare", "Sort hidden items by asking for comparisons.", .family = "logic", .max_steps = 120)
PARAM(int, items, 5, 3, 16)
PARAM(int, spare, 2, 0, 20)
STATE { int value[16], left; signed char known[16][16]; }; /* known[i][j]: -1 i < j, 1 i > j, 0 not asked */
static const char *after_last(const char *s, const char *word) { /* the text after the last `word`, in any case */
    const char *hit = NULL; size_t n = strlen(word), k;
    for (; *s; s++) { for (k = 0; k < n && tolower((unsigned char)s[k]) == word[k]; k++) {} if (k == n) hit = s + n; }
    return hit;
}
RESET {
    for (int i = 0; i < items; i++) S->value[i] = i;
    shuffle(S->value, items, sizeof S->value[0]);
    S->left = spare;
    for (int k = 2; k <= items; k++) for (int m = 1; m < k; m *= 2) S->left++; /* ceil(log2 k) for each insertion */
    say("%d hidden items are numbered 0 to %d; no two are equal. Ask \"compare I J\" to learn whether item I is smaller\n"
        "or larger than item J (you may ask %d times). Finish with \"order\" and the numbers from smallest to largest,\n"
        "e.g. \"order 2 0 1 ...\".\n", items, items - 1, S->left);
}
STEP {
    const char *text = answer(action), *cmp = after_last(text, "compare"), *ord = after_last(text, "order");
    long v[64]; int n;
    if (ord && (!cmp || ord > cmp)) { /* the final answer: every item exactly once, in increasing order */
        int ok = parse_ints(ord, v, 64) == items;
        for (int k = 0; ok && k < items; k++) ok = v[k] >= 0 && v[k] < items && S->value[v[k]] == k;
        if (ok) { say("Correct order.\n"); win(); } else { say("That is not the order.\n"); lose(); }
    } else if (!cmp || (n = parse_ints(cmp, v, 2)) < 2 || v[0] < 0 || v[1] < 0 || v[0] >= items || v[1] >= items || v[0] == v[1])
        say("Say \"compare I J\" with two different item numbers, or \"order\" and the sorted list.\n");
    else if (S->left <= 0) { say("No comparisons left; give the order.\n"); }
    else {
        int i = v[0], j = v[1], less = S->value[i] < S->value[j];
        S->left--; S->known[i][j] = less ? -1 : 1; S->known[j][i] = -S->known[i][j];
        say("Item %d is %s than item %d. Comparisons left: %d.\n", i, less ? "smaller" : "larger", j, S->left);
    }
}
HINT { say("Use binary insertion: keep a sorted list, and insert each new item by comparing it with the middle of the part of the list where it can still go. Never ask a comparison you can deduce from earlier answers."); }
SOLVE { /* replay binary insertion sort on the answers known so far; ask the first comparison it lacks */
    int sorted[16], n = 0;
    for (int k = 0; k < items; k++) {
        int lo = 0, hi = n;
        while (lo < hi) {
            int mid = (lo + hi) / 2, rel = S->known[k][sorted[mid]];
            if (!rel) { act("compare %d %d", k, sorted[mid]); return; }
            if (rel < 0) hi = mid; else lo = mid + 1;
        }
        memmove(sorted + lo + 1, sorted + lo, (n - lo) * sizeof sorted[0]); sorted[lo] = k; n++;
    }
    act("order");
    for (int k = 0; k < items; k++) act(" %d", sorted[k]);
}
