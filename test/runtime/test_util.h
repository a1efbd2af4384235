// test_util.h - helpers shared by the runtime GoogleTest suites: a test
// Super that counts calls, fill patterns, a temporary file, a minimal JSON
// parser (for the stats schema) and death-test regex building.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>

#include "defero/heaplayers/heap_layer.h"
#include "defero/heaplayers/top/mmap_heap.h"

namespace defero::test {

/// A Super for layer tests: every object is its own mapping (MmapHeap), and
/// every call is counted, with the last size/pointer seen.
class CountingMmap {
public:
  void *malloc(std::size_t sz) {
    ++mallocs;
    last_malloc_size = sz;
    void *p = heap_.malloc(sz);
    last_malloc_result = p;
    return p;
  }
  void free(void *p) {
    ++frees;
    last_freed = p;
    heap_.free(p);
  }
  std::size_t getSize(const void *p) { return heap_.getSize(p); }
  bool owns(const void *p) const { return heap_.owns(p); }

  std::size_t mallocs = 0, frees = 0, last_malloc_size = 0;
  void *last_malloc_result = nullptr;
  void *last_freed = nullptr;

private:
  MmapHeap heap_;
};
static_assert(SizedHeapLayer<CountingMmap> && OwningHeapLayer<CountingMmap>);

/// Fills [p, p+n) with a pattern derived from `seed`; checkFill verifies it.
inline std::uint8_t patternByte(std::uint64_t seed, std::size_t i) {
  return static_cast<std::uint8_t>((seed * 0x9E3779B97F4A7C15ull + i * 131) >> 7);
}
inline void fill(void *p, std::size_t n, std::uint64_t seed) {
  auto *b = static_cast<std::uint8_t *>(p);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = patternByte(seed, i);
}
/// Index of the first byte that differs from the pattern, or n if intact.
inline std::size_t checkFill(const void *p, std::size_t n, std::uint64_t seed) {
  auto *b = static_cast<const std::uint8_t *>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (b[i] != patternByte(seed, i))
      return i;
  return n;
}

/// A cheaper fill for large volumes: every byte = v, with the seed in the
/// first and last 8 bytes (when there is room).
inline void fillFast(void *p, std::size_t n, std::uint64_t seed) {
  std::memset(p, static_cast<int>(seed & 0xff), n);
  if (n >= 16) {
    std::memcpy(p, &seed, 8);
    std::memcpy(static_cast<char *>(p) + n - 8, &seed, 8);
  }
}
inline bool checkFast(const void *p, std::size_t n, std::uint64_t seed) {
  const auto *b = static_cast<const unsigned char *>(p);
  std::size_t from = 0, to = n;
  if (n >= 16) {
    std::uint64_t a, z;
    std::memcpy(&a, b, 8);
    std::memcpy(&z, b + n - 8, 8);
    if (a != seed || z != seed)
      return false;
    from = 8;
    to = n - 8;
  }
  for (std::size_t i = from; i < to; ++i)
    if (b[i] != static_cast<unsigned char>(seed & 0xff))
      return false;
  return true;
}

/// A temporary file, removed at scope exit.
class TempFile {
public:
  TempFile() {
    const char *dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/defero-test-XXXXXX";
    fd_ = ::mkstemp(path_.data());
  }
  ~TempFile() {
    if (fd_ >= 0)
      ::close(fd_);
    ::unlink(path_.c_str());
  }
  TempFile(const TempFile &) = delete;
  TempFile &operator=(const TempFile &) = delete;
  int fd() const { return fd_; }
  const std::string &path() const { return path_; }
  std::string contents() const {
    std::string s;
    if (FILE *f = std::fopen(path_.c_str(), "rb")) {
      char buf[4096];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
        s.append(buf, n);
      std::fclose(f);
    }
    return s;
  }

private:
  std::string path_;
  int fd_ = -1;
};

/// "0x..." as TraceLog and glibc's %p print a non-null pointer.
inline std::string hexPtr(const void *p) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx",
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
  return b;
}

