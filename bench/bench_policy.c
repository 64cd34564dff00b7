/* bench_policy.c — placeholder until the benchmark lands. */
int main(void) { return 0; }
