// -E: the same preprocessed text as clang's, no warning.
// RUN: %defero_cxx -std=c++17 -E %s > %t.defero 2> %t.err
// RUN: count 0 < %t.err
// RUN: %clangxx -std=c++17 -E %s > %t.clang
// RUN: diff %t.clang %t.defero
// RUN: FileCheck %s < %t.defero
// CHECK: int answer = 42;
#include <list>
#define ANSWER 42
int answer = ANSWER;
