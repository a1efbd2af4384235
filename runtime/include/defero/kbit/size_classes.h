// size_classes.h - the 'size' dimension of the Defero heap: segregated size
// classes (SGI STL allocator style, as the paper's Defero uses), checked at
// compile time.
//
// Classes: 16..256 in steps of 16, then four classes per power of two up to
// 32 KiB. Every class size but the node classes' is a multiple of 16
// (the malloc alignment), so a chunk at span_start + i * size is 16-byte
// aligned; power-of-two classes are aligned to their size, which aligned
// allocation relies on.
//
// The node classes, 24 and 40 bytes (8-byte aligned), hold only hinted
// container nodes of 17-24 and 33-40 bytes made by operator new of one
// object: the fused entry (__defero_new_hinted) or operator new with a
// one-shot hint pending. std::list<int>'s and std::list<T*>'s nodes are 24
// bytes, std::set<int>'s, std::set<T*>'s and std::map<int, int>'s 40, in
// slots of 32 and 48 otherwise. A non-array operator new owes alignment
// only to an object of the requested size ([basic.stc.dynamic.allocation]),
// and an object of 17-24 or 33-40 bytes is no more than 8-byte aligned
// (its size is a multiple of its alignment). malloc, arrays and unhinted
// nodes never get them: kSmallTable steps by 16 bytes and skips them, as
// classOf does. (A set<int> of 3M nodes after churn: 157 -> 131 MB of
// pages, for_each 63-65 -> 57-58 ns a node.)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace defero::kbit {

inline constexpr std::array<std::uint32_t, 46> kClassBytes = {
    16,    24,    32,    40,    48,    64,    80,    96,    112,   128,   144,
    160,   176,   192,   208,   224,   240,   256,   320,   384,
    448,   512,   640,   768,   896,   1024,  1280,  1536,  1792,
    2048,  2560,  3072,  3584,  4096,  5120,  6144,  7168,  8192,
    10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768};

inline constexpr unsigned kNumClasses = kClassBytes.size();
/// The node classes (see above): their indices in kClassBytes.
inline constexpr unsigned kNodeClass24 = 1, kNodeClass40 = 3;
inline constexpr bool isNodeClass(unsigned cls) { return (cls | 2) == 3; } // (1 or 3)
static_assert(kNodeClass24 == 1 && kNodeClass40 == 3, "isNodeClass's test");
inline constexpr std::size_t kMaxSmallBytes = kClassBytes.back();
inline constexpr std::size_t kSmallTableStep = 16;
/// Requests up to this size find their class with one table load, and
/// malloc's inline fast path serves them (process_heap.h). 4 KiB, the
/// classes' range below the mid heap: at 1 KiB (mimalloc's small limit),
/// a 2 KiB malloc+free pair took 259 instructions on the slow path
/// against 123.5 now, and malloc_benchmark's 16-4096 B mix (3/4 of its
/// requests above 1 KiB) went from 1.16x to 1.75x mimalloc's throughput
/// in batches of 1000 and from 1.43x to 2.81x one block at a time.
inline constexpr std::size_t kSmallTableMax = 4096;

/// Span bytes for a class: 64 KiB, or enough for 8 chunks of large classes.
inline constexpr std::size_t spanBytesFor(std::uint32_t cls_bytes,
                                          std::size_t span_unit) {
  std::size_t want = std::size_t{cls_bytes} * 8;
  return want <= span_unit ? span_unit
                           : (want + span_unit - 1) / span_unit * span_unit;
}

namespace detail {
constexpr auto makeSmallTable() {
  std::array<std::uint8_t, kSmallTableMax / kSmallTableStep + 1> t{};
  unsigned c = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::size_t bytes = i * kSmallTableStep;
    while (kClassBytes[c] < bytes || isNodeClass(c)) // (malloc's classes only)
      ++c;
    t[i] = static_cast<std::uint8_t>(c);
  }
  return t;
}
constexpr bool classesSorted() {
  for (unsigned i = 1; i < kNumClasses; ++i)
    if (kClassBytes[i] <= kClassBytes[i - 1])
      return false;
  return true;
}
constexpr bool classesAligned() {
  for (unsigned c = 0; c < kNumClasses; ++c)
    if (kClassBytes[c] % (isNodeClass(c) ? 8 : 16) != 0 ||
        (isNodeClass(c) && kClassBytes[c] % 16 == 0))
      return false;
  return true;
}
} // namespace detail

inline constexpr auto kSmallTable = detail::makeSmallTable();
static_assert([] {
  for (auto c : kSmallTable)
    if (isNodeClass(c))
      return false;
  return true;
}(), "malloc's table never names a node class");

/// Division by a class size without a divide instruction: for offsets below
/// 2^kMaxOffsetBits, (off * kClassReciprocal[c]) >> 48 == off / size(c).
/// Exact because reciprocal = ceil(2^48/d) = (2^48 + e)/d with e < d <= 2^15,
/// so the error term off*e/(d*2^48) stays below 1/d when off*e < 2^48.
inline constexpr unsigned kMaxOffsetBits = 18;
inline constexpr auto kClassReciprocal = [] {
  std::array<std::uint64_t, kNumClasses> r{};
  for (unsigned c = 0; c < kNumClasses; ++c)
    r[c] = ((std::uint64_t{1} << 48) + kClassBytes[c] - 1) / kClassBytes[c];
  return r;
}();
inline constexpr std::size_t divideByClass(std::size_t off, unsigned cls) {
  return static_cast<std::size_t>((off * kClassReciprocal[cls]) >> 48);
}
static_assert(kClassBytes.back() <= (1u << 15) &&
              spanBytesFor(kClassBytes.back(), 65536) <= (1u << kMaxOffsetBits),
              "divideByClass needs offsets < 2^18 and sizes <= 2^15");
