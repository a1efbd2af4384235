#!/usr/bin/env python3
"""stl-patch generator: a patched libstdc++ include path that sends Defero's
container hints.

Reads the installed libstdc++ container headers (those the compiler given
by --cxx uses, or those under --source-dir), applies the edits listed below
for that libstdc++ release, and writes patched copies of only the headers
it changes, plus Defero's own bits/defero_stl_hints.h, into --out:

    generate.py --cxx g++ --out build/stl-patch/include

so that `-isystem build/stl-patch/include` is all a program adds. No
libstdc++ text is stored in this repository: each edit is an anchor (a few
lines the header must contain, a given number of times) and what to insert
before it. On an unsupported release, or an anchor that is not found as
often as expected, nothing is written and the generator fails with one line
naming the header, the anchor and the release found.

The hints are those of the compiler plugin, at the same insert sites, with
the same arguments (DESIGN.md's hint ABI): a program compiled either way
sends exactly the same hints.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

PROG = "stl-patch"
# The hint ABI's names come from the runtime's abi.h, the one place they
# are spelled (the runtime and the compiler plugin read it too).
ABI_HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime",
                          "include", "defero", "abi.h")


def abi_names(path=ABI_HEADER):
    """{'DEFERO_FN_HINT_NEIGHBOR': '__defero_hint_neighbor', ...,
    'DEFERO_HINT_NEIGHBOR': '1', ...} from abi.h: the entry points' names and
    the hint kinds' numbers (the kind the fused entry takes)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise Failure(f"{path}: cannot read the hint ABI's names: {e.strerror}") from e
    names = dict(re.findall(r'^#define (DEFERO_FN_\w+) "(\w+)"$', text, re.M))
    names.update(re.findall(r"^#define (DEFERO_HINT_\w+) ([0-9]+)$", text, re.M))
    want = ("DEFERO_FN_HINT_NEIGHBOR", "DEFERO_FN_HINT_TREE", "DEFERO_FN_HINT_CONTAINER",
            "DEFERO_FN_NEW_HINTED", "DEFERO_HINT_NONE", "DEFERO_HINT_NEIGHBOR",
            "DEFERO_HINT_TREE", "DEFERO_HINT_CONTAINER")
    missing = [n for n in want if n not in names]
    if missing:
        raise Failure(f"{path}: no #define of {missing[0]} (the hint ABI's names)")
    return names


def hints_text(names):
    """HINTS_TEXT with the hint ABI's names and kinds filled in."""
    return re.sub(r"@(DEFERO_(?:FN|HINT)_\w+)@", lambda m: names[m.group(1)], HINTS_TEXT)


HINTS_HEADER = "bits/defero_stl_hints.h"


class Failure(Exception):
    pass


# --- the edits, per libstdc++ release -------------------------------------
# Each edit: (anchor, text inserted before every occurrence, expected count).
# `{I}` in the inserted text is replaced by the anchor's own indentation.

INCLUDE_HINTS = "#include <" + HINTS_HEADER + ">\n"

