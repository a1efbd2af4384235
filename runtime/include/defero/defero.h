/* defero.h - the Defero runtime's C interface.
 *
 * Link with libdefero.so (or LD_PRELOAD it): it is then also the process's
 * malloc and operator new. The hint ABI below is what the compiler plugin
 * and the patched libstdc++ call; the functions are declared weak so code
 * that calls them runs (with hints as no-ops) when the runtime is absent.
 */
#ifndef DEFERO_DEFERO_H
#define DEFERO_DEFERO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "defero/abi.h"

/* Exported from libdefero.so, which hides everything else. */
#define DEFERO_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* --- allocation ---------------------------------------------------------- */

/** malloc through the Defero heap (First predicate unless a hint is
 *  pending on this thread). NULL and errno=ENOMEM on failure. */
DEFERO_API void *defero_malloc(size_t size);
/** free for any pointer from this heap (NULL is a no-op). */
DEFERO_API void defero_free(void *ptr);
/** Allocates near `hint` (Best predicate): the free slot of this size
 *  nearest `hint` in hint's span if hint is a block of the calling
 *  thread's heap of this size class, else an unhinted block. */
DEFERO_API void *defero_alloc_near(size_t size, const void *hint);
/** Allocates by tree path (Path predicate): `depth` direction bits in the
 *  low bits of `bits`, first step most significant, 1 = right. (Runtime
 *  v2: the bits do not steer placement yet; the block is an unhinted
 *  one. defero::allocator's heap still places by them.) */
DEFERO_API void *defero_alloc_path(size_t size, uint64_t bits, unsigned depth);
/** Usable size of a block from this heap, 0 for anything else. */
DEFERO_API size_t defero_usable_size(const void *ptr);
/** K-class key of an address in the heap's window under the current K,
 *  or -1 if the address is not in the window. */
DEFERO_API long long defero_class_of(const void *ptr);
/** Writes the statistics JSON object (see DESIGN.md) and a newline.
 *  Returns 0, or -1 if out is NULL or the write fails. */
DEFERO_API int defero_stats_json(FILE *out);

/* --- the hint ABI (one-shot, per thread) --------------------------------- */

/** List-like containers: the next allocation on this thread is a node to be
 *  linked next to `neighbor`. */
__attribute__((weak, nothrow)) DEFERO_API void __defero_hint_neighbor(const void *container,
                                                  const void *neighbor);
/** Red-black trees: the next node is attached under `parent` on the left if
 *  insert_left != 0 (libstdc++ node layout; the runtime walks the parent
 *  chain for the path bits). */
__attribute__((weak, nothrow)) DEFERO_API void __defero_hint_tree(const void *container,
                                              const void *parent,
                                              int insert_left);
/** The next node belongs to `container`; its position is not known yet. */
__attribute__((weak, nothrow)) DEFERO_API void __defero_hint_container(const void *container);
/** From now on `container`'s nodes use `predicate` ("first", "best",
 *  "match", "path", "auto") and precision k (0 = the process default).
 *  A bad name or k is reported on stderr and ignored for that container. */
__attribute__((weak, nothrow)) DEFERO_API void __defero_container_policy(const void *container,
                                                     const char *predicate,
                                                     int k);
/** Fused hint + operator new, emitted by the late pass: like
 *  `::operator new(size)` (throws std::bad_alloc) with the hint applied.
 *  kind: 1 neighbor (where = neighbor), 2 tree (where = parent, side =
 *  insert_left), 3 container (where unused). As `::operator new` of one
 *  object it is aligned for an object of `size` bytes (C++'s rule for a
 *  non-array allocation): a node of 17-24 bytes (std::list<int>'s) or
 *  33-40 bytes (std::set<int>'s) may be 8-byte aligned, in a 24- or 40-byte
 *  slot; so may `::operator new(size)` with a one-shot hint pending. malloc's blocks, hinted or not, are 16-byte
 *  aligned. */
__attribute__((weak)) DEFERO_API void *__defero_new_hinted(size_t size, int kind,
                                                const void *container,
                                                const void *where, int side);

#ifdef __cplusplus
}
#endif

#endif /* DEFERO_DEFERO_H */
