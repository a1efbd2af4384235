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
    if (!*v || *end || errno || k < 0 || k > 32)
      bad("DEFERO_K", v, "an integer from 0 to 32 (K-class = 2^(32-K) bytes)");
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
  return c;
}

} // namespace defero