EDITS = {
    12: {
        "bits/stl_list.h": [
            ("#define _STL_LIST_H 1\n", None, 1),  # include the hints after the guard
            # Node memory: a hinting allocator (defero::allocator) gets the
            # neighbour as allocate(n, hint).
            ("      { return _Node_alloc_traits::allocate(_M_impl, 1); }\n",
             ("      { return ::__defero::__allocate<_Node_alloc_traits>(_M_impl); }\n", "replace"), 1),
            # _M_insert(pos, args...): push_back/front, emplace_back/front,
            # resize and the temporary lists of insert(n)/insert(range)/assign.
            ("\t _Node* __tmp = _M_create_node(std::forward<_Args>(__args)...);\n"
             "\t __tmp->_M_hook(__position._M_node);\n",
             "{I}::__defero::__hint_list<_Node_alloc_type>(this, __position._M_node,\n"
             "{I}\t\t\t\t\t\t&this->_M_impl._M_node);\n", 1),
        ],
        "bits/list.tcc": [
            ("#define _LIST_TCC 1\n", None, 1),
            # emplace(pos, args...) and insert(pos, value).
            ("\t_Node* __tmp = _M_create_node(std::forward<_Args>(__args)...);\n"
             "\t__tmp->_M_hook(__position._M_const_cast()._M_node);\n",
             "{I}::__defero::__hint_list<_Node_alloc_type>(this, __position._M_node,\n"
             "{I}\t\t\t\t\t\t&this->_M_impl._M_node);\n", 1),
            ("      _Node* __tmp = _M_create_node(__x);\n"
             "      __tmp->_M_hook(__position._M_const_cast()._M_node);\n",
             "{I}::__defero::__hint_list<_Node_alloc_type>(this, __position._M_node,\n"
             "{I}\t\t\t\t\t\t&this->_M_impl._M_node);\n", 1),
        ],
        "bits/forward_list.h": [
            ("#define _FORWARD_LIST_H 1\n", None, 1),
            ("\tauto __ptr = _Node_alloc_traits::allocate(_M_get_Node_allocator(), 1);\n",
             ("\tauto __ptr = ::__defero::__allocate<_Node_alloc_traits>(_M_get_Node_allocator());\n",
              "replace"), 1),
        ],
        "bits/forward_list.tcc": [
            ("#define _FORWARD_LIST_TCC 1\n", None, 1),
            # _M_insert_after(pos, args...): every insert_after/emplace_after,
            # push_front/emplace_front.
            ("\t_Node* __thing = _M_create_node(std::forward<_Args>(__args)...);\n",
             "{I}::__defero::__hint_forward_list<_Node_alloc_type>(this, __pos._M_node,\n"
             "{I}\t\t\t\t\t\t      &this->_M_impl._M_head);\n", 1),
            # The initialising loops (constructors; through a temporary list
            # insert_after(pos, n, v), range insert_after and assign): the
            # neighbour is the previous node.
            ("\t    __to->_M_next = this->_M_create_node(*__first);\n",
             "{I}::__defero::__hint_neighbor<_Node_alloc_type>(this, __to);\n", 1),
            ("\t  __to->_M_next = this->_M_create_node(__value);\n",
             "{I}::__defero::__hint_neighbor<_Node_alloc_type>(this, __to);\n", 1),
            ("\t  __to->_M_next = this->_M_create_node();\n",
             "{I}::__defero::__hint_neighbor<_Node_alloc_type>(this, __to);\n", 1),
        ],
        "bits/stl_tree.h": [
            ("#define _STL_TREE_H 1\n", None, 1),
            ("      { return _Alloc_traits::allocate(_M_get_Node_allocator(), 1); }\n",
             ("      { return ::__defero::__allocate<_Alloc_traits>(_M_get_Node_allocator()); }\n",
              "replace"), 1),
            # _M_insert_(x, p, v, node_gen): the parent and side are known
            # before the node is made (insert, insert with a hint, ranges).
            # Only when the node is newly allocated (_Alloc_node), not
            # recycled (_Reuse_or_alloc_node).
            ("\t_Link_type __z = __node_gen(_GLIBCXX_FORWARD(_Arg, __v));\n\n"
             "\t_Rb_tree_insert_and_rebalance(__insert_left, __z, __p,\n",
             "{I}::__defero::__hint_tree_gen<_Node_allocator, _NodeGen, _Alloc_node>(\n"
             "{I}  this, __p, __insert_left);\n", 1),
            # _M_insert_lower(p, v) (multimap/multiset insert with a hint).
            ("      _Link_type __z = _M_create_node(_GLIBCXX_FORWARD(_Arg, __v));\n\n"
             "      _Rb_tree_insert_and_rebalance(__insert_left, __z, __p,\n",
             "{I}::__defero::__hint_tree<_Node_allocator>(this, __p, __insert_left);\n", 1),
            # _M_emplace_unique/_equal/_hint_unique/_hint_equal: the node is
            # made before its position is known (emplace, emplace_hint,
            # operator[], try_emplace, insert_or_assign).
            ("\t_Auto_node __z(*this, std::forward<_Args>(__args)...);\n",
             "{I}::__defero::__hint_container<_Node_allocator>(this);\n", 4),
        ],
        "bits/hashtable_policy.h": [
            ("#define _HASHTABLE_POLICY_H 1\n", None, 1),
            # _Hashtable_alloc::_M_allocate_node: every node of the
            # unordered containers.
            ("\tauto __nptr = __node_alloc_traits::allocate(_M_node_allocator(), 1);\n",
             ("\t::__defero::__hint_container<_NodeAlloc>(this);\n"
              "\tauto __nptr\n"
              "\t  = ::__defero::__allocate<__node_alloc_traits>(_M_node_allocator());\n",
              "replace"), 1),
        ],
    },
}

