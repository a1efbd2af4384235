// -dumpversion: exactly clang's answer, no warning.
// RUN: %defero_cxx -dumpversion > %t.defero 2>&1
// RUN: %clangxx -dumpversion > %t.clang 2>&1
// RUN: diff %t.clang %t.defero
// RUN: FileCheck %s < %t.defero
// CHECK: {{^19\.}}
