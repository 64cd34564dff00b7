/* killpoint.h — named points where a test can make the program die, so that a
 * kill-and-resume test lands its SIGKILL at a phase boundary it chose instead
 * of at a wall-clock moment (a run that finishes before a timed kill tested
 * nothing; a loaded machine moves every timed kill).
 *
 * What it is: `SPADE_KILL_AT=NAME:ITERATION` in the environment makes the
 * process raise SIGKILL on itself when it passes the point NAME during
 * iteration ITERATION (the loop's 0-based index, as in RUN/state), exactly as
 * a kill -9 there would: no handler, no flush, no cleanup.
 * `SPADE_STOP_AT=NAME:ITERATION` raises SIGSTOP there instead: the test sees
 * the process stopped (an event, not a moment), does what must happen at
 * that point (tests/test_remote.sh kills the served model's server), and
 * sends SIGCONT. The points are
 * listed in docs/train.md ("Kill points"); tests/test_selfplay.sh and
 * tests/test_train.sh kill every one of them.
 * What it is not: a debugging or fault-injection framework, nor anything a
 * run uses: with the variable unset a point costs one cached pointer test.
 */
#ifndef SPADE_KILLPOINT_H
#define SPADE_KILLPOINT_H

/* Dies by SIGKILL if SPADE_KILL_AT names this point and iteration, stops
 * (SIGSTOP) if SPADE_STOP_AT does; returns otherwise (or when continued).
 * The variables are read once, at the first call. */
void spade_killpoint(const char *name, int iteration);

#endif /* SPADE_KILLPOINT_H */
