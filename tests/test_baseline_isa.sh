#!/bin/sh
# test_baseline_isa.sh — the baseline ("default", SSE2) clones of the CPU
# kernels (core/policy/backend_cpu.c, SPADE_CLONES: GCC target_clones with
# x86-64-v3 and x86-64-v4 clones) agree with the reference backend, run where
# they are picked: under QEMU user mode with a CPU without AVX (Nehalem). A
# machine with AVX-512 runs the v4 clones in make check and valgrind the v3
# ones, so without this the baseline never ran. It first checks, from QEMU's
# log of the blocks it ran, that the .default clones ran and no v3/v4 one did,
# then runs the suites' cpu-against-cpu_ref cases (SPADE_TEST_ONLY,
# tests/testutil.h) under the emulated CPU: about 10 s here.
# Skipped (exit 77), saying why, without qemu-x86_64 (Debian: qemu-user, which
# ./bootstrap installs), on a host that is not x86-64, or in a build without
# the clones (not GCC >= 12). Not a test of speed, nor of the GEMM and q8
# kernels' choice (tests/test_gemm and tests/test_q8 run each kernel the
# machine has).
NAME=baseline_isa
. "${srcdir:-.}/tests/tap.sh"
CPU=Nehalem
skip() { echo "1..0 # SKIP $1"; exit 77; }
[ "$(uname -m)" = x86_64 ] || skip "not an x86-64 host: no target_clones to check"
command -v qemu-x86_64 >/dev/null 2>&1 || skip "no qemu-x86_64 (Debian: apt-get install qemu-user, or ./bootstrap as root)"
qemu-x86_64 -cpu help 2>/dev/null | grep -qw "$CPU" || skip "qemu-x86_64 has no CPU model $CPU"
T=$(pwd)/tests
nm "$T/test_policy" 2>/dev/null | grep -q ' layernorm_rows\.default$' || skip "this build has no target_clones (GCC >= 12 on x86-64 Linux makes them)"
Q() { qemu-x86_64 -cpu "$CPU" "$@"; }

# the emulated CPU has no AVX, and the loader picks the baseline clones there
check() { if [ "$1" = 0 ]; then ok "$2"; else bad "$2"; fi; }
SPADE_TEST_ONLY=test_cpu_matches_reference CK_FORK=no Q -d in_asm -D "$TMP/asm.log" "$T/test_llama" >"$TMP/out" 2>&1
grep '^IN: [a-z_]*\.\(default\|arch_x86_64_v[34]\)$' "$TMP/asm.log" | sort -u >"$TMP/clones"
rm -f "$TMP/asm.log"
grep -q '^IN: rmsnorm_rows\.default$' "$TMP/clones" && grep -q '^IN: swiglu_fwd_rows\.default$' "$TMP/clones" &&
    ! grep -q 'arch_x86_64' "$TMP/clones"
check $? "under qemu-x86_64 -cpu $CPU the kernels' .default clones run, no x86-64-v3/v4 one ($(wc -l <"$TMP/clones") clones seen)"

# the suites' cases that compare the cpu backend (its cloned kernels) with cpu_ref
run() { # run BINARY CASE[,CASE...]
    k=$(echo "$2" | tr ',' '\n' | wc -l)
    SPADE_TEST_ONLY=$2 Q "$T/$1" >"$TMP/out" 2>&1
    st=$?
    [ $st -eq 0 ] && grep -q "^100%: Checks: $k, Failures: 0, Errors: 0" "$TMP/out"
    check $? "$1 on the baseline clones: $2"
}
run test_policy test_op_gradients_cpu,test_cpu_ops_match_reference_parallel,test_cpu_matches_reference,test_kv_attention_matches_full
run test_attention test_tiled_matches_reference_cpu,test_kv_matches_tiled
run test_decode test_ops_at,test_batched_equals_alone
run test_llama test_ops_cpu,test_cpu_matches_reference
run test_lora cpu_matches_reference

echo "1..$n"
[ "$fails" -eq 0 ]