static_assert(divideByClass(262143, 4) == 262143 / 48 &&
              divideByClass(48 * 5461, 4) == 5461 &&
              divideByClass(48 * 5461 - 1, 4) == 5460);
static_assert(divideByClass(262143, kNodeClass40) == 262143 / 40 &&
              divideByClass(40 * 6553, kNodeClass40) == 6553 &&
              divideByClass(40 * 6553 - 1, kNodeClass40) == 6552 &&
              divideByClass(24 * 10922, kNodeClass24) == 10922 &&
              divideByClass(24 * 10922 - 1, kNodeClass24) == 10921);

static_assert(detail::classesSorted(), "size classes must increase");
static_assert(detail::classesAligned(),
              "size classes keep 16-byte alignment, the node classes 8 (and only 8)");
static_assert(kClassBytes[kNodeClass24] == 24 && kClassBytes[kNodeClass40] == 40);
static_assert([] {
  for (unsigned c = 0; c < kNumClasses; ++c)
    if (((kClassBytes[c] & 8) != 0) != isNodeClass(c))
      return false;
  return true;
}(), "a slot of 8 mod 16 bytes is a node class's, and only that (the one-shot hint's test)");
static_assert(kNumClasses < 255, "class index + 1 must fit SpanPage's byte");
static_assert(kClassBytes[kSmallTable[1]] == 16 &&
              kClassBytes[kSmallTable[kSmallTable.size() - 1]] == kSmallTableMax);

/// The smallest class holding `sz` bytes (sz <= kMaxSmallBytes). About three
/// instructions for sz <= 4 KiB; a short scan above.
inline constexpr unsigned classOf(std::size_t sz) {
  if (sz <= kSmallTableMax)
    return kSmallTable[(sz + kSmallTableStep - 1) / kSmallTableStep];
  unsigned c = kSmallTable.back();
  while (kClassBytes[c] < sz)
    ++c;
  return c;
}

/// The smallest class holding `sz` bytes whose chunks are `align`-aligned
/// (align a power of two <= 32 KiB), or kNumClasses if none.
inline constexpr unsigned alignedClassOf(std::size_t sz, std::size_t align) {
  if (sz > kMaxSmallBytes)
    return kNumClasses;
  for (unsigned c = classOf(sz); c < kNumClasses; ++c)
    if (kClassBytes[c] % align == 0)
      return c;
  return kNumClasses;
}

static_assert(classOf(1) == 0 && classOf(16) == 0 && classOf(17) == 2 && classOf(24) == 2 &&
              classOf(33) == 4 && classOf(40) == 4);
static_assert(classOf(1025) == 26 && classOf(kMaxSmallBytes) == 45);

/// The class of a hinted container node of sz bytes made by operator new
/// of one object: a node class for 17-24 and 33-40 bytes (see above), else
/// classOf(sz). Not for a block with a canary after it (the checked
/// build's), whose slot must be larger than sz.
inline constexpr unsigned nodeClassOf(std::size_t sz) {
  return sz - 17 < 8 ? kNodeClass24 : sz - 33 < 8 ? kNodeClass40 : classOf(sz);
}
/// nodeClassOf for sz <= kSmallTableMax by one load: kNodeTable[(sz + 7) / 8].
inline constexpr auto kNodeTable = [] {
  std::array<std::uint8_t, kSmallTableMax / 8 + 1> t{};
  for (std::size_t i = 0; i < t.size(); ++i)
    t[i] = static_cast<std::uint8_t>(nodeClassOf(i * 8));
  return t;
}();
static_assert(kNodeTable[(16 + 7) / 8] == 0 && kNodeTable[(17 + 7) / 8] == kNodeClass24 &&
              kNodeTable[(24 + 7) / 8] == kNodeClass24 && kNodeTable[(25 + 7) / 8] == 2 &&
              kNodeTable[(32 + 7) / 8] == 2 && kNodeTable[(33 + 7) / 8] == kNodeClass40 &&
              kNodeTable[(40 + 7) / 8] == kNodeClass40 && kNodeTable[(41 + 7) / 8] == 4 &&
              kNodeTable[(4096 + 7) / 8] == kSmallTable.back());
static_assert(nodeClassOf(0) == 0 && nodeClassOf(16) == 0 && nodeClassOf(17) == kNodeClass24 &&
              nodeClassOf(24) == kNodeClass24 && nodeClassOf(25) == 2 && nodeClassOf(32) == 2 &&
              nodeClassOf(33) == kNodeClass40 && nodeClassOf(40) == kNodeClass40 &&
              nodeClassOf(41) == 4);
static_assert(kClassBytes[alignedClassOf(24, 64)] == 64);
static_assert(kClassBytes[alignedClassOf(20, 8)] == 32 && kClassBytes[alignedClassOf(40, 16)] == 48,
              "aligned requests never take a node class");
static_assert(kClassBytes[alignedClassOf(100, 4096)] == 4096);

} // namespace defero::kbit
