/* version.c — the library's version string. Not configuration. */
#include "version.h"
const char *spade_version(void) { return PACKAGE_VERSION; }
