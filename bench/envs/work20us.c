/* work20us.c — an environment whose step does a fixed amount of arithmetic (about 20 µs with gcc -O2 here),
   so the benchmark can compare JIT'd code plus IPC against the same C called in-process.
   Not a useful task. */
#include <spade/dsl.h>
ENV("bench_work", "A step that costs a fixed amount of arithmetic.", .max_steps = 1000000)
PARAM(int, iters, 9000, 1, 100000000)
STATE { unsigned long x; long n; };
RESET { S->x = 88172645463325252UL; S->n = 0; say("ready"); }
STEP {
    unsigned long x = S->x;
    for (int i = 0; i < iters; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; }
    S->x = x; S->n++;
    say("%lu", x & 1023);
}
HINT  { say("Any action works."); }
SOLVE { act("go"); }