HINTS_TEXT = """\
// bits/defero_stl_hints.h - written by Defero's stl-patch generator (not
// part of libstdc++). The helpers the patched container headers call at
// each node allocation:
//  - containers with std::allocator send the hint ABI of Defero's
//    DESIGN.md (weak, so a program runs the same without the runtime);
//  - containers whose allocator declares `defero_hint_tag` (Defero's
//    defero::allocator) get the neighbour or parent as the standard
//    allocate(n, hint) argument instead;
//  - any other allocator gets nothing.
#ifndef _DEFERO_STL_HINTS_H
#define _DEFERO_STL_HINTS_H 1

#pragma GCC system_header

#include <bits/memoryfwd.h>

extern "C" {
__attribute__((__weak__, __nothrow__)) void
@DEFERO_FN_HINT_NEIGHBOR@(const void *__container, const void *__neighbor);
__attribute__((__weak__, __nothrow__)) void
@DEFERO_FN_HINT_TREE@(const void *__container, const void *__parent, int __insert_left);
__attribute__((__weak__, __nothrow__)) void
@DEFERO_FN_HINT_CONTAINER@(const void *__container);
__attribute__((__weak__)) void *
@DEFERO_FN_NEW_HINTED@(__SIZE_TYPE__ __size, int __kind, const void *__container,
		       const void *__where, int __side);
}

namespace __defero
{
  template<bool _B> struct __bool { };

  template<typename _Alloc>
    struct __is_std_allocator { static const bool value = false; };
  template<typename _Tp>
    struct __is_std_allocator<std::allocator<_Tp> >
    { static const bool value = true; };

  template<typename _Tp> struct __make_void { typedef void type; };
  template<typename _Alloc, typename = void>
    struct __takes_hints { static const bool value = false; };
  template<typename _Alloc>
    struct __takes_hints<_Alloc,
			 typename __make_void<typename _Alloc::defero_hint_tag>::type>
    { static const bool value = true; };

  // The neighbour or parent for a hinting allocator's next node on this
  // thread (set right before that node is allocated).
  inline const void*&
  __pending() _GLIBCXX_USE_NOEXCEPT
  {
    static __thread const void* __p = 0;
    return __p;
  }

  // The hint for std::allocator's next node on this thread, when the
  // runtime has the fused entry (hint and operator new in one call, as the
  // compiler plugin emits): kind @DEFERO_HINT_NONE@, none.
  struct __fused_hint
  {
    int _M_kind;
    int _M_side;
    const void* _M_container;
    const void* _M_where;
  };

  inline __fused_hint&
  __fused() _GLIBCXX_USE_NOEXCEPT
  {
    static __thread __fused_hint __h = { @DEFERO_HINT_NONE@, 0, 0, 0 };
    return __h;
  }

  inline bool
  __fuse(int __kind, const void* __c, const void* __w, int __side) _GLIBCXX_USE_NOEXCEPT
  {
    if (!&::@DEFERO_FN_NEW_HINTED@)
      return false;
    __fused_hint& __h = __fused();
    __h._M_kind = __kind;
    __h._M_side = __side;
    __h._M_container = __c;
    __h._M_where = __w;
    return true;
  }

  template<typename _Alloc>
    inline void
    __hint_neighbor(const void* __c, const void* __n) _GLIBCXX_USE_NOEXCEPT
    {
      if (__is_std_allocator<_Alloc>::value)
	{
	  if (!__fuse(@DEFERO_HINT_NEIGHBOR@, __c, __n, 0) && &::@DEFERO_FN_HINT_NEIGHBOR@)
	    ::@DEFERO_FN_HINT_NEIGHBOR@(__c, __n);
	}
      else if (__takes_hints<_Alloc>::value)
	__pending() = __n;
    }

  template<typename _Alloc>
    inline void
    __hint_tree(const void* __c, const void* __p, bool __left) _GLIBCXX_USE_NOEXCEPT
    {
      if (__is_std_allocator<_Alloc>::value)
	{
	  if (!__fuse(@DEFERO_HINT_TREE@, __c, __p, __left ? 1 : 0) && &::@DEFERO_FN_HINT_TREE@)
	    ::@DEFERO_FN_HINT_TREE@(__c, __p, __left ? 1 : 0);
	}
      else if (__takes_hints<_Alloc>::value)
	__pending() = __p;
    }

  template<typename _Alloc>
    inline void
    __hint_container(const void* __c) _GLIBCXX_USE_NOEXCEPT
    {
      if (__is_std_allocator<_Alloc>::value && !__fuse(@DEFERO_HINT_CONTAINER@, __c, 0, 0)
	  && &::@DEFERO_FN_HINT_CONTAINER@)
	::@DEFERO_FN_HINT_CONTAINER@(__c);
    }

  // list: the position's node, or the tail when inserting at end().
  template<typename _Alloc, typename _Node, typename _Header>
    inline void
    __hint_list(const void* __c, const _Node* __pos,
		const _Header* __header) _GLIBCXX_USE_NOEXCEPT
    {
      const void* __p = __pos;
      __hint_neighbor<_Alloc>(__c, __p == static_cast<const void*>(__header)
			      ? static_cast<const void*>(__header->_M_prev) : __p);
    }

  // forward_list: the position's node, or the head after before_begin().
  template<typename _Alloc, typename _Node, typename _Head>
    inline void
    __hint_forward_list(const void* __c, const _Node* __pos,
			const _Head* __head) _GLIBCXX_USE_NOEXCEPT
    {
      const void* __p = __pos;
      __hint_neighbor<_Alloc>(__c, __p == static_cast<const void*>(__head)
			      ? static_cast<const void*>(__head->_M_next) : __p);
    }

  // _Rb_tree::_M_insert_: only for newly allocated nodes.
  template<typename _Gen, typename _AllocNode>
    struct __same { static const bool value = false; };
  template<typename _Gen>
    struct __same<_Gen, _Gen> { static const bool value = true; };

  template<typename _Alloc, typename _Gen, typename _AllocNode>
    inline void
    __hint_tree_gen(const void* __c, const void* __p, bool __left) _GLIBCXX_USE_NOEXCEPT
    {
      if (__same<_Gen, _AllocNode>::value)
	__hint_tree<_Alloc>(__c, __p, __left);
    }

  // Node memory: a hinting allocator gets the pending hint.
  template<typename _Traits>
    inline typename _Traits::pointer
    __allocate_with(typename _Traits::allocator_type& __a, __bool<false>)
    { return _Traits::allocate(__a, 1); }

  template<typename _Traits>
    inline typename _Traits::pointer
    __allocate_with(typename _Traits::allocator_type& __a, __bool<true>)
    {
      const void* __hint = __pending();
      __pending() = 0;
      return _Traits::allocate(__a, 1, __hint);
    }

  // std::allocator's node: through the fused entry when a hint is
  // pending (the node's memory comes from operator new's heap, as
  // std::allocator's does), else as std::allocator gives it.
  template<typename _Traits>
    inline typename _Traits::pointer
    __allocate_std(typename _Traits::allocator_type& __a)
    {
      typedef typename _Traits::value_type _Tp;
      __fused_hint& __h = __fused();
      if (__h._M_kind != @DEFERO_HINT_NONE@
#ifdef __STDCPP_DEFAULT_NEW_ALIGNMENT__
	  && __alignof__(_Tp) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__
#endif
	 )
	{
	  const int __kind = __h._M_kind;
	  __h._M_kind = @DEFERO_HINT_NONE@;
	  return static_cast<typename _Traits::pointer>(
	      ::@DEFERO_FN_NEW_HINTED@(sizeof(_Tp), __kind, __h._M_container,
				      __h._M_where, __h._M_side));
	}
      __h._M_kind = @DEFERO_HINT_NONE@;
      return _Traits::allocate(__a, 1);
    }

  template<typename _Traits>
    inline typename _Traits::pointer
    __allocate_or_std(typename _Traits::allocator_type& __a, __bool<false>)
    {
      return __allocate_with<_Traits>(
	  __a, __bool<__takes_hints<typename _Traits::allocator_type>::value>());
    }

  template<typename _Traits>
    inline typename _Traits::pointer
    __allocate_or_std(typename _Traits::allocator_type& __a, __bool<true>)
    { return __allocate_std<_Traits>(__a); }

  template<typename _Traits>
    inline typename _Traits::pointer
    __allocate(typename _Traits::allocator_type& __a)
    {
      return __allocate_or_std<_Traits>(
	  __a, __bool<__is_std_allocator<typename _Traits::allocator_type>::value>());
    }
} // namespace __defero

#endif // _DEFERO_STL_HINTS_H
"""


