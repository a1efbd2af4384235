// trace_heap.h - TraceHeap: records every malloc and free of Super to a file
// for later replay (trace-driven fragmentation measurement, Johnstone 1997).
//
// Format, one event per line, pointers in hex:
//   m <ptr> <size>          malloc returned ptr for size bytes
//   f <ptr>                 free(ptr)
//   r <old> <new> <size>    realloc moved/resized old to new, size bytes
// Lines are buffered (64 KiB) and written with write(2) under a lock, so
// the log is thread-safe and never allocates. flush() writes what is left;
// owners call it at exit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "defero/heaplayers/heap_layer.h"
#include "defero/heaplayers/threads/spin_lock.h"
#include "defero/platform/os.h"

namespace defero {

class TraceLog {
public:
  constexpr TraceLog() = default;

  void open(int fd) { fd_ = fd; }
  bool enabled() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  void onMalloc(const void *p, std::size_t sz) { event('m', p, nullptr, sz, true); }
  void onFree(const void *p) { event('f', p, nullptr, 0, false); }
  void onRealloc(const void *old, const void *p, std::size_t sz) {
    event('r', old, p, sz, true);
  }

  void flush() {
    std::lock_guard<SpinLock> guard(lock_);
    flushLocked();
  }
  /// Drops buffered events unwritten (a forked child: its parent writes
  /// them). Call with the log locked or from a single thread.
  void discardBuffered() { used_ = 0; }
  void lockLog() { lock_.lock(); }
  void unlockLog() { lock_.unlock(); }

private:
  static char *hex(char *out, std::uintptr_t v) {
    char tmp[20];
    int n = 0;
    do {
      tmp[n++] = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v);
    *out++ = '0';
    *out++ = 'x';
    while (n)
      *out++ = tmp[--n];
    return out;
  }
  static char *dec(char *out, std::size_t v) {
    char tmp[24];
    int n = 0;
    do {
      tmp[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (n)
      *out++ = tmp[--n];
    return out;
  }

  void event(char kind, const void *a, const void *b, std::size_t sz,
             bool with_size) {
    if (fd_ < 0)
      return;
    char line[80];
    char *o = line;
    *o++ = kind;
    *o++ = ' ';
    o = hex(o, reinterpret_cast<std::uintptr_t>(a));
    if (kind == 'r') {
      *o++ = ' ';
      o = hex(o, reinterpret_cast<std::uintptr_t>(b));
    }
    if (with_size) {
      *o++ = ' ';
      o = dec(o, sz);
    }
    *o++ = '\n';
    const std::size_t n = static_cast<std::size_t>(o - line);
    std::lock_guard<SpinLock> guard(lock_);
    if (used_ + n > sizeof buf_)
      flushLocked();
    for (std::size_t i = 0; i < n; ++i)
      buf_[used_ + i] = line[i];
    used_ += n;
  }

  void flushLocked() {
    if (fd_ >= 0 && used_)
      os::write_all(fd_, buf_, used_);
    used_ = 0;
  }

  SpinLock lock_;
  int fd_ = -1;
  std::size_t used_ = 0;
  char buf_[65536] = {};
};

template <class Super> class TraceHeap : public Super {
public:
  void *malloc(std::size_t sz) {
    void *p = Super::malloc(sz);
    if (p)
      log_.onMalloc(p, sz);
    return p;
  }
  void free(void *p) {
    if (p)
      log_.onFree(p);
    Super::free(p);
  }
  TraceLog &log() { return log_; }

private:
  TraceLog log_;
};

static_assert(SizedHeapLayer<TraceHeap<detail::ProbeHeap>>);

} // namespace defero
