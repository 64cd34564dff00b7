/* version.h — spade_version(). Not the environment ABI version (that is SPADE_ENV_ABI in env.h). */
#ifndef SPADE_VERSION_H
#define SPADE_VERSION_H
const char *spade_version(void);
#endif
