// config.cpp - parsing of DEFERO_* (runs inside the first malloc: no
// allocation, no locale, no stdio buffers). Cost: once per process, a few
// getenv calls; nothing after.
#include "config.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

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

constexpr const char *kTraceAccepted =
    "a writable file path of at most 4095 bytes, in which %p stands for the "
    "process id and %% for a percent sign";

/// DEFERO_TRACE as read, when it names the process: a forked child expands
/// it again (the program may have changed its environment since).
char g_trace_pattern[4096];

/// Whether a DEFERO_TRACE pattern holds %p (not %%p, a literal "%p").
bool namesProcess(const char *pattern) {
  for (const char *s = pattern; *s; ++s)
    if (*s == '%') {
      if (s[1] == 'p')
        return true;
      if (!s[1])
        return false;
      ++s;
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
  if (const char *v = std::getenv("DEFERO_DECAY_MS")) {
    char *end = nullptr;
    errno = 0;
    const long ms = std::strtol(v, &end, 10);
    if (!std::strcmp(v, "never"))
      c.decay_ms = ~0u;
    else if (!*v || *end || errno || ms < 0 || ms > 3600000)
      bad("DEFERO_DECAY_MS", v,
          "milliseconds from 0 (at once) to 3600000, or never (how long an empty "
          "span keeps its memory before it goes back to the OS)");
    else
      c.decay_ms = static_cast<unsigned>(ms);
  }
  if (const char *v = std::getenv("DEFERO_MAX_RESIDENT")) {
    unsigned long long n = 0;
    if (!parseBytes(v, n) || n == 0)
      bad("DEFERO_MAX_RESIDENT", v,
          "bytes from 1, with an optional K, M or G suffix (above it, an empty span's "
          "memory goes back to the OS at once)");
    c.max_resident = n;
  }
  if (const char *v = std::getenv("DEFERO_TRACE")) {
    char path[sizeof g_trace_pattern];
    if (!traceFilePath(v, ::getpid(), path, sizeof path))
      bad("DEFERO_TRACE", v, kTraceAccepted);
    c.trace_fd = openOrDie("DEFERO_TRACE", path, true);
    if (namesProcess(v)) {
      std::memcpy(g_trace_pattern, v, std::strlen(v) + 1); // (fits: path did)
      c.trace_pattern = g_trace_pattern;
    }
  }
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

bool traceFilePath(const char *pattern, long pid, char *out, unsigned long cap) {
  unsigned long n = 0;
  const auto put = [&](const char *text, unsigned long len) {
    if (n + len >= cap)
      return false;
    std::memcpy(out + n, text, len);
    n += len;
    return true;
  };
  for (const char *s = pattern; *s; ++s) {
    bool fits;
    if (*s != '%') {
      fits = put(s, 1);
    } else if (s[1] == '%') {
      fits = put(s, 1);
      ++s;
    } else if (s[1] == 'p') {
      char digits[24];
      const int len = std::snprintf(digits, sizeof digits, "%ld", pid);
      fits = len > 0 && put(digits, static_cast<unsigned long>(len));
      ++s;
    } else {
      return false; // another sequence, or a % that ends the pattern
    }
    if (!fits)
      return false;
  }
  if (cap == 0)
    return false;
  out[n] = '\0';
  return true;
}

int openChildTrace(const char *pattern, long parent_pid) {
  char path[sizeof g_trace_pattern];
  const long pid = ::getpid();
  int fd = -1;
  int err = ENAMETOOLONG;
  if (traceFilePath(pattern, pid, path, sizeof path)) {
    fd = os::open_for_writing(path, false);
    err = errno;
  } else {
    std::snprintf(path, sizeof path, "%s", pattern);
  }
  if (fd < 0) {
    char msg[512];
    const int n = std::snprintf(
        msg, sizeof msg,
        "defero: DEFERO_TRACE='%.200s': cannot open for writing in process %ld "
        "(forked from %ld): %s; that process runs untraced\n",
        path, pid, parent_pid, err == ENAMETOOLONG ? "path too long" : errnoText(err));
    if (n > 0)
      os::write_all(2, msg, static_cast<std::size_t>(n) < sizeof msg ? static_cast<std::size_t>(n) : sizeof msg - 1);
    return -1;
  }
  char head[64];
  const int n = std::snprintf(head, sizeof head, "# forked from pid %ld\n", parent_pid);
  if (n > 0)
    os::write_all(fd, head, static_cast<std::size_t>(n));
  return fd;
}

} // namespace defero
