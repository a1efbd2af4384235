// glibc_semantics_test - what the malloc family and operator new/delete of
// libdefero must do to stand in for glibc's. Linked with libdefero, so every
// allocation in this process (GoogleTest's and glibc's internal ones too)
// goes through the Defero overrides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <glob.h>
#include <iconv.h>
#include <limits>
#include <malloc.h>
#include <memory_resource>
#include <new>
#include <pwd.h>
#include <regex.h>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include "defero/defero.h"

namespace {

std::uintptr_t addr(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }

/// Hides a size from the compiler, so it does not warn about (or fold) the
/// absurd requests these tests make on purpose.
std::size_t opaque(std::size_t v) {
  volatile std::size_t x = v;
  return x;
}

// Sizes around the K-Bit size classes and the small/large limit (32 KiB),
// and around the large-object cache's limit (4 MiB).
const std::size_t kSizes[] = {0,     1,     15,    16,    17,    47,     48,
                              49,    64,    255,   256,   257,   1024,   1025,
                              4095,  4096,  4097,  10240, 16384, 32767,  32768,
                              32769, 40000, 65536, 65537, 1 << 20, (4 << 20) + 1};

/// A pointer is ours to use: writable over its whole size, freeable.
void touch(void *p, std::size_t n, unsigned char v) {
  if (n)
    std::memset(p, v, n);
}

bool allIs(const void *p, std::size_t n, unsigned char v) {
  auto *c = static_cast<const unsigned char *>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (c[i] != v)
      return false;
  return true;
}

TEST(GlibcSemantics, MallocZeroGivesUniqueFreeablePointers) {
  std::set<void *> seen;
  std::vector<void *> v;
  for (int i = 0; i < 1000; ++i) {
    void *p = std::malloc(0);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(seen.insert(p).second) << "malloc(0) returned " << p << " twice";
    EXPECT_EQ(addr(p) % 16, 0u);
    v.push_back(p);
  }
  for (void *p : v)
    std::free(p);
  void *p = ::operator new(0);
  void *q = ::operator new(0);
  EXPECT_NE(p, q);
  ::operator delete(p);
  ::operator delete(q);
}

TEST(GlibcSemantics, ReallocEdgeCases) {
  // realloc(NULL, n) is malloc(n).
  for (std::size_t n : kSizes) {
    void *p = std::realloc(nullptr, n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_GE(malloc_usable_size(p), n);
    touch(p, n, 1);
    std::free(p);
  }
  // realloc(p, 0) frees p and returns NULL (glibc), small and large.
  for (std::size_t n : {std::size_t{24}, std::size_t{100000}}) {
    void *p = std::malloc(n);
    ASSERT_NE(p, nullptr);
    errno = 0;
    EXPECT_EQ(std::realloc(p, 0), nullptr);
  }
  EXPECT_NE(std::realloc(nullptr, 0), nullptr) << "realloc(NULL, 0) is malloc(0)";
  // Contents survive every move: small -> large -> small -> large.
  auto *p = static_cast<unsigned char *>(std::malloc(100));
  touch(p, 100, 0x3C);
  const std::size_t steps[] = {5000, 40000, 3000000, 50000, 200, 70000, 60};
  std::size_t have = 100;
  for (std::size_t n : steps) {
    auto *q = static_cast<unsigned char *>(std::realloc(p, n));
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(allIs(q, std::min(have, n), 0x3C)) << have << " -> " << n;
    EXPECT_GE(malloc_usable_size(q), n);
    touch(q, n, 0x3C);
    p = q;
    have = n;
  }
  std::free(p);
}

TEST(GlibcSemantics, ReallocarrayOverflowAndZero) {
  void *p = std::malloc(10);
  errno = 0;
  void *failed = reallocarray(p, opaque(SIZE_MAX / 2), 3);
  EXPECT_EQ(failed, nullptr);
  EXPECT_EQ(errno, ENOMEM);
  void *q = reallocarray(failed ? failed : p, 100, 8); // p survived the failure
  ASSERT_NE(q, nullptr);
  touch(q, 800, 2);
  std::free(q);
}

TEST(GlibcSemantics, CallocZeroesReusedMemory) {
  for (int round = 0; round < 3; ++round)
    for (std::size_t n : kSizes) {
      void *d = std::malloc(n);
      ASSERT_NE(d, nullptr);
      touch(d, n, 0xA5);
      std::free(d);
      for (std::size_t each : {std::size_t{1}, std::size_t{8}}) {
        auto *z = static_cast<unsigned char *>(std::calloc(n / each, each));
        ASSERT_NE(z, nullptr);
        EXPECT_TRUE(allIs(z, n / each * each, 0)) << "calloc(" << n / each
                                                  << ", " << each << ")";
        touch(z, n / each * each, 0x5A); // dirty again for the next size
        std::free(z);
      }
    }
}

TEST(GlibcSemantics, CallocZeroesCachedLargeMappings) {
  // Freed large mappings are cached and handed to requests up to twice
  // smaller: calloc must clear them.
  std::vector<void *> dirty;
  for (std::size_t n : {std::size_t{40000}, std::size_t{100000}, std::size_t{1} << 20,
                        std::size_t{3} << 20, std::size_t{4} << 20}) {
    void *p = std::malloc(n);
    touch(p, n, 0xEE);
    dirty.push_back(p);
  }
  for (void *p : dirty)
    std::free(p);
  for (std::size_t n : {std::size_t{33000}, std::size_t{60000}, std::size_t{600000},
                        std::size_t{2} << 20, std::size_t{4} << 20}) {
    auto *z = static_cast<unsigned char *>(std::calloc(1, n));
    ASSERT_NE(z, nullptr);
    EXPECT_TRUE(allIs(z, n, 0)) << "calloc(1, " << n << ")";
    touch(z, n, 0xEE);
    std::free(z);
  }
  // A mapping shrunk and regrown by realloc, then freed and reused.
  void *p = std::malloc(1 << 20);
  touch(p, 1 << 20, 0x77);
  p = std::realloc(p, 50000);
  p = std::realloc(p, 900000);
  touch(p, 900000, 0x77);
  std::free(p);
  auto *z = static_cast<unsigned char *>(std::calloc(900000, 1));
  EXPECT_TRUE(allIs(z, 900000, 0));
  std::free(z);
}

// realloc of a large block (up to 32 MiB: the thread's best-fit region) shrinks it in
// place, giving the tail back, and grows it in place when the memory above
// it is free; its contents stay either way.
TEST(GlibcSemantics, ReallocResizesALargeBlockInPlaceWhenItCan) {
  constexpr std::size_t kSize = 7 << 20;
  auto *p = static_cast<char *>(std::malloc(2 * kSize));
  ASSERT_NE(p, nullptr);
  const auto at = reinterpret_cast<std::uintptr_t>(p); // (p is not read after a realloc)
  for (std::size_t i = 0; i < 2 * kSize; i += 4096)
    p[i] = static_cast<char>(i >> 12);
  auto *s = static_cast<char *>(std::realloc(p, kSize));
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(s), at) << "a shrink moved the block";
  EXPECT_GE(malloc_usable_size(s), kSize);
  EXPECT_LT(malloc_usable_size(s), kSize + 4096) << "the tail was not given back";
  // The tail it gave back is free memory right above it: a grow takes it.
  auto *r = static_cast<char *>(std::realloc(s, 2 * kSize - 8192));
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(r), at)
      << "moved, though the 7 MiB above it were free";
  ASSERT_GE(malloc_usable_size(r), 2 * kSize - 8192);
  for (std::size_t i = 0; i < kSize; i += 4096)
    ASSERT_EQ(r[i], static_cast<char>(i >> 12));
  touch(r, 2 * kSize - 8192, 0x55);
  std::free(r);
}

