// api.cpp - the C API of <defero/defero.h>, the hint ABI's entry points
// (the one-shot hints and the fused __defero_new_hinted with its fast
// paths), and the library's load/unload hooks (the fork handlers'
// registration, statistics at exit).
//
// Cost: a one-shot hint is a TLS load, a counter and four stores; the fused
// entry continuing the thread's recent node about 22 instructions more than
// an unhinted operator new (pair_cost: 91.0 a pair against 71.1), beside
// any other anchor about 100 more.
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <new>
#include <pthread.h>
#include <string_view>

#include "defero/defero.h"
#include "cxx_runtime.h"
#include "process_heap.h"

using defero::processHeap;

// The entry points defero.h declares are the ones abi.h names (the plugin
// and the stl-patch generator emit calls by those names).
#define DEFERO_ENTRY_IS(fn, name)                                                  \
  static_assert(sizeof(decltype(&fn)) != 0 && std::string_view(#fn) == std::string_view(name), \
                #fn " is not the name abi.h gives it")
DEFERO_ENTRY_IS(__defero_hint_neighbor, DEFERO_FN_HINT_NEIGHBOR);
DEFERO_ENTRY_IS(__defero_hint_tree, DEFERO_FN_HINT_TREE);
DEFERO_ENTRY_IS(__defero_hint_container, DEFERO_FN_HINT_CONTAINER);
DEFERO_ENTRY_IS(__defero_container_policy, DEFERO_FN_CONTAINER_POLICY);
DEFERO_ENTRY_IS(__defero_new_hinted, DEFERO_FN_NEW_HINTED);
#undef DEFERO_ENTRY_IS

extern "C" {

// The same inline fast paths as malloc and free (overrides.cpp).
void *defero_malloc(size_t size) { return defero::mallocFastOr(size, defero::mallocFull); }
void defero_free(void *ptr) { defero::freeFastOr(ptr, "defero_free", defero::freeFull); }
void *defero_alloc_near(size_t size, const void *hint) {
  return processHeap().allocNear(size, hint);
}
void *defero_alloc_path(size_t size, uint64_t bits, unsigned depth) {
  return processHeap().allocPath(size, bits, depth);
}
size_t defero_usable_size(const void *ptr) {
  return processHeap().usableSize(ptr);
}
long long defero_class_of(const void *ptr) {
  return processHeap().classOf(ptr);
}
int defero_stats_json(FILE *out) {
  if (!out)
    return -1;
  char buf[2048]; // (a real-time build's JSON with its hardware keys passes 800 bytes)
  const std::size_t n = processHeap().formatStats(buf, sizeof buf);
  return std::fwrite(buf, 1, n, out) == n && std::fflush(out) == 0 ? 0 : -1;
}

} // extern "C"

namespace {
// The hints before the thread has a heap: out of line, so the fast paths
// need no stack frame.
__attribute__((noinline)) void hintNeighborSlow(const void *c, const void *n) {
  processHeap().hintNeighbor(c, n);
}
__attribute__((noinline)) void hintTreeSlow(const void *c, const void *parent, int left) {
  processHeap().hintTree(c, parent, left);
}
__attribute__((noinline)) void hintContainerSlow(const void *c) {
  processHeap().hintContainer(c);
}
} // namespace

extern "C" {

// The hints take the fast path once the thread has a heap (its first
// allocation made it): a TLS load, a counter and four stores.
void __defero_hint_neighbor(const void *container, const void *neighbor) {
  if (!defero::hintFast({defero::kHintNeighbor, 0, container, neighbor}, 0))
    return hintNeighborSlow(container, neighbor);
}
void __defero_hint_tree(const void *container, const void *parent,
                        int insert_left) {
  if (!defero::hintFast({defero::kHintTree, static_cast<std::int8_t>(insert_left != 0),
                         container, parent},
                        1))
    return hintTreeSlow(container, parent, insert_left);
}
void __defero_hint_container(const void *container) {
  if (!defero::hintFast({defero::kHintContainer, 0, container, nullptr}, 2))
    return hintContainerSlow(container);
}
void __defero_container_policy(const void *container, const char *predicate,
                               int k) {
  processHeap().containerPolicy(container, predicate, k);
}

} // extern "C"

namespace {

using OperatorNew = void *(*)(std::size_t);

// Whether the process's `operator new(size_t)` is this library's (or the
// C++ library's default: the runtime linked statically without its
// overrides, in tests), or the program's own.
enum : int { kUnknown, kOurs, kTheirs };
std::atomic<int> replaced_state{kUnknown};
std::atomic<OperatorNew> replaced{nullptr};

/// The program's own `operator new(size_t)`, if it replaced it; null when
/// the process's is this library's or the C++ library's default.
OperatorNew replacedOperatorNew() {
  int s = replaced_state.load(std::memory_order_acquire);
  if (s == kUnknown) {
    void *sym = dlsym(RTLD_DEFAULT, "_Znwm");
    Dl_info theirs{}, ours{};
    const bool known = dladdr(sym, &theirs) != 0;
    const bool same =
        !sym || !known ||
        (dladdr(reinterpret_cast<void *>(&__defero_new_hinted), &ours) &&
         theirs.dli_fbase == ours.dli_fbase) ||
        (theirs.dli_fname && std::strstr(theirs.dli_fname, "/libstdc++.so"));
    replaced.store(same ? nullptr : reinterpret_cast<OperatorNew>(sym),
                   std::memory_order_relaxed);
    s = same ? kOurs : kTheirs;
    replaced_state.store(s, std::memory_order_release);
    if (s == kOurs) {
      defero::g_new_ours.store(true, std::memory_order_relaxed);
      defero::noteFusedOpen();
    }
  }
  return s == kTheirs ? replaced.load(std::memory_order_relaxed) : nullptr;
}

/// __defero_new_hinted when its anchor has no room beside it, on a thread
/// whose hinted fast path is open (not diverted): the full placement
/// (ProcessHeap::mallocHintedOpen, no round trip through the pending hint
/// and malloc's slow path), then operator new's loop.
__attribute__((noinline)) void *newHintedSlow(defero::LocalHeap *h, std::size_t size,
                                              int kind, int side, const void *container,
                                              const void *where, std::uint8_t searched) {
  if (void *p = processHeap().mallocHintedOpen(
          h, size,
          defero::PendingHint{static_cast<std::uint8_t>(kind),
                              static_cast<std::int8_t>(kind == defero::kHintTree && side),
                              container, where, searched}))
    return p;
  return defero::newSlow(size, 0, false);
}

/// __defero_new_hinted off its first fast path: beside the anchor
/// (placeBeside), else the slow paths.
__attribute__((noinline)) void *newHintedBeside(std::size_t size, int kind,
                                                const void *container, const void *where,
                                                int side);

/// __defero_new_hinted under DEFERO_POLICY=first: a node with no container
/// policy is not placed; it gets malloc's slot (as operator new would),
/// counted as a hinted allocation.
__attribute__((noinline)) void *newHintedFirst(std::size_t size, int kind,
                                               const void *container, const void *where,
                                               int side);

/// __defero_new_hinted for a neighbour hint that hops from another
/// container (hopsContainers) and found no room beside its anchor:
/// malloc's slot, counted as a hinted allocation, and the thread's recent
/// node (a next insert into the same container continues above it); an
/// anchor among lists' cells takes the full placement instead (a grown
/// cell: ProcessHeap::hinted).
__attribute__((noinline)) void *newHintedInOrder(defero::LocalHeap *h, std::size_t size,
                                                 const void *container, const void *where);

/// __defero_new_hinted for a container hint that does not continue the
/// thread's recent placement: when it hops (hopsContainers), malloc's
/// slot, counted as a hinted allocation, the thread's recent node left as
/// it was (about 50 instructions with its free; the full path took 140);
/// else newHintedMiss.
__attribute__((noinline)) void *newHintedContainer(std::size_t size, const void *container);

/// __defero_new_hinted off its fast path (no heap yet, a large node, a
/// program with its own operator new, tracing, a real-time backend, a
/// container with a policy of its own, an unknown kind). A program with
/// its own operator new gets exactly what an unfused hint gives it: the
/// one-shot hint, then its operator new (its operator delete will free
/// the node).
__attribute__((noinline)) void *newHintedOther(std::size_t size, int kind,
                                               const void *container, const void *where,
                                               int side);

/// __defero_new_hinted for a tree hint or nonsense: the same first fast
/// path, out of line, with the tree kind's constants.
__attribute__((noinline)) void *newHintedTree(std::size_t size, int kind,
                                              const void *container, const void *where,
                                              int side);

/// __defero_new_hinted off its first fast path: placeBeside and the full
/// placement, or, when the default predicate is First, malloc's slot.
inline void *newHintedMiss(std::size_t size, int kind, const void *container,
                           const void *where, int side) {
  if (__builtin_expect(!defero::g_place_default, 0))
    return newHintedFirst(size, kind, container, where, side);
  return newHintedBeside(size, kind, container, where, side);
}

} // namespace

extern "C" {

// The first fast path (the slot above the thread's recent node) is 31
// instructions with no stack frame; the rest go out of line. A
// neighbour hint (push_back, the common case) leaves with its kind and side
// as constants: the two argument registers they would hold serve the fast
// path instead of two callee-saved ones (a push and a pop each).
void *__defero_new_hinted(size_t size, int kind, const void *container,
                          const void *where, int side) {
  if (__builtin_expect(kind == defero::kHintNeighbor, 1)) {
#if defined(__x86_64__)
    // The recent record in r11, a register no argument uses: left to
    // itself GCC moves the container and anchor arguments out of rdx and
    // rcx to use those for the record's address and slot (two moves).
    register defero::LocalHeap::Recent *recent asm("r11") = defero::tls.recent;
    asm("" : "+r"(recent));
#else
    defero::LocalHeap::Recent *recent = defero::tls.recent;
#endif
    if (void *p = defero::placeAfterRecent(*recent, size, defero::kHintNeighbor,
                                           container, where, 0))
      return p;
    return newHintedMiss(size, defero::kHintNeighbor, container, where, 0);
  }
  // A container hint (a map's emplace, whose node comes before its place
  // is known) continues here too: a call and a dispatch fewer.
  if (__builtin_expect(kind == defero::kHintContainer, 1)) {
    if (void *p = defero::placeAfterRecent(*defero::tls.recent, size, defero::kHintContainer,
                                           container, nullptr, 0))
      return p;
    return newHintedContainer(size, container);
  }
  return newHintedTree(size, kind, container, where, side);
}

} // extern "C"

namespace {

void *newHintedContainer(std::size_t size, const void *container) {
  defero::LocalHeap *h = defero::tls.heap;
  if (__builtin_expect(h == nullptr || !defero::g_auto_default || size > defero::kMaxFast ||
                           !defero::hintPoliciesUniform(h) ||
                           replaced_state.load(std::memory_order_relaxed) != kOurs,
                       0))
    return newHintedMiss(size, defero::kHintContainer, container, nullptr, 0);
  if (!defero::hopsContainers(h, defero::kHintContainer, container)) {
    // Its second insert in a row after a hop, the thread's recent node
    // another container's: no anchor (cppcheck's hashtable copies, each
    // node's value copying lists between: 158,000 such nodes, about 460
    // instructions each through the full path to the same slot).
    if (container != h->recent.container && defero::g_fused_open.load(std::memory_order_relaxed)) {
      h->count.hints[defero::kHintContainer - 1].add(1);
      if (void *p = processHeap().mallocContainerOpen(h, size, container))
        return p;
      return defero::newSlow(size, 0, false);
    }
    return newHintedMiss(size, defero::kHintContainer, container, nullptr, 0);
  }
  h->count.hints[defero::kHintContainer - 1].add(1);
  h->count.hinted_allocs.add(1);
  defero::noteHop(h, container);
  void *p = defero::mallocNodeOr(size, defero::mallocFull);
  if (__builtin_expect(p == nullptr, 0))
    p = defero::newSlow(size, 0, false); // (operator new's loop: never null)
  return p;
}

/// newHintedBeside's body: inlined there, and into newHintedTree with the
/// kind a constant (a tree's insert off the first fast path goes through
/// one call fewer, and its parent with no room straight to mallocTreeOpen).
DEFERO_ALWAYS_INLINE void *besideOrSlow(std::size_t size, int kind, const void *container,
                                        const void *where, int side) {
  defero::LocalHeap *h = defero::tls.heap;
  // (g_fused_open: the default predicate places, no container has a
  // policy, the process's operator new is this library's.)
  if (__builtin_expect(h == nullptr || static_cast<unsigned>(kind - 1) > 2u ||
                           size > defero::kMaxFast || h->divert != 0 ||
                           !defero::g_fused_open.load(std::memory_order_relaxed),
                       0))
    return newHintedOther(size, kind, container, where, side);
  if (kind == defero::kHintContainer)
    where = nullptr;
  h->count.hints[kind - 1].add(1);
  // (side is read for tree hints only: linksBefore)
  defero::PendingHint anchored{static_cast<std::uint8_t>(kind),
                               static_cast<std::int8_t>(side != 0), container, where};
  if (defero::fastAnchor(h, anchored))
    if (void *p = defero::placeBeside(h, size, anchored, defero::fusedClassOf(size)))
      return p;
  if (kind == defero::kHintTree && anchored.searched) { // (its parent: a block of h, no room)
    if (void *p = processHeap().mallocTreeOpen(h, size, container, where, side != 0))
      return p;
    return defero::newSlow(size, 0, false);
  }
  if (kind == defero::kHintNeighbor && defero::namesEmptyContainer(where, container)) {
    if (void *p = processHeap().mallocListFirst(h, size, container, where)) // (a list's first node)
      return p;
    return defero::newSlow(size, 0, false);
  }
  if (defero::g_auto_default && defero::hopsContainers(h, kind, container) &&
      !defero::namesEmptyContainer(where, container))
    return newHintedInOrder(h, size, container, where);
  return newHintedSlow(h, size, kind, side, container, where, anchored.searched);
}

void *newHintedTree(std::size_t size, int kind, const void *container, const void *where,
                    int side) {
  // (Any other kind, a nonsense one, is the miss path's to refuse.)
  if (__builtin_expect(kind != defero::kHintTree, 0))
    return newHintedMiss(size, kind, container, where, side);
  if (void *p = defero::placeAfterRecent(*defero::tls.recent, size, defero::kHintTree, container,
                                         where, side))
    return p;
  if (__builtin_expect(!defero::g_place_default, 0))
    return newHintedMiss(size, defero::kHintTree, container, where, side);
  return besideOrSlow(size, defero::kHintTree, container, where, side);
}

void *newHintedBeside(std::size_t size, int kind, const void *container, const void *where,
                      int side) {
  return besideOrSlow(size, kind, container, where, side);
}

void *newHintedFirst(std::size_t size, int kind, const void *container, const void *where,
                     int side) {
  defero::LocalHeap *h = defero::tls.heap;
  if (__builtin_expect(h == nullptr || static_cast<unsigned>(kind - 1) > 2u ||
                           !defero::hintPoliciesUniform(h) ||
                           replaced_state.load(std::memory_order_relaxed) != kOurs,
                       0))
    return newHintedBeside(size, kind, container, where, side);
  h->count.hints[kind - 1].add(1);
  h->count.hinted_allocs.add(1);
  void *p = defero::mallocNodeOr(size, defero::mallocFull);
  if (__builtin_expect(p == nullptr, 0))
    p = defero::newSlow(size, 0, false); // (operator new's loop: never null)
  if (kind != defero::kHintContainer)
    h->count.hint_same_class.add(h->sameClass(where, p));
  return p;
}

void *newHintedInOrder(defero::LocalHeap *h, std::size_t size, const void *container,
                       const void *where) {
  // A tail among lists' cells: the full placement grows the list a cell.
  // (The owner first: another heap's span's flag is its owner's to write.)
  if (const defero::SlotPage *pg = defero::PageArena::get().spanOf(where);
      pg && pg->owner == h && pg->cells)
    return newHintedSlow(h, size, defero::kHintNeighbor, 0, container, where, 1);
  h->count.hinted_allocs.add(1);
  void *p = defero::mallocNodeOr(size, defero::mallocFull);
  if (__builtin_expect(p == nullptr, 0))
    p = defero::newSlow(size, 0, false); // (operator new's loop: never null)
  h->count.hint_same_class.add(h->sameClass(where, p));
  defero::noteRecentBlock(h, container, p, size, defero::kHintNeighbor - 1);
  return p;
}

void *newHintedOther(std::size_t size, int kind, const void *container, const void *where,
                     int side) {
  const OperatorNew theirs = replacedOperatorNew();
  switch (kind) {
  case defero::kHintNeighbor:
    __defero_hint_neighbor(container, where);
    break;
  case defero::kHintTree:
    __defero_hint_tree(container, where, side);
    break;
  case defero::kHintContainer:
    __defero_hint_container(container);
    break;
  default:
    break; // unknown kind: an unhinted allocation, never a failure
  }
  if (theirs)
    return theirs(size);
  // Our operator new's path for one object, as with an unfused hint (its
  // node may take the node class: the first node of a thread's first list
  // comes here, and its push_backs continue in its class).
  if (void *p = defero::mallocFullNode(size))
    return p;
  return defero::newSlow(size, 0, false);
}

void forkPrepare() { processHeap().forkPrepare(); }
void forkParent() { processHeap().forkParent(); }
void forkChild() { processHeap().forkChild(); }

// Runs when the library is loaded: reads the environment now (so a bad
// DEFERO_* value stops the program at start, not at its first malloc) and
// registers the fork handlers.
__attribute__((constructor)) void deferoLoad() {
  processHeap();
  // Looked up now, not at the first fused allocation: dlsym may allocate,
  // and a program's heap should not depend on whether its nodes come
  // through the fused entry or through operator new.
  (void)replacedOperatorNew();
  defero::openRecent(defero::tls.heap); // (a heap attached by an earlier constructor)
  pthread_atfork(forkPrepare, forkParent, forkChild);
}

// Runs late at exit (after the program's own destructors, for a preloaded
// or linked library): trace flush and statistics.
__attribute__((destructor)) void deferoUnload() { processHeap().atExit(); }

} // namespace
