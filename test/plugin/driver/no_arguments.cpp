// defero-c++ with no arguments answers as clang++ does: "no input files",
// a failure, nothing linked.
// RUN: not %defero_cxx > %t.defero 2>&1
// RUN: not %clangxx > %t.clang 2>&1
// RUN: diff %t.clang %t.defero
// RUN: FileCheck %s < %t.defero
// Options but no input: the same.
// RUN: not %defero_cxx -O2 > %t.o2 2>&1
// RUN: FileCheck %s < %t.o2
// CHECK: error: no input files
// CHECK-NOT: undefined reference
