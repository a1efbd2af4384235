// app_args.h - what the applications share: the command line (`--name
// value` pairs, each an integer in a range; anything else is a one-line
// error, exit 2) and their peak resident memory.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

namespace defero_bench {

class AppArgs {
public:
  /// `names`: the options this program accepts.
  AppArgs(int argc, char **argv, const char *prog, std::initializer_list<const char *> names)
      : argc_(argc), argv_(argv), prog_(prog) {
    std::string accepted;
    for (const char *n : names)
      accepted += (accepted.empty() ? "" : ", ") + std::string(n) + " N";
    for (int i = 1; i < argc; i += 2) {
      bool known = false;
      for (const char *n : names)
        known |= !std::strcmp(argv[i], n);
      if (!known || i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s '%s'; accepted: %s\n", prog,
                     known ? "no value for" : "unknown option", argv[i], accepted.c_str());
        std::exit(2);
      }
    }
  }
  /// The value of `name`, or `def`; outside lo..hi is a one-line error.
  long long get(const char *name, long long def, long long lo, long long hi) const {
    for (int i = 1; i + 1 < argc_; i += 2) {
      if (std::strcmp(argv_[i], name))
        continue;
      char *end = nullptr;
      const long long v = std::strtoll(argv_[i + 1], &end, 10);
      if (!*argv_[i + 1] || *end || v < lo || v > hi) {
        std::fprintf(stderr, "%s: %s '%s' is not valid; accepted: an integer from %lld to %lld\n",
                     prog_, name, argv_[i + 1], lo, hi);
        std::exit(2);
      }
      return v;
    }
    return def;
  }

private:
  int argc_;
  char **argv_;
  const char *prog_;
};

/// This process's peak resident memory (VmHWM), bytes; 0 if unknown. (A
/// parent's getrusage cannot tell it: the peak counted there includes the
/// parent's own memory, inherited by fork before exec.)
inline unsigned long long peakRssBytes() {
  FILE *f = std::fopen("/proc/self/status", "r");
  if (!f)
    return 0;
  char line[256];
  unsigned long long kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (!std::strncmp(line, "VmHWM:", 6))
      kb = std::strtoull(line + 6, nullptr, 10);
  std::fclose(f);
  return kb * 1024;
}

} // namespace defero_bench
