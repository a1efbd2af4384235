// exhaust_program - fills the real-time buddy heap (run it with a small
// DEFERO_HEAP_BYTES) and checks how exhaustion looks to a program: malloc
// returns NULL with errno ENOMEM, operator new throws std::bad_alloc, the
// nothrow form returns nullptr; after everything is freed the heap serves
// a block of its whole size again. Prints "ok: ..." and exits 0, or says
// what went wrong and exits 1.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

int main(int argc, char **argv) {
  const unsigned long long heap = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : 0;
  if (heap < 65536) {
    std::fprintf(stderr, "usage: exhaust_program HEAP_BYTES (>= 65536, as DEFERO_HEAP_BYTES)\n");
    return 2;
  }
  std::vector<void *> blocks;
  blocks.reserve(heap / 1024 + 16); // before the heap fills
  for (;;) {
    errno = 0;
    void *p = std::malloc(1000); // 1 KiB blocks
    if (!p) {
      if (errno != ENOMEM) {
        std::printf("malloc returned NULL with errno %d, not ENOMEM\n", errno);
        return 1;
      }
      break;
    }
    std::memset(p, 0x5a, 1000);
    blocks.push_back(p);
  }
  // Some of the heap went to the vector's buffer and the C++ runtime; the
  // rest is 1 KiB blocks.
  if (blocks.size() * 1024 > heap || blocks.size() * 1024 < heap / 2) {
    std::printf("%zu blocks of 1 KiB in a heap of %llu bytes\n", blocks.size(), heap);
    return 1;
  }
  bool threw = false;
  try {
    void *q = ::operator new(4096);
    ::operator delete(q);
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  if (!threw || ::operator new(4096, std::nothrow) != nullptr) {
    std::printf("operator new did not fail on a full heap\n");
    return 1;
  }
  const std::size_t n = blocks.size();
  for (void *p : blocks)
    std::free(p);
  blocks.clear();
  blocks.shrink_to_fit();
  // Everything is back: a block of half the heap fits again.
  void *big = std::malloc(heap / 2);
  if (!big) {
    std::printf("the freed heap did not coalesce: no block of %llu bytes\n", heap / 2);
    return 1;
  }
  std::free(big);
  std::printf("ok: %zu blocks of 1 KiB, then NULL (ENOMEM) and bad_alloc; freed and coalesced\n", n);
  return 0;
}
