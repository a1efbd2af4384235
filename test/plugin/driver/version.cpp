// --version: clang's answer, then one line with the identity of the plugin
// and runtime the wrapper loads and of the clang it runs (what a compiler
// cache can check).
// RUN: %defero_cxx --version > %t.defero 2> %t.err
// RUN: count 0 < %t.err
// RUN: %clangxx --version > %t.clang
// RUN: head -n -1 %t.defero | diff %t.clang -
// RUN: tail -n 1 %t.defero | FileCheck %s
// CHECK: {{^}}Defero: plugin {{[0-9a-f]+}}, clang-plugin {{[0-9a-f]+}}, runtime {{[0-9a-f]+}}, clang {{[0-9a-f]+$}}