// realloc of a middle-sized block (4-32 KiB: the thread's best-fit heap)
// keeps its contents, growing and shrinking, and its usable size covers
// every request; calloc of one is zeroed though its memory was used.
TEST(GlibcSemantics, ReallocAndCallocOfMiddleSizedBlocks) {
  auto *p = static_cast<unsigned char *>(std::malloc(5000));
  ASSERT_NE(p, nullptr);
  EXPECT_GE(malloc_usable_size(p), 5000u);
  for (int i = 0; i < 5000; ++i)
    p[i] = static_cast<unsigned char>(i * 7);
  p = static_cast<unsigned char *>(std::realloc(p, 30000));
  ASSERT_NE(p, nullptr);
  EXPECT_GE(malloc_usable_size(p), 30000u);
  for (int i = 0; i < 5000; ++i)
    ASSERT_EQ(p[i], static_cast<unsigned char>(i * 7)) << "byte " << i << " after growing";
  p = static_cast<unsigned char *>(std::realloc(p, 12000));
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < 5000; ++i)
    ASSERT_EQ(p[i], static_cast<unsigned char>(i * 7)) << "byte " << i << " after shrinking";
  p = static_cast<unsigned char *>(std::realloc(p, 2000));
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < 2000; ++i)
    ASSERT_EQ(p[i], static_cast<unsigned char>(i * 7)) << "byte " << i << " after shrinking";
  std::free(p);
  void *d = std::malloc(9000);
  ASSERT_NE(d, nullptr);
  touch(d, 9000, 0x77);
  std::free(d);
  auto *z = static_cast<unsigned char *>(std::calloc(1, 9000));
  ASSERT_NE(z, nullptr);
  for (int i = 0; i < 9000; ++i)
    ASSERT_EQ(z[i], 0) << "calloc left byte " << i << " set";
  std::free(z);
}

