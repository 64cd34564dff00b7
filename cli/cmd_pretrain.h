/* cmd_pretrain.h — `spade pretrain CONFIG`: next-token pretraining of the policy
 * on a directory of text files. Not the self-play trainer (that is `spade train`).
 */
#ifndef SPADE_CLI_CMD_PRETRAIN_H
#define SPADE_CLI_CMD_PRETRAIN_H

/* argv[0] is "pretrain". Returns the exit status: 0 done, 1 failed, 2 usage
 * error (bad command line or config file). */
int spade_cmd_pretrain(int argc, char **argv);

#endif
