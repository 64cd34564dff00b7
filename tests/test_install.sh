#!/bin/sh
# test_install.sh — checks an installed spade on its own (run by `make
# installcheck`, and so by `make distcheck`, with DESTDIR for a staged install):
# docs/embedding.md's block for the install at hand (a prefix install, or a
# staged one when DESTDIR is set) is run line for line, as a reader would paste
# it: docs/embed.c builds with pkg-config against the installed headers and
# libspade.so and runs; the installed `spade` finds the installed stdenv from
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

# The installed spade.pc names the installed headers and library (for a staged tree: under DESTDIR,
# through --define-prefix), and carries no run path.
if [ -n "$DESTDIR" ]; then pc="--define-prefix"; else pc=""; fi
PKG_CONFIG_PATH="$DESTDIR$libdir/pkgconfig" "$PKG_CONFIG" $pc --cflags --libs spade >"$TMP/flags" 2>"$TMP/out" &&
    ok "pkg-config finds spade" || bad "pkg-config finds spade"
flags=$(cat "$TMP/flags")
case $flags in *rpath*) bad "pkg-config --libs spade carries an rpath: $flags" ;; *) ok "no rpath in pkg-config --libs" ;; esac
case " $flags " in *" -I$DESTDIR$includedir "*"-L$DESTDIR$libdir "*) ok "spade.pc's includedir and libdir are the installed ones ($flags)" ;;
*) echo "want -I$DESTDIR$includedir -L$DESTDIR$libdir" >"$TMP/out"; bad "spade.pc's includedir and libdir: $flags" ;; esac
[ -f "$DESTDIR$includedir/spade/spade.h" ] && ok "the header is at includedir/spade/spade.h" || bad "no $DESTDIR$includedir/spade/spade.h"

# docs/embedding.md's block, as written: the first ```sh block for a prefix install, the second for a staged one.
want=1
[ -n "$DESTDIR" ] && want=2
awk -v want=$want '/^```sh/ { k++; on = (k == want); next } /^```/ { on = 0 } on' "$srcdir/docs/embedding.md" >"$TMP/block.sh"
mkdir -p "$TMP/docs"
cp "$srcdir/docs/embed.c" "$TMP/docs/"
if grep -q "embed.c" "$TMP/block.sh"; then ok "docs/embedding.md has the block (sh block $want)"; else bad "docs/embedding.md's sh block $want"; fi
# a clean loader path: the run path (or what the docs say instead) must be what finds libspade.so
(cd "$TMP" && env -u LD_LIBRARY_PATH PREFIX="$prefix" STAGE="$DESTDIR" CC="$CC" PATH="$PATH" sh -ex block.sh) >"$TMP/out" 2>&1 &&
    ok "docs/embedding.md's block runs as written (build, run: loads, steps, checks)" || bad "docs/embedding.md's block runs as written"
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
