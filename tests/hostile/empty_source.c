/* expect: invalid_env
 * tries: an empty source (the runner sends 0 bytes, not this comment).
 * send: empty
 * An empty translation unit is valid C to tcc (it compiles to nothing); the host
 * then finds no spade_meta: invalid_env, not compile_error.
 */
