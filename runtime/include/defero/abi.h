/* abi.h - the hint ABI's names and numbers, spelled once. The runtime
 * (defero.h, the process heap), the compiler plugin (plugin/lib) and the
 * stl-patch generator (stl-patch/generate.py reads this file) all take
 * them from here, so they cannot drift apart. Plain C: no includes, only
 * macros.
 *
 * DESIGN.md's "Hint ABI" is the contract these spell out. */
#ifndef DEFERO_ABI_H
#define DEFERO_ABI_H

/* The entry points a compiled program calls (weak references: a program
 * runs unchanged without the runtime). */
#define DEFERO_FN_HINT_NEIGHBOR "__defero_hint_neighbor"
#define DEFERO_FN_HINT_TREE "__defero_hint_tree"
#define DEFERO_FN_HINT_CONTAINER "__defero_hint_container"
#define DEFERO_FN_CONTAINER_POLICY "__defero_container_policy"
#define DEFERO_FN_NEW_HINTED "__defero_new_hinted"

/* __defero_new_hinted's `kind`: which hint rides with the allocation. Any
 * other value is an unhinted allocation, never an error. */
#define DEFERO_HINT_NONE 0
#define DEFERO_HINT_NEIGHBOR 1
#define DEFERO_HINT_TREE 2
#define DEFERO_HINT_CONTAINER 3

/* The allocation predicates' names (DEFERO_POLICY, defero_policy(...),
 * __defero_container_policy); "match" is an alias of "best". */
#define DEFERO_PREDICATE_FIRST "first"
#define DEFERO_PREDICATE_BEST "best"
#define DEFERO_PREDICATE_MATCH "match"
#define DEFERO_PREDICATE_PATH "path"
#define DEFERO_PREDICATE_AUTO "auto"
#define DEFERO_PREDICATES_ACCEPTED "first, best (alias match), path, auto"

/* K: a K-class spans 2^(32-K) bytes of the arena window. DEFERO_K takes
 * DEFERO_K_MIN..DEFERO_K_MAX; a container's own K (the attribute,
 * __defero_container_policy) takes 1..DEFERO_K_MAX, 0 meaning the
 * process's. */
#define DEFERO_K_MIN 0
#define DEFERO_K_MAX 32
#define DEFERO_K_DEFAULT 20

/* A macro's value as a string literal (DEFERO_STR(DEFERO_K_MAX) is "32"). */
#define DEFERO_STR_(x) #x
#define DEFERO_STR(x) DEFERO_STR_(x)

#endif /* DEFERO_ABI_H */