# --- finding the headers and the release ---------------------------------

def headers_of_compiler(cxx):
    """Paths of the libstdc++ headers the compiler `cxx` includes."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.cpp")
        with open(src, "w") as f:
            f.write("#include <list>\n#include <forward_list>\n#include <map>\n"
                    "#include <set>\n#include <unordered_map>\n#include <unordered_set>\n")
        try:
            r = subprocess.run([cxx, "-std=c++17", "-M", src], capture_output=True,
                               text=True)
        except FileNotFoundError:
            raise Failure(f"compiler not found: {cxx}")
        if r.returncode != 0:
            first = (r.stderr.strip().splitlines() or ["?"])[0]
            raise Failure(f"{cxx} cannot preprocess the container headers: {first}")
    deps = r.stdout.replace("\\\n", " ").split()
    found = {}
    for d in deps:
        d = os.path.normpath(d)
        for rel in list(EDITS[max(EDITS)].keys()) + ["bits/c++config.h"]:
            if d.endswith("/" + rel) and rel not in found:
                found[rel] = d
    if "bits/c++config.h" not in found:
        raise Failure(f"{cxx} does not use libstdc++ (no bits/c++config.h among its headers)")
    return found


def headers_of_dir(src_dir):
    found = {}
    for dirpath, _, files in os.walk(src_dir):
        for name in files:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, src_dir)
            key = "bits/" + name if os.path.basename(dirpath) == "bits" else rel
            found.setdefault(key, p)
    if "bits/c++config.h" not in found:
        raise Failure(f"no bits/c++config.h under {src_dir}")
    return found


def release_of(config_h):
    with open(config_h, encoding="utf-8", errors="replace") as f:
        m = re.search(r"^#define _GLIBCXX_RELEASE (\d+)", f.read(), re.M)
    if not m:
        raise Failure(f"{config_h}: no _GLIBCXX_RELEASE (not libstdc++?)")
    return int(m.group(1))


# --- patching ---------------------------------------------------------------

def patch(rel, path, release, text):
    out = text
    for anchor, insert, count in EDITS[release][rel]:
        found = out.count(anchor)
        if found != count:
            first = anchor.strip().splitlines()[0].strip()
            raise Failure(f"{rel}: anchor '{first}' found {found} time(s), expected {count}, "
                          f"in libstdc++ {release} at {path}")
        if insert is None:  # the include guard: the hints header right after it
            out = out.replace(anchor, anchor + "\n" + INCLUDE_HINTS, 1)
            continue
        if isinstance(insert, tuple):  # ("new text", "replace")
            out = out.replace(anchor, insert[0])
            continue
        indent = re.match(r"[ \t]*", anchor).group(0)
        out = out.replace(anchor, insert.replace("{I}", indent) + anchor)
    banner = (f"// Patched by Defero's stl-patch generator from {path}\n"
              f"// (libstdc++ {release}): container node allocations carry locality hints.\n")
    return banner + out


def write_atomic(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--cxx", help="the compiler whose libstdc++ to patch (g++, clang++-19)")
    src.add_argument("--source-dir", help="read the headers from this directory instead")
    ap.add_argument("--out", help="the include directory to write")
    ap.add_argument("--abi-header", default=ABI_HEADER,
                    help="the hint ABI's names (default: the runtime's defero/abi.h)")
    ap.add_argument("--print-sources", action="store_true",
                    help="print the headers read, one per line, and write nothing")
    a = ap.parse_args()
    if not a.out and not a.print_sources:
        ap.error("--out is required")
    try:
        found = headers_of_compiler(a.cxx) if a.cxx else headers_of_dir(a.source_dir)
        release = release_of(found["bits/c++config.h"])
        if release not in EDITS:
            supported = ", ".join(str(r) for r in sorted(EDITS))
            raise Failure(f"libstdc++ {release} (found at {found['bits/c++config.h']}) is not "
                          f"supported (supported: {supported})")
        missing = [rel for rel in EDITS[release] if rel not in found]
        if missing:
            raise Failure(f"{missing[0]}: header not found in libstdc++ {release} "
                          f"(next to {found['bits/c++config.h']})")
        if a.print_sources:
            for rel in EDITS[release]:
                print(found[rel])
            return 0
        patched = {}
        for rel in EDITS[release]:
            with open(found[rel], encoding="utf-8") as f:
                patched[rel] = patch(rel, found[rel], release, f.read())
        # Only now that every edit applied (and abi.h read): write.
        text = hints_text(abi_names(a.abi_header))
        for rel, patched_text in patched.items():
            write_atomic(os.path.join(a.out, rel), patched_text)
        write_atomic(os.path.join(a.out, HINTS_HEADER), text)
    except (Failure, OSError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