/// The regex (POSIX extended, whole stderr) of os::fatal_pointer's single
/// line: "defero: <call>(<ptr>): <what>\n". `what` must be regex-escaped.
inline std::string fatalLine(const std::string &call, const void *p,
                             const std::string &what) {
  char b[32];
  std::snprintf(b, sizeof b, "%p", p);
  return "^defero: " + call + "\\(" + b + "\\): " + what + "\n$";
}
inline const char *kDoubleFree = "double free \\(block is already free\\)";
inline const char *kForeign = "pointer not allocated by this heap";
inline const char *kInterior = "pointer is inside a block, not its start";
inline const char *kCanary = "heap overflow: canary after the block overwritten";

// --- a minimal JSON parser -------------------------------------------------
// Parses one JSON value and flattens it into "a.b.c" -> raw text of scalar
// values (strings without quotes). Returns false on any syntax error.
class Json {
public:
  static bool parse(const std::string &text,
                    std::map<std::string, std::string> &out) {
    Json j{text, 0};
    j.ws();
    if (!j.value("", out))
      return false;
    j.ws();
    return j.i_ == text.size();
  }

private:
  Json(const std::string &t, std::size_t i) : t_(t), i_(i) {}
  void ws() {
    while (i_ < t_.size() && std::strchr(" \t\r\n", t_[i_]))
      ++i_;
  }
  bool lit(const char *s) {
    const std::size_t n = std::strlen(s);
    if (t_.compare(i_, n, s) != 0)
      return false;
    i_ += n;
    return true;
  }
  bool str(std::string &s) {
    if (i_ >= t_.size() || t_[i_] != '"')
      return false;
    for (++i_; i_ < t_.size(); ++i_) {
      char c = t_[i_];
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c == '\\') {
        if (++i_ >= t_.size())
          return false;
        c = t_[i_];
      } else if (static_cast<unsigned char>(c) < 0x20) {
        return false;
      }
      s += c;
    }
    return false;
  }
  bool number(std::string &s) {
    const std::size_t start = i_;
    if (i_ < t_.size() && t_[i_] == '-')
      ++i_;
    std::size_t digits = 0;
    while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_])))
      ++i_, ++digits;
    if (!digits)
      return false;
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_;
      std::size_t frac = 0;
      while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_])))
        ++i_, ++frac;
      if (!frac)
        return false;
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-'))
        ++i_;
      std::size_t exp = 0;
      while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_])))
        ++i_, ++exp;
      if (!exp)
        return false;
    }
    s = t_.substr(start, i_ - start);
    return true;
  }
  bool value(const std::string &path, std::map<std::string, std::string> &out) {
    ws();
    if (i_ >= t_.size())
      return false;
    const char c = t_[i_];
    if (c == '{') {
      ++i_;
      out[path] = "{}";
      ws();
      if (i_ < t_.size() && t_[i_] == '}') {
        ++i_;
        return true;
      }
      for (;;) {
        ws();
        std::string key;
        if (!str(key))
          return false;
        ws();
        if (!lit(":"))
          return false;
        if (!value(path.empty() ? key : path + "." + key, out))
          return false;
        ws();
        if (lit(","))
          continue;
        return lit("}");
      }
    }
    if (c == '[') {
      ++i_;
      out[path] = "[]";
      ws();
      if (lit("]"))
        return true;
      for (int n = 0;; ++n) {
        if (!value(path + "[" + std::to_string(n) + "]", out))
          return false;
        ws();
        if (lit(","))
          continue;
        return lit("]");
      }
    }
    std::string s;
    if (c == '"') {
      if (!str(s))
        return false;
    } else if (lit("true")) {
      s = "true";
    } else if (lit("false")) {
      s = "false";
    } else if (lit("null")) {
      s = "null";
    } else if (!number(s)) {
      return false;
    }
    out[path] = s;
    return true;
  }

  const std::string &t_;
  std::size_t i_;
};

} // namespace defero::test
