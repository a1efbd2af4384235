// -fsyntax-only: clang's diagnostics, and nothing else (no linker input
// warning); a clean file gives no output.
// RUN: not %defero_cxx -fsyntax-only -DBROKEN %s > %t.defero 2>&1
// RUN: not %clangxx -fsyntax-only -DBROKEN %s > %t.clang 2>&1
// RUN: diff %t.clang %t.defero
// RUN: FileCheck %s < %t.defero
// RUN: %defero_cxx -fsyntax-only %s 2>&1 | count 0
// CHECK: error: use of undeclared identifier 'undeclared'
// CHECK: 1 error generated.
#include <map>
int f(std::map<int, int> &m) {
#ifdef BROKEN
  return undeclared;
#endif
  return m[1];
}
