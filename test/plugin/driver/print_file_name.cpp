// -print-file-name=...: exactly clang's answer, no warning.
// RUN: %defero_cxx -print-file-name=libstdc++.so > %t.defero 2>&1
// RUN: %clangxx -print-file-name=libstdc++.so > %t.clang 2>&1
// RUN: diff %t.clang %t.defero
// RUN: FileCheck %s < %t.defero
// CHECK: {{^/.*/libstdc\+\+\.so$}}
