// Whether a command links is read one argument at a time: an option's
// value is not taken for a flag (-Xlinker -E is a link), and a partial
// link (-r) gets no runtime (ld -r takes no shared library).
// RUN: %defero_cxx -O0 -c %s -o %t.o
// RUN: %defero_cxx %t.o -Xlinker -E -o %t.exe -### 2>&1 | FileCheck %s --check-prefix=LINK
// LINK: "-ldefero"
// RUN: %defero_cxx -r %t.o -o %t.partial.o 2> %t.err
// RUN: count 0 < %t.err
// RUN: %defero_cxx -r %t.o -o %t.partial.o -### 2>&1 | FileCheck %s --check-prefix=PARTIAL
// PARTIAL-NOT: -ldefero
#include <list>
void add(std::list<int> &l, int x) { l.push_back(x); }
