// alloc_lib - a shared library that allocates at load, in calls, in a
// thread_local (dynamic TLS of a dlopen'ed library) and frees at unload;
// dlopen'ed and dlclose'd over and over by exit_program's "dlopen" mode.
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

struct Registry {
  std::map<int, std::string> names;
  std::vector<void *> blocks;
  Registry() {
    for (int i = 0; i < 200; ++i) {
      names[i] = std::string(static_cast<std::size_t>(20 + i % 50), 'n');
      blocks.push_back(std::malloc(static_cast<std::size_t>(1 + i * 37)));
    }
  }
  ~Registry() {
    for (void *p : blocks)
      std::free(p);
  }
};
Registry registry; // constructed at dlopen, destroyed at dlclose

struct PerThread {
  std::vector<std::string> v;
  PerThread() { v.assign(20, std::string(100, 't')); }
};
thread_local PerThread per_thread; // dynamic TLS: allocated by the loader

} // namespace

extern "C" __attribute__((visibility("default"))) void *lib_alloc(std::size_t n) {
  void *p = std::malloc(n);
  if (p)
    std::memset(p, 0x6C, n);
  per_thread.v.push_back(std::string(n % 200, 'x'));
  return p;
}

extern "C" __attribute__((visibility("default"))) void lib_free(void *p) {
  std::free(p);
}

extern "C" __attribute__((visibility("default"))) char *lib_strdup(const char *s) {
  return strdup(s);
}

extern "C" __attribute__((visibility("default"))) int lib_check() {
  return registry.names.size() == 200 && per_thread.v.size() >= 20 ? 0 : 1;
}