// Blocks of 32-256 KiB come from the thread's best-fit heap too: realloc
// moves one's contents into the large heap and back, and calloc of one cut
// from memory a freed block dirtied is zeroed.
TEST(GlibcSemantics, ReallocAndCallocAcrossTheMidHeapsTop) {
  auto *p = static_cast<unsigned char *>(std::malloc(100 << 10));
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < (100 << 10); ++i)
    p[i] = static_cast<unsigned char>(i * 7);
  for (std::size_t n : {std::size_t{1} << 20, std::size_t{50} << 10, std::size_t{250} << 10,
                        std::size_t{40} << 10}) {
    p = static_cast<unsigned char *>(std::realloc(p, n));
    ASSERT_NE(p, nullptr);
    EXPECT_GE(malloc_usable_size(p), n);
    for (int i = 0; i < (40 << 10); ++i)
      ASSERT_EQ(p[i], static_cast<unsigned char>(i * 7)) << "byte " << i << " at " << n;
  }
  std::free(p);
  void *d = std::malloc(200 << 10);
  ASSERT_NE(d, nullptr);
  touch(d, 200 << 10, 0x77);
  std::free(d);
  auto *z = static_cast<unsigned char *>(std::calloc(3, 60 << 10));
  ASSERT_NE(z, nullptr);
  EXPECT_TRUE(allIs(z, 180 << 10, 0)) << "calloc left bytes set";
  std::free(z);
}

