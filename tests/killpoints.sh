# killpoints.sh — kill-and-resume helpers the train and self-play suites share, sourced after tap.sh.
# kill_points dies at named points (SPADE_KILL_AT, core/killpoint.h), so every kill lands where
# the test says whatever the machine's load; kill_random keeps the old kill at a wall-clock moment
# as an extra, looping until one landed. Not a test itself, and not run on its own.

# kill_points START RUN NAME:ITERATION...: `spade train START` dies at the first point, then
# `spade train RUN` resumes and dies at each next one, then resumes once more, to the end. Sets
# kills to how many runs died of their SIGKILL (status 137) and missed to the points that did not.
kill_points() {
    kp_start=$1
    kp_run=$2
    shift 2
    kills=0
    missed=""
    for kp in "$@"; do
        SPADE_KILL_AT=$kp "$SPADE" train "$kp_start" >"$TMP/out" 2>&1
        if [ $? -eq 137 ]; then kills=$((kills + 1)); else missed="$missed $kp"; fi
        kp_start=$kp_run
    done
    "$SPADE" train "$kp_run" >"$TMP/out" 2>&1
}

# kill_random CONFIG RUN LAST: starts CONFIG, kills it with -9 at a moment after its config.ini
# exists (from then on it is a run), resumes RUN and kills it again, until iteration LAST is in
# RUN/state and at least one kill landed; a run that got to its end with no kill landed starts
# again from scratch. 40 tries at most, then one more resume, always: the last kill may have
# landed between the state and the unlink of the previous checkpoint, which a resume tidies.
# Sets kills to how many kills landed in a live run.
kill_random() {
    kills=0
    kr_tries=0
    while [ $kr_tries -lt 40 ]; do
        kr_tries=$((kr_tries + 1))
        if [ -f "$2/config.ini" ]; then kr_arg=$2; else kr_arg=$1; fi
        "$SPADE" train "$kr_arg" >"$TMP/out" 2>&1 &
        kr_pid=$!
        # waited for as long as a loaded machine takes (a 60 s bound, left early if the run ends)
        kr_i=0
        while [ ! -f "$2/config.ini" ] && kill -0 $kr_pid 2>/dev/null && [ $kr_i -lt 3000 ]; do
            sleep 0.02
            kr_i=$((kr_i + 1))
        done
        # 0 .. 0.3 s after that: some land before an iteration ends, some after
        sleep "$(echo $kr_tries | awk '{ printf "%.2f", 0.05 * ($1 * 5 % 7) }')"
        kill -KILL $kr_pid 2>/dev/null
        wait $kr_pid 2>/dev/null
        [ $? -eq 137 ] && kills=$((kills + 1))
        if grep -q "iteration $3 " "$2/state" 2>/dev/null; then
            [ $kills -ge 1 ] && break
            rm -rf "$2"
        fi
    done
    if [ -f "$2/config.ini" ]; then kr_arg=$2; else kr_arg=$1; fi
    "$SPADE" train "$kr_arg" >"$TMP/out" 2>&1
}
