// config.h - the runtime's environment variables (DESIGN.md), read once.
#pragma once

#include "defero/kbit/predicate.h"

namespace defero {

struct Config {
  Predicate policy = Predicate::Auto;
  unsigned k = DEFERO_K_DEFAULT;
  bool stats_stderr = false;
  const char *stats_file = nullptr; // DEFERO_STATS_FILE
  int trace_fd = -1;                // DEFERO_TRACE, opened
  const char *backend = "kbit";
  /// Real-time builds (DEFERO_REALTIME): which heap serves the program, and
  /// the buddy heap's size.
  enum class Backend : unsigned char { Kbit, SwBuddy, HwObs, HwRbs };
  Backend backend_kind = Backend::Kbit;
  unsigned long long heap_bytes = 0; // DEFERO_HEAP_BYTES (buddy backends)
};

#ifndef DEFERO_REALTIME
#define DEFERO_REALTIME 0
#endif

/// Reads DEFERO_* from the environment. A bad value ends the process with a
/// one-line error naming the variable and the accepted values (exit 2).
/// Never allocates.
Config readConfig();

} // namespace defero
