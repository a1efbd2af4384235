// exit_program - the ends of a process's life under libdefero:
//
//   exit_program static-dtors  - global containers filled in main and freed
//       by static destructors, atexit handlers that allocate, and a
//       detached thread still allocating while the process exits (so
//       memory is used after libdefero's destructor printed its stats).
//   exit_program pthread-exit  - main leaves by pthread_exit while six
//       threads still work; the last of them ends the process.
//   exit_program dlopen LIB    - dlopen/dlclose a library that allocates at
//       load, in calls and in dynamic TLS from several threads, with blocks
//       crossing between library and program (each frees the other's).
//
// Prints "exit_program: <mode> ok" when the mode's checks pass.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <pthread.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace {

std::map<std::string, std::vector<std::string>> global_map;
std::unordered_map<int, std::unique_ptr<int[]>> global_umap;
std::vector<void *> global_blocks;

struct FreesAtExit {
  std::vector<void *> blocks;
  ~FreesAtExit() {
    for (void *p : blocks)
      std::free(p);
    // Allocate and free again this late, too.
    std::string s(1000, 'z');
    void *p = std::malloc(100000);
    std::free(p);
  }
};
FreesAtExit frees_at_exit;

void busy() {
  std::vector<std::string> v;
  for (unsigned i = 0;; ++i) {
    v.emplace_back(i % 300, 'b');
    if (v.size() > 500)
      v.clear();
    std::free(std::malloc(i % 5000));
  }
}

int staticDtors() {
  for (int i = 0; i < 2000; ++i) {
    global_map[std::to_string(i)].assign(5, std::string(static_cast<std::size_t>(i % 90), 'g'));
    global_umap[i] = std::make_unique<int[]>(static_cast<std::size_t>(i % 50 + 1));
    global_blocks.push_back(std::malloc(static_cast<std::size_t>(i % 3000)));
    frees_at_exit.blocks.push_back(std::malloc(static_cast<std::size_t>(i * 17 % 70000)));
  }
  std::atexit([] {
    for (void *p : global_blocks)
      std::free(p);
    global_blocks.clear();
    global_blocks.shrink_to_fit();
    auto *s = new std::map<int, int>;
    for (int i = 0; i < 1000; ++i)
      (*s)[i] = i;
    delete s;
  });
  std::thread(busy).detach(); // still running while exit() tears down
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::printf("exit_program: static-dtors ok\n");
  std::fflush(stdout);
  return 0;
}

std::atomic<int> running{0};

void *worker(void *arg) {
  const long id = reinterpret_cast<long>(arg);
  std::vector<std::unique_ptr<std::string>> v;
  for (int i = 0; i < 30000; ++i) {
    v.push_back(std::make_unique<std::string>(static_cast<std::size_t>(i % 64 + id), 'w'));
    if (v.size() > 1000)
      v.erase(v.begin(), v.begin() + 500);
  }
  if (running.fetch_sub(1) == 1) {
    std::printf("exit_program: pthread-exit ok\n");
    std::fflush(stdout);
  }
  return nullptr;
}

int pthreadExit() {
  running = 6;
  for (long t = 0; t < 6; ++t) {
    pthread_t th;
    if (pthread_create(&th, nullptr, worker, reinterpret_cast<void *>(t)) != 0)
      return 1;
    pthread_detach(th);
  }
  // Main's own blocks, still referenced by a global: freed by nobody.
  global_blocks.push_back(std::malloc(123));
  pthread_exit(nullptr);
}

int dlopenMode(const char *lib) {
  int bad = 0;
  for (int round = 0; round < 40; ++round) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::fprintf(stderr, "exit_program: dlopen: %s\n", dlerror());
      return 1;
    }
    auto lib_alloc = reinterpret_cast<void *(*)(std::size_t)>(dlsym(h, "lib_alloc"));
    auto lib_free = reinterpret_cast<void (*)(void *)>(dlsym(h, "lib_free"));
    auto lib_strdup = reinterpret_cast<char *(*)(const char *)>(dlsym(h, "lib_strdup"));
    auto lib_check = reinterpret_cast<int (*)()>(dlsym(h, "lib_check"));
    if (!lib_alloc || !lib_free || !lib_strdup || !lib_check)
      return 1;
    std::vector<std::thread> ts;
    std::atomic<int> tbad{0};
    for (int t = 0; t < 4; ++t)
      ts.emplace_back([&, t] {
        std::vector<void *> mine;
        for (int i = 0; i < 300; ++i) {
          const std::size_t n = static_cast<std::size_t>((i * 97 + t) % 40000);
          auto *p = static_cast<unsigned char *>(lib_alloc(n));
          if (n && (p[0] != 0x6C || p[n - 1] != 0x6C))
            tbad.fetch_add(1);
          if (i % 2)
            std::free(p); // the library's block, freed by the program
          else
            mine.push_back(p);
          lib_free(std::malloc(n)); // the program's block, freed by the library
        }
        for (void *p : mine)
          lib_free(p);
        if (lib_check() != 0)
          tbad.fetch_add(1);
      });
    for (auto &t : ts)
      t.join();
    char *s = lib_strdup("dlopen-round");
    if (!s || std::strcmp(s, "dlopen-round") != 0)
      ++bad;
    std::free(s);
    bad += tbad.load();
    if (dlclose(h) != 0) {
      std::fprintf(stderr, "exit_program: dlclose: %s\n", dlerror());
      return 1;
    }
  }
  if (bad)
    return 1;
  std::printf("exit_program: dlopen ok\n");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "static-dtors")
    return staticDtors();
  if (mode == "pthread-exit")
    return pthreadExit();
  if (mode == "dlopen" && argc > 2)
    return dlopenMode(argv[2]);
  std::fprintf(stderr, "usage: exit_program static-dtors|pthread-exit|dlopen LIB\n");
  return 2;
}
