// -print-search-dirs: exactly clang's answer, no warning.
// RUN: %defero_cxx -print-search-dirs > %t.defero 2>&1
// RUN: %clangxx -print-search-dirs > %t.clang 2>&1
// RUN: diff %t.clang %t.defero
// RUN: FileCheck %s < %t.defero
// CHECK: programs: =
// CHECK: libraries: =
