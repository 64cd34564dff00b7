#!/bin/sh
# test_install.sh — checks an installed spade on its own (run by `make
# installcheck`, and so by `make distcheck`): the example program docs/embed.c
# builds with `pkg-config --cflags --libs spade` against the installed headers
# and libspade.so and runs; the installed `spade` finds the installed stdenv from
# an empty directory and searches no build or source tree.
# Not run by `make check` (nothing is installed then).
: "${srcdir:=.}" "${CC:=cc}" "${PKG_CONFIG:=pkg-config}"
root="$DESTDIR$prefix"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/spade-test-install-XXXXXX") || exit 99
trap 'rm -rf "$TMP"' EXIT INT TERM
fails=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; sed 's/^/#   /' "$TMP/out" | tail -20; }

# pkg-config reads the installed spade.pc; with DESTDIR its prefix is rewritten.
PKG_CONFIG_PATH="$DESTDIR$libdir/pkgconfig" "$PKG_CONFIG" --cflags --libs spade >"$TMP/flags" 2>"$TMP/out" &&
    ok "pkg-config finds spade" || bad "pkg-config finds spade"
flags=$(cat "$TMP/flags")
[ -n "$DESTDIR" ] && flags=$(echo "$flags" | sed "s|-I$prefix|-I$DESTDIR$prefix|g; s|-L$prefix|-L$DESTDIR$prefix|g")
case $flags in *rpath*) bad "pkg-config --libs spade carries an rpath: $flags" ;; *) ok "no rpath in pkg-config --libs" ;; esac
$CC -o "$TMP/embed" "$srcdir/docs/embed.c" $flags >"$TMP/out" 2>&1 && ok "docs/embed.c builds against the installed copy" ||
    bad "docs/embed.c builds against the installed copy"
(cd "$TMP" && LD_LIBRARY_PATH="$DESTDIR$libdir" SPADE_PATH="$DESTDIR$pkgdatadir/stdenv" ./embed maze:size=4) >"$TMP/out" 2>&1 &&
    ok "embed runs: loads, steps, checks" || bad "embed runs"
grep -q "check: passed" "$TMP/out" && ok "embed's checker run passes" || bad "embed's checker run passes"

mkdir "$TMP/empty"
(cd "$TMP/empty" && "$DESTDIR$bindir/spade" list --paths) >"$TMP/out" 2>&1
src=$(cd "$srcdir" && pwd)
if grep -q "$src/stdenv\|$src/plugins" "$TMP/out"; then bad "the installed spade searches the source tree"; else ok "the installed spade does not search the source tree"; fi
if [ -z "$DESTDIR" ]; then
    grep -q "maze" "$TMP/out" && ok "the installed spade finds the installed stdenv" || bad "the installed spade finds the installed stdenv"
fi
echo "1..$n"
[ "$fails" -eq 0 ]
