/* env.h forwarder for in-tree builds: <spade/env.h> is core/env.h. Not installed. */
#include "../../core/env.h"
