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
  /// DEFERO_DECAY_MS: how long an empty span keeps its memory (~0u: never).
  unsigned decay_ms = 100;
  /// DEFERO_MAX_RESIDENT: above this many bytes of spans held, empty spans'
  /// memory goes back at once (~0: no ceiling).
  unsigned long long max_resident = ~0ull;
  /// DEFERO_TRACE when it names the process (holds %p): a forked child
  /// opens a file of its own (openChildTrace). nullptr otherwise.
  const char *trace_pattern = nullptr;
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

/// The trace file of process `pid` under DEFERO_TRACE's pattern (%p the
/// process id, %% a percent sign) in out[cap]; false if the pattern holds
/// another %-sequence or the path needs more than cap - 1 bytes.
bool traceFilePath(const char *pattern, long pid, char *out, unsigned long cap);

/// A forked child's own trace file (its pattern holds %p): opened, its
/// first line "# forked from pid <parent>" (a replay then skips frees of
/// the blocks the child inherited); -1, after a one-line message on
/// stderr, if it cannot be opened (the child then runs untraced).
int openChildTrace(const char *pattern, long parent_pid);

} // namespace defero
