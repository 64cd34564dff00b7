/* chat.c — the roles' chat turns (chat.h).
 *
 * What it is not: the card's text: that lives in docs/dsl.md and reaches the
 * binary through the generated chat_card.c (core/chat_card.sh).
 */
#include "chat.h"

#include <stdio.h>
#include <string.h>

extern const char spade_chat_card_text[];
extern const unsigned long spade_chat_card_text_len;

/* The line the remote agent has always sent: what a model that must answer
 * at once is asked for. */
static const char AGENT_SYSTEM[] = "You play a text environment. Answer each observation with one action on one line.";

static const char HINT_WRITER_SYSTEM[] =
    "You write the hint of an environment for spade: a short strategy that helps a player win, "
    "never the answer itself.";

size_t spade_chat_agent_system(int reasoning_tokens, char *buf, size_t cap) {
    int n = reasoning_tokens > 0
                ? snprintf(buf, cap,
                           "You play a text environment. Think about each observation step by step, in at most %d "
                           "tokens, then give your action as \\boxed{ACTION}.",
                           reasoning_tokens)
                : snprintf(buf, cap, "%s", AGENT_SYSTEM);
    if (n < 0) n = 0;
    return cap == 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t spade_chat_hint_line(const char *hint, size_t hint_len, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "Hint: %.*s", (int)(hint_len < 1u << 30 ? hint_len : 1u << 30), hint ? hint : "");
    if (n < 0) n = 0;
    return cap == 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

const char *spade_chat_designer_card(size_t *len) {
    if (len) *len = (size_t)spade_chat_card_text_len;
    return spade_chat_card_text;
}

const char *spade_chat_hint_writer_system(size_t *len) {
    if (len) *len = sizeof HINT_WRITER_SYSTEM - 1;
    return HINT_WRITER_SYSTEM;
}

int spade_chat_designer_messages(const char *request, size_t len, spade_chat_msg msgs[2]) {
    size_t cl;
    const char *card = spade_chat_designer_card(&cl);
    msgs[0] = (spade_chat_msg){.role = "system", .content = card, .len = cl};
    msgs[1] = (spade_chat_msg){.role = "user", .content = request, .len = len};
    return 2;
}