TEST(GlibcSemantics, CallocOverflow) {
  errno = 0;
  EXPECT_EQ(std::calloc(opaque(SIZE_MAX / 2), 3), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(std::calloc(opaque(SIZE_MAX), opaque(SIZE_MAX)), nullptr);
  EXPECT_EQ(errno, ENOMEM);
}

TEST(GlibcSemantics, AlignedAllocationAtEveryPowerOfTwo) {
  const std::size_t sizes[] = {0,    1,     8,     48,    63,    64,    65,
                               4095, 4096,  4097,  32767, 32768, 32769, 65536,
                               100000};
  for (std::size_t align = 1; align <= (std::size_t{1} << 20); align *= 2) {
    for (std::size_t n : sizes) {
      void *a = aligned_alloc(align, n);
      ASSERT_NE(a, nullptr) << "aligned_alloc(" << align << ", " << n << ")";
      EXPECT_EQ(addr(a) % align, 0u) << "aligned_alloc(" << align << ", " << n << ")";
      EXPECT_GE(malloc_usable_size(a), n);
      touch(a, n, 3);

      void *m = memalign(align, n);
      ASSERT_NE(m, nullptr) << "memalign(" << align << ", " << n << ")";
      EXPECT_EQ(addr(m) % align, 0u);
      EXPECT_GE(malloc_usable_size(m), n);
      touch(m, n, 4);

      void *pm = nullptr;
      if (align >= sizeof(void *)) {
        ASSERT_EQ(posix_memalign(&pm, align, n), 0)
            << "posix_memalign(" << align << ", " << n << ")";
        EXPECT_EQ(addr(pm) % align, 0u);
        EXPECT_GE(malloc_usable_size(pm), n);
        touch(pm, n, 5);
      } else {
        void *untouched = &pm;
        pm = untouched;
        EXPECT_EQ(posix_memalign(&pm, align, n), EINVAL);
        EXPECT_EQ(pm, untouched) << "posix_memalign wrote *memptr on EINVAL";
        pm = nullptr;
      }
      // Contents survive realloc of an aligned block.
      a = std::realloc(a, n + 100);
      ASSERT_NE(a, nullptr);
      EXPECT_TRUE(allIs(a, n, 3));
      std::free(a);
      std::free(m);
      std::free(pm);
    }
  }
}

TEST(GlibcSemantics, PosixMemalignRejectsBadAlignmentWithoutTouchingOut) {
  for (std::size_t align : {std::size_t{0}, std::size_t{3}, std::size_t{4},
                            std::size_t{24}, std::size_t{48}}) {
    void *out = reinterpret_cast<void *>(0x1234);
    const int saved = errno = 77;
    EXPECT_EQ(posix_memalign(&out, align, 10), EINVAL) << align;
    EXPECT_EQ(out, reinterpret_cast<void *>(0x1234));
    EXPECT_EQ(errno, saved);
  }
}

TEST(GlibcSemantics, HugeRequestsFailCleanly) {
  errno = 0;
  EXPECT_EQ(std::malloc(opaque(SIZE_MAX - 10)), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(std::malloc(opaque(SIZE_MAX / 2 + 1)), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  void *out = reinterpret_cast<void *>(0x1);
  EXPECT_EQ(posix_memalign(&out, std::size_t{1} << 40, 10), ENOMEM);
  EXPECT_EQ(out, reinterpret_cast<void *>(0x1));
  EXPECT_EQ(posix_memalign(&out, std::size_t{1} << 63, 10), ENOMEM);
  EXPECT_EQ(posix_memalign(&out, 4096, opaque(SIZE_MAX - 4096)), ENOMEM);
  errno = 0;
  EXPECT_EQ(aligned_alloc(std::size_t{1} << 20, opaque(SIZE_MAX - (1 << 19))), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(pvalloc(opaque(SIZE_MAX)), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(pvalloc(opaque(SIZE_MAX - 4000)), nullptr);
  EXPECT_EQ(valloc(opaque(SIZE_MAX - 10)), nullptr);
  // A failed realloc leaves the block alone (the result is NULL, so freeing
  // `r ? r : p` frees p, and tells the compiler p is still in use).
  void *small = std::malloc(10);
  errno = 0;
  void *r = std::realloc(small, opaque(SIZE_MAX - 5));
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(errno, ENOMEM);
  std::free(r ? r : small);
  void *large = std::malloc(100000);
  r = std::realloc(large, opaque(SIZE_MAX - 5));
  EXPECT_EQ(r, nullptr);
  large = r ? r : large;
  r = std::realloc(large, opaque(std::size_t{1} << 50));
  EXPECT_EQ(r, nullptr);
  std::free(r ? r : large);
  EXPECT_THROW(
      {
        void *p = ::operator new(opaque(SIZE_MAX - 100));
        ::operator delete(p);
      },
      std::bad_alloc);
  EXPECT_EQ(::operator new(opaque(SIZE_MAX - 100), std::nothrow), nullptr);
  EXPECT_EQ(::operator new(opaque(SIZE_MAX - 100), std::align_val_t(64), std::nothrow), nullptr);
}

// operator new calls the program's new-handler while one is set, then throws
// std::bad_alloc (nothrow new: returns nullptr). libdefero finds both in the
// C++ runtime at run time (runtime/src/cxx_runtime.h).
int handler_calls = 0;
void handlerGivingUpAfterThree() {
  if (++handler_calls == 3)
    std::set_new_handler(nullptr);
}

TEST(GlibcSemantics, NewHandlerCalledUntilUnset) {
  handler_calls = 0;
  std::set_new_handler(handlerGivingUpAfterThree);
  EXPECT_THROW(::operator delete(::operator new(opaque(SIZE_MAX - 100))), std::bad_alloc);
  EXPECT_EQ(handler_calls, 3);
  handler_calls = 0;
  std::set_new_handler(handlerGivingUpAfterThree);
  EXPECT_EQ(::operator new(opaque(SIZE_MAX - 100), std::nothrow), nullptr);
  EXPECT_EQ(handler_calls, 3);
  handler_calls = 0;
  std::set_new_handler(handlerGivingUpAfterThree);
  EXPECT_THROW(::operator delete(::operator new(opaque(SIZE_MAX - 100), std::align_val_t(64))),
               std::bad_alloc);
  EXPECT_EQ(handler_calls, 3);
  EXPECT_EQ(std::get_new_handler(), nullptr);
}

TEST(GlibcSemantics, PageAllocators) {
  void *a = aligned_alloc(std::size_t{1} << 20, 1);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(addr(a) % (1 << 20), 0u);
  EXPECT_GE(malloc_usable_size(a), 1u);
  std::free(a);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4096},
                        std::size_t{4097}, std::size_t{50000}}) {
    void *v = valloc(n);
    ASSERT_NE(v, nullptr) << "valloc(" << n << ")";
    EXPECT_EQ(addr(v) % 4096, 0u);
    EXPECT_GE(malloc_usable_size(v), n);
    touch(v, n, 9);
    void *pv = pvalloc(n);
    ASSERT_NE(pv, nullptr) << "pvalloc(" << n << ")";
    EXPECT_EQ(addr(pv) % 4096, 0u);
    const std::size_t page_rounded = (n + 4095) / 4096 * 4096; // (glibc: 0 stays 0)
    EXPECT_GE(malloc_usable_size(pv), page_rounded) << "pvalloc(" << n << ")";
    touch(pv, page_rounded, 9);
    std::free(v);
    std::free(pv);
  }
}

TEST(GlibcSemantics, UsableSizeOnEveryPath) {
  EXPECT_EQ(malloc_usable_size(nullptr), 0u);
  for (std::size_t n : kSizes) {
    std::vector<std::pair<void *, const char *>> blocks = {
        {std::malloc(n), "malloc"},
        {std::calloc(1, n), "calloc"},
        {std::realloc(std::malloc(1), n + 1), "realloc"}, // (n = 0 frees)
        {memalign(64, n), "memalign"},
        {aligned_alloc(4096, n), "aligned_alloc"},
        {valloc(n), "valloc"},
    };
    for (auto [p, how] : blocks) {
      ASSERT_NE(p, nullptr) << how << " " << n;
      const std::size_t u = malloc_usable_size(p);
      EXPECT_GE(u, n) << how << "(" << n << ")";
      touch(p, u, 0x11); // all of the usable size is ours
      std::free(p);
    }
    void *nw = ::operator new(n);
    EXPECT_GE(malloc_usable_size(nw), n);
    ::operator delete(nw, n);
    void *na = ::operator new[](n, std::align_val_t(256));
    EXPECT_EQ(addr(na) % 256, 0u);
    EXPECT_GE(malloc_usable_size(na), n);
    ::operator delete[](na, n, std::align_val_t(256));
  }
  char *s = strdup("usable");
  EXPECT_GE(malloc_usable_size(s), 7u);
  std::free(s);
}

// A block of a class that would grow the heap lies over a run of another
// class's free slots (a gang: SpanHeap::gangMalloc), 16 bytes past a slot
// start. realloc, calloc and malloc_usable_size serve it as any block; an
// aligned request never gets one. The release build must make one here;
// the checked build makes none (its canary ends a slot).
TEST(GlibcSemantics, ReallocCallocAndUsableSizeOfAGangsBlock) {
  // 64 B blocks over 64 spans, every 8th kept: runs of 7 free slots. (Some
  // may be gangs themselves, over the free slots of a class an earlier
  // test left: a span where any of them is not 64-byte aligned is not the
  // 64 B class's.)
  std::vector<void *> all, keep;
  std::set<std::uintptr_t> spans, hosts;
  for (int i = 0; i < 64 * 1024; ++i) {
    all.push_back(std::malloc(64));
    (addr(all.back()) % 64 == 0 ? spans : hosts).insert(addr(all.back()) >> 16);
  }
  for (std::uintptr_t span : hosts)
    spans.erase(span);
  for (std::size_t i = 0; i < all.size(); ++i)
    (i % 8 == 0 ? keep.push_back(all[i]) : std::free(all[i]));
  const auto gang = [&](const void *p) { return spans.count(addr(p) >> 16) && addr(p) % 64 == 16; };
  std::vector<void *> big;
  void *g = nullptr;
  for (int i = 0; i < 4096 && !g; ++i) {
    big.push_back(std::malloc(256));
    if (gang(big.back()))
      g = big.back();
  }
  char *stats = nullptr;
  std::size_t len = 0;
  FILE *f = open_memstream(&stats, &len);
  ASSERT_EQ(defero_stats_json(f), 0);
  std::fclose(f);
  const bool checked = std::strstr(stats, "\"checked\": true") != nullptr;
  std::free(stats);
  if (checked) {
    EXPECT_EQ(g, nullptr) << "the checked build makes no gang";
  } else {
    ASSERT_NE(g, nullptr) << "no block of 256 B lay over the 64 B spans' free slots";
    EXPECT_EQ(malloc_usable_size(g), 256u);
    touch(g, 256, 0x5A);
    EXPECT_EQ(std::realloc(g, 200), g) << "a request that still needs more than half stays";
    void *r = std::realloc(g, 3000);
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(allIs(r, 200, 0x5A)) << "realloc kept the contents";
    big.erase(std::find(big.begin(), big.end(), g));
    big.push_back(r);
    // calloc of a gang's block (memory freed before: zeroed all the same).
    // The class takes resident Empty spans before it lays gangs (the 64 B
    // class's, say, if its stack went back: WordCacheLayer::retireIdle).
    std::vector<void *> zeroed;
    std::size_t gangs = 0;
    for (int i = 0; i < 4096 && gangs < 64; ++i) {
      void *z = std::calloc(1, 256);
      ASSERT_TRUE(allIs(z, 256, 0)) << "calloc " << i;
      gangs += gang(z);
      zeroed.push_back(z);
    }
    EXPECT_GT(gangs, 0u);
    for (void *z : zeroed)
      std::free(z);
    // A gang holds the bytes asked for, not its class's: 385 B (class
    // 448 B) over 7 free slots of 64 B, 432 usable after the header.
    void *h = nullptr;
    for (int i = 0; i < 4096 && !h; ++i) {
      big.push_back(std::malloc(385));
      if (gang(big.back()))
        h = big.back();
    }
    ASSERT_NE(h, nullptr) << "no block of 385 B lay over the 64 B spans' runs of 7 free slots";
    EXPECT_EQ(malloc_usable_size(h), 7u * 64 - 16);
    touch(h, 432, 0x3C);
    EXPECT_EQ(std::realloc(h, 432), h) << "realloc within a gang's run moved it";
    void *m = std::realloc(h, 433);
    ASSERT_NE(m, nullptr);
    EXPECT_NE(m, h) << "realloc past a gang's run kept it";
    EXPECT_TRUE(allIs(m, 432, 0x3C)) << "realloc kept the contents";
    big.erase(std::find(big.begin(), big.end(), h));
    big.push_back(m);
  }
  // An aligned request is never a gang.
  for (int i = 0; i < 256; ++i) {
    void *a = memalign(64, 256);
    EXPECT_EQ(addr(a) % 64, 0u);
    big.push_back(a);
  }
  for (void *p : big)
    std::free(p);
  for (void *p : keep)
    std::free(p);
}

struct alignas(128) Wide {
  static inline int live = 0;
  unsigned char bytes[200];
  Wide() {
    ++live;
    std::memset(bytes, 0x42, sizeof bytes);
  }
  Wide(const Wide &o) : Wide() { std::memcpy(bytes, o.bytes, sizeof bytes); }
  ~Wide() { --live; }
};
struct alignas(4096) Page {
  char c[10];
};
struct alignas(64) Line {
  int x;
};

TEST(GlibcSemantics, OverAlignedNewAndContainers) {
  {
    std::vector<Wide> v;
    for (int i = 0; i < 300; ++i) {
      v.emplace_back();
      ASSERT_EQ(addr(v.data()) % 128, 0u) << "vector<alignas(128)> storage";
    }
    for (const Wide &w : v)
      ASSERT_EQ(addr(&w) % 128, 0u);
    EXPECT_EQ(Wide::live, 300);
  }
  EXPECT_EQ(Wide::live, 0);
  for (std::size_t n : {1, 2, 7, 100, 1000}) {
    Wide *a = new Wide[n];
    EXPECT_EQ(addr(a) % 128, 0u) << "new Wide[" << n << "]";
    EXPECT_EQ(Wide::live, static_cast<int>(n));
    delete[] a;
    Page *p = new Page[n];
    EXPECT_EQ(addr(p) % 4096, 0u) << "new Page[" << n << "]";
    delete[] p;
    Line *l = new Line[n];
    EXPECT_EQ(addr(l) % 64, 0u);
    delete[] l;
  }
  EXPECT_EQ(Wide::live, 0);
  auto *one = new Page;
  EXPECT_EQ(addr(one) % 4096, 0u);
  delete one;
  auto *nt = new (std::nothrow) Wide[5];
  ASSERT_NE(nt, nullptr);
  EXPECT_EQ(addr(nt) % 128, 0u);
  delete[] nt;
}

TEST(GlibcSemantics, PmrResourcesStillWork) {
  // A monotonic buffer over a stack array must not touch the heap for what
  // fits; the default resources go through operator new (ours).
  alignas(64) unsigned char buf[16384];
  std::pmr::monotonic_buffer_resource mono(buf, sizeof buf,
                                           std::pmr::null_memory_resource());
  std::pmr::vector<int> v(&mono);
  v.reserve(1000);
  EXPECT_GE(addr(v.data()), addr(buf));
  EXPECT_LT(addr(v.data()), addr(buf) + sizeof buf);
  for (int i = 0; i < 1000; ++i)
    v.push_back(i);
  std::pmr::unsynchronized_pool_resource pool;
  std::pmr::synchronized_pool_resource spool;
  {
    std::pmr::vector<std::pmr::string> s(&pool), t(&spool);
    for (int i = 0; i < 2000; ++i) {
      s.emplace_back(static_cast<std::size_t>(i % 100), 's');
      t.emplace_back(static_cast<std::size_t>(i % 300), 't');
    }
    EXPECT_EQ(s[1999].size(), 99u);
    EXPECT_EQ(t[1999].size(), 1999u % 300);
  }
  std::pmr::memory_resource *nd = std::pmr::new_delete_resource();
  void *p = nd->allocate(1000, 256);
  EXPECT_EQ(addr(p) % 256, 0u);
  nd->deallocate(p, 1000, 256);
}

TEST(GlibcSemantics, GlibcInternalAllocationsFreedByUs) {
  char *d = strdup("hello");
  char *nd = strndup("hello world", 5);
  EXPECT_STREQ(d, "hello");
  EXPECT_STREQ(nd, "hello");
  std::free(d);
  std::free(nd);

  char *as = nullptr;
  ASSERT_GT(asprintf(&as, "%s-%0*d", "wide", 50000, 7), 50000);
  EXPECT_EQ(std::strlen(as), 50005u);
  std::free(as);

  char *ms = nullptr;
  std::size_t ms_len = 0;
  FILE *mf = open_memstream(&ms, &ms_len);
  ASSERT_NE(mf, nullptr);
  for (int i = 0; i < 20000; ++i)
    std::fprintf(mf, "%d,", i);
  std::fclose(mf);
  EXPECT_GT(ms_len, 100000u);
  std::free(ms);

  // getline grows its buffer with realloc; we free it.
  FILE *tf = std::tmpfile();
  ASSERT_NE(tf, nullptr);
  std::string longline(100000, 'L');
  std::fprintf(tf, "short\n%s\nend\n", longline.c_str());
  std::rewind(tf);
  char *line = nullptr;
  std::size_t cap = 0;
  std::vector<ssize_t> lens;
  ssize_t n;
  while ((n = getline(&line, &cap, tf)) > 0)
    lens.push_back(n);
  std::free(line);
  std::fclose(tf);
  ASSERT_EQ(lens.size(), 3u);
  EXPECT_EQ(lens[1], 100001);

  // qsort's merge buffer comes from malloc for large arrays.
  std::vector<long> arr(200000);
  for (std::size_t i = 0; i < arr.size(); ++i)
    arr[i] = static_cast<long>((i * 2654435761u) % 1000003);
  std::qsort(arr.data(), arr.size(), sizeof(long), [](const void *a, const void *b) {
    const long x = *static_cast<const long *>(a), y = *static_cast<const long *>(b);
    return x < y ? -1 : x > y;
  });
  EXPECT_TRUE(std::is_sorted(arr.begin(), arr.end()));

  regex_t re;
  ASSERT_EQ(regcomp(&re, "^(a+)(b*)c{2,5}$", REG_EXTENDED), 0);
  regmatch_t m[3];
  EXPECT_EQ(regexec(&re, "aaabbccc", 3, m, 0), 0);
  regfree(&re);

  char *rp = realpath(".", nullptr);
  ASSERT_NE(rp, nullptr);
  std::free(rp);

  dirent **names = nullptr;
  const int k = scandir("/", &names, nullptr, alphasort);
  ASSERT_GT(k, 0);
  for (int i = 0; i < k; ++i)
    std::free(names[i]);
  std::free(names);

  glob_t g;
  if (glob("/usr/lib/*", 0, nullptr, &g) == 0)
    globfree(&g);

  // NSS and iconv dlopen modules that allocate with our malloc.
  if (passwd *pw = getpwuid(0)) {
    EXPECT_NE(pw->pw_name, nullptr);
  }
  iconv_t cd = iconv_open("UTF-16", "UTF-8");
  if (cd != reinterpret_cast<iconv_t>(-1)) {
    char in[] = "defero";
    char out[64];
    char *ip = in, *op = out;
    std::size_t il = 6, ol = sizeof out;
    EXPECT_NE(iconv(cd, &ip, &il, &op, &ol), static_cast<std::size_t>(-1));
    iconv_close(cd);
  }
}

} // namespace
