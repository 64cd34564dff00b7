dnl spade_no_core_rm.m4 — keeps configure from trying to delete our core/ directory.
dnl
dnl Autoconf's compile and link tests, automake's "cc -c -o" test and configure's
dnl exit trap clean up with `rm -f core ...` (a core dump of a crashed test
dnl program), which in this tree printed "rm: cannot remove 'core': Is a
dnl directory" 27 times. None of those steps runs a test program, so none can
dnl leave a core dump: "core" is dropped from their cleanups (the run tests,
dnl AC_RUN_IFELSE, keep theirs; spade has none). Each edit is a pattern
dnl substitution on the tools' own definitions: if a later autoconf or automake
dnl words one differently, it is left as it is and only the noise comes back.
dnl Included from configure.ac before AC_INIT. Not build rules (Makefile.am) nor
dnl dependencies (configure.ac).
m4_define([_spade_drop_core_rm],
  [m4_ifdef([$1], [m4_define([$1], m4_bpatsubst(m4_dquote(m4_defn([$1])), [rm -f core ], [rm -f ]))])])
_spade_drop_core_rm([_AC_COMPILE_IFELSE])
_spade_drop_core_rm([_AC_LINK_IFELSE])
_spade_drop_core_rm([_AM_PROG_CC_C_O])
_spade_drop_core_rm([_AC_INIT_PREPARE])
