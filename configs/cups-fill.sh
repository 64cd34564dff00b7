#!/bin/sh
# cups-fill.sh — writes templates/cups.c with its two holes filled (the number
# of cups, then of tries) to OUT: the games configs/base-hint-data.sh
# demonstrates and docs/selfplay.md evaluates. Not a check: run spade check OUT.
# Usage: configs/cups-fill.sh CUPS TRIES OUT   (run from the source tree)
set -e
[ $# -eq 3 ] || { echo "usage: configs/cups-fill.sh CUPS TRIES OUT" >&2; exit 2; }
sed -e "0,/@@/s//$1/" -e "0,/@@/s//$2/" "$(dirname "$0")/../templates/cups.c" >"$3"
