// -M, -MM, and -MD/-MF beside -c: the same dependency lists as clang's,
// no warning.
// RUN: %defero_cxx -M %s -o %t.M.defero 2> %t.err
// RUN: count 0 < %t.err
// RUN: %clangxx -M %s -o %t.M.clang
// RUN: diff %t.M.clang %t.M.defero
// RUN: %defero_cxx -MM %s > %t.MM.defero 2> %t.err
// RUN: count 0 < %t.err
// RUN: %clangxx -MM %s > %t.MM.clang
// RUN: diff %t.MM.clang %t.MM.defero
// RUN: FileCheck %s --check-prefix=MM < %t.MM.defero
// RUN: %defero_cxx -MD -MF %t.d.defero -MT obj -c %s -o %t.o 2> %t.err
// RUN: count 0 < %t.err
// RUN: %clangxx -MD -MF %t.d.clang -MT obj -c %s -o %t.clang.o
// RUN: diff %t.d.clang %t.d.defero
// RUN: FileCheck %s --check-prefix=MD < %t.d.defero
// MM: dependencies.o: {{.*}}dependencies.cpp
// MM-NOT: bits/stl_list.h
// MD: obj: {{.*}}dependencies.cpp
// MD: stl_list.h
#include <list>
std::list<int> numbers{1, 2, 3};
