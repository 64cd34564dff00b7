/* thermostat.c — follow heating instructions that refer to rooms by their readings.
 * Teaches: tool use where the target of an action must be found first ("the coldest
 * room"), reading every candidate before acting, and instructions revealed one by one.
 * Params: rooms = how many rooms; tasks = instructions; spread = range of temperatures. Held out. */
#include <spade/dsl.h>
ENV("thermostat", "Set room thermostats following instructions that name rooms by their readings.", .family = "tools", .max_steps = 60)
PARAM(int, rooms, 3, 2, 6)
PARAM(int, tasks, 2, 1, 6)
PARAM(int, spread, 8, 3, 20)
STATE { int temp[6], kind[6], value[6], at; };
static const char *ROOM[6] = {"kitchen", "hall", "study", "bedroom", "bath", "attic"};
static int room(const char *name) { for (int i = 0; i < rooms; i++) if (str_ieq(name, ROOM[i])) return i; return -1; }
static int target(int k) { /* the room instruction k is about: 0 coldest, 1 warmest (ties: the first listed) */
    int best = 0;
    for (int i = 1; i < rooms; i++) if (S->kind[k] ? S->temp[i] > S->temp[best] : S->temp[i] < S->temp[best]) best = i;
    return best;
}
static void describe(void) {
    if (S->at == tasks) { say("All instructions are done; say done.\n"); return; }
    say("Instruction %d: set the %s room to %d degrees.\n", S->at + 1, S->kind[S->at] ? "warmest" : "coldest", S->value[S->at]);
}
TOOL(read_temp, "Return the temperature a room's thermostat reads.", int, (const char *room_name)) { return room(room_name) < 0 ? -99 : S->temp[room(room_name)]; }
TOOL(set_temp, "Set a room's thermostat; returns the new reading.", int, (const char *room_name, int degrees)) {
    int i = room(room_name);
    if (i < 0 || degrees < 5 || degrees > 35) { say("Error: unknown room or degrees outside 5-35.\n"); return -99; }
    if (S->at < tasks && i == target(S->at) && degrees == S->value[S->at]) { S->temp[i] = degrees; S->at++; describe(); }
    else { S->temp[i] = degrees; S->at = tasks + 1; } /* a wrong change spoils the plan */
    return degrees;
}
RESET {
    for (int i = 0; i < rooms; i++) S->temp[i] = rand_range(14, 14 + spread);
    for (int k = 0; k < tasks; k++) { S->kind[k] = rand_range(0, 1); S->value[k] = rand_range(15, 26); }
    say("Rooms:"); for (int i = 0; i < rooms; i++) say(" %s", ROOM[i]);
    say(". Tools: read_temp(room_name), set_temp(room_name, degrees). Rooms are named by their readings now.\n");
    describe();
}
STEP {
    char w[16]; parse_word(action, w, sizeof w);
    if (!str_ieq(w, "done")) { say("Call a tool, or say done when every instruction is carried out.\n"); return; }
    if (S->at == tasks) { say("Everything is set.\n"); win(); } else { say("Not every instruction was carried out correctly.\n"); lose(); }
}
HINT { say("Before each change, read every room's thermostat and pick the one with the lowest or highest reading as asked (the first listed on a tie); readings change after each set."); }
SOLVE { if (S->at == tasks) act("done"); else act("set_temp(\"%s\", %d)", ROOM[target(S->at)], S->value[S->at]); }
