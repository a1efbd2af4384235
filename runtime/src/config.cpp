// config.cpp - parsing of DEFERO_* (runs inside the first malloc: no
// allocation, no locale, no stdio buffers).
#include "config.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "defero/platform/os.h"

namespace defero {
namespace {

const char *errnoText(int e) {
  switch (e) {
  case ENOENT:
    return "no such file or directory";
  case EACCES:
    return "permission denied";
  case EISDIR:
    return "is a directory";
  case EROFS:
    return "read-only file system";
  case ENOTDIR:
    return "a path component is not a directory";
  default:
    return "cannot open";
  }
}

[[noreturn]] void bad(const char *var, const char *value, const char *accepted) {
  char msg[400];
  std::snprintf(msg, sizeof msg, "%s='%.200s' is not valid; accepted: %s", var,
                value, accepted);
  os::fatal_config(msg);
}

int openOrDie(const char *var, const char *path, bool keep) {
  if (!*path)
    bad(var, path, "a writable file path");
  int fd = os::open_for_writing(path, false);
  if (fd < 0) {
    char msg[400];
    std::snprintf(msg, sizeof msg, "%s='%.200s': cannot open for writing: %s",
                  var, path, errnoText(errno));
    os::fatal_config(msg);
  }
  if (!keep) {
    os::close_fd(fd);
    return -1;
  }
  return fd;
}

#if DEFERO_REALTIME
// A real-time build: DEFERO_DEFAULT_BACKEND and DEFERO_MAX_HEAP_LOG come
// from CMake (DEFERO_BACKEND, DEFERO_HEAP_BYTES).
constexpr unsigned long long kMinHeapBytes = 1ull << 16;
constexpr unsigned long long kMaxHeapBytes = 1ull << DEFERO_MAX_HEAP_LOG;

bool parseBackend(const char *v, Config &c) {
  static constexpr struct {
    const char *name;
    Config::Backend kind;
  } kBackends[] = {{"hw-obs", Config::Backend::HwObs},
                   {"hw-rbs", Config::Backend::HwRbs},
                   {"sw-buddy", Config::Backend::SwBuddy},
                   {"kbit", Config::Backend::Kbit}};
  for (const auto &b : kBackends)
    if (!std::strcmp(v, b.name)) {
      c.backend = b.name;
      c.backend_kind = b.kind;
      return true;
    }
  return false;
}

/// Bytes, with an optional binary suffix K, M or G (either case).
bool parseBytes(const char *v, unsigned long long &out) {
  if (*v < '0' || *v > '9')
    return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (errno)
    return false;
  unsigned shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; ++end; break;
  case 'm': case 'M': shift = 20; ++end; break;
  case 'g': case 'G': shift = 30; ++end; break;
  default: break;
  }
  if (*end || n > (~0ull >> shift))
    return false;
  out = n << shift;
  return true;
}

void readRealtime(Config &c) {
  const bool ok = parseBackend(DEFERO_DEFAULT_BACKEND, c);
  (void)ok; // CMake only passes names of this list
  if (const char *v = std::getenv("DEFERO_BACKEND")) {
    if (!parseBackend(v, c))
      bad("DEFERO_BACKEND", v,
          "hw-obs, hw-rbs, sw-buddy (real-time), kbit (the Defero K-Bit heap)");
  }
  c.heap_bytes = kMaxHeapBytes;
  if (const char *v = std::getenv("DEFERO_HEAP_BYTES")) {
    char accepted[200];
    std::snprintf(accepted, sizeof accepted,
                  "a power of two from 65536 (64K) to %llu (this build's "
                  "DEFERO_HEAP_BYTES), in bytes or with a K, M or G suffix",
                  kMaxHeapBytes);
    unsigned long long n = 0;
    if (!parseBytes(v, n) || n < kMinHeapBytes || n > kMaxHeapBytes || (n & (n - 1)))
      bad("DEFERO_HEAP_BYTES", v, accepted);
    if (c.backend_kind == Config::Backend::Kbit)
      bad("DEFERO_HEAP_BYTES", v,
          "nothing with DEFERO_BACKEND=kbit (it sizes the buddy heap of "
          "hw-obs, hw-rbs and sw-buddy; unset it)");
    c.heap_bytes = n;
  }
}
#endif

} // namespace

Config readConfig() {
  Config c;
  if (const char *v = std::getenv("DEFERO_POLICY")) {
    if (!parsePredicate(v, c.policy))
      bad("DEFERO_POLICY", v, kPredicateNames);
  }
  if (const char *v = std::getenv("DEFERO_K")) {
    char *end = nullptr;
    errno = 0;
    long k = std::strtol(v, &end, 10);
    if (!*v || *end || errno || k < DEFERO_K_MIN || k > DEFERO_K_MAX)
      bad("DEFERO_K", v,
          "an integer from " DEFERO_STR(DEFERO_K_MIN) " to " DEFERO_STR(DEFERO_K_MAX)
          " (K-class = 2^(32-K) bytes)");
    c.k = static_cast<unsigned>(k);
  }
  if (const char *v = std::getenv("DEFERO_STATS")) {
    if (!std::strcmp(v, "1"))
      c.stats_stderr = true;
    else if (std::strcmp(v, "0") != 0)
      bad("DEFERO_STATS", v, "1 (print stats JSON to stderr at exit), 0");
  }
  if (const char *v = std::getenv("DEFERO_STATS_FILE")) {
    openOrDie("DEFERO_STATS_FILE", v, false); // fail now, not at exit
    c.stats_file = v;
  }
  if (const char *v = std::getenv("DEFERO_TRACE"))
    c.trace_fd = openOrDie("DEFERO_TRACE", v, true);
#if DEFERO_REALTIME
  readRealtime(c);
#else
  if (const char *v = std::getenv("DEFERO_BACKEND")) {
    if (std::strcmp(v, "kbit") != 0)
      bad("DEFERO_BACKEND", v,
          "kbit (this libdefero was built without a real-time backend; "
          "configure with -DDEFERO_BACKEND=hw-obs|hw-rbs|sw-buddy)");
  }
  if (const char *v = std::getenv("DEFERO_HEAP_BYTES"))
    bad("DEFERO_HEAP_BYTES", v,
        "nothing in this build (it sizes the buddy heap of real-time builds, "
        "-DDEFERO_BACKEND=hw-obs|hw-rbs|sw-buddy; unset it)");
#endif
  return c;
}

} // namespace defero
