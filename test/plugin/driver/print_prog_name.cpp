// -print-prog-name=...: exactly clang's answer, no warning (CMake and
// configure scripts ask this way for the archiver and the linker).
// RUN: %defero_cxx -print-prog-name=ld > %t.defero 2>&1
// RUN: %clangxx -print-prog-name=ld > %t.clang 2>&1
// RUN: diff %t.clang %t.defero
// RUN: %defero_cxx -print-prog-name=llvm-ar > %t.defero-ar 2>&1
// RUN: %clangxx -print-prog-name=llvm-ar > %t.clang-ar 2>&1
// RUN: diff %t.clang-ar %t.defero-ar
// RUN: FileCheck %s < %t.defero-ar
// CHECK: {{^/.*/llvm-ar$}}
