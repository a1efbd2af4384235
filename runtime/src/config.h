// config.h - the runtime's environment variables (DESIGN.md), read once.
#pragma once

#include "defero/kbit/predicate.h"

namespace defero {

struct Config {
  Predicate policy = Predicate::Auto;
  unsigned k = 20;
  bool stats_stderr = false;
  const char *stats_file = nullptr; // DEFERO_STATS_FILE
  int trace_fd = -1;                // DEFERO_TRACE, opened
  const char *backend = "kbit";
};

/// Reads DEFERO_* from the environment. A bad value ends the process with a
/// one-line error naming the variable and the accepted values (exit 2).
/// Never allocates.
Config readConfig();

} // namespace defero
