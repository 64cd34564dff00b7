# tap.sh — the prologue the shell suites share, sourced after setting NAME:
# SRC (the source tree), SPADE (the binary under test), TMP (a directory
# removed at exit; kept when KEEP is set, for a look after a failure), and
# TAP counting: ok / bad, n, fails (bad shows the tail of $TMP/out).
# Not a test itself, and not run on its own.
srcdir=${srcdir:-.}
SRC=$(cd "$srcdir" && pwd)
SPADE=${SPADE_BIN:-$(pwd)/spade}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/spade-test-$NAME-XXXXXX") || exit 99
trap '[ -n "$KEEP" ] || rm -rf "$TMP"' EXIT INT TERM
fails=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; [ -f "$TMP/out" ] && sed 's/^/#   /' "$TMP/out" | head -30; }
[ -x "$SPADE" ] || { echo "spade not built at $SPADE"; exit 99; }
