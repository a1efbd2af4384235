// What the wrapper says on bad input: one line naming what it expected and
// where, and a non-zero exit.
// An unknown plugin argument: the plugin's one-line error (and clang's
// count of errors).
// RUN: not %defero_cxx -fplugin-arg-defero-bogus -c %s -o %t.o 2> %t.err
// RUN: count 2 < %t.err
// RUN: FileCheck %s --check-prefix=BADARG < %t.err
// The plugin gone (or the build tree moved): before clang runs.
// RUN: sed 's|^plugin=.*|plugin="/moved/build/lib/DeferoPlugin.so"|' %defero_cxx > %t.noplugin.sh
// RUN: not bash %t.noplugin.sh -c %s -o %t.o 2> %t.err
// RUN: count 1 < %t.err
// RUN: FileCheck %s --check-prefix=NOPLUGIN < %t.err
// Its Clang half gone.
// RUN: sed 's|^clang_plugin=.*|clang_plugin="/moved/build/lib/DeferoClangPlugin.so"|' %defero_cxx > %t.nohalf.sh
// RUN: not bash %t.nohalf.sh -c %s -o %t.o 2> %t.err
// RUN: count 1 < %t.err
// RUN: FileCheck %s --check-prefix=NOHALF < %t.err
// The runtime gone: only a command that links needs it.
// RUN: sed 's|^libdir=.*|libdir="/moved/build/lib"|' %defero_cxx > %t.noruntime.sh
// RUN: bash %t.noruntime.sh -c %s -o %t.o 2>&1 | count 0
// RUN: not bash %t.noruntime.sh %t.o -o %t 2> %t.err
// RUN: count 1 < %t.err
// RUN: FileCheck %s --check-prefix=NORUNTIME < %t.err
// --stl-patch without the generated headers.
// RUN: sed 's|^stlpatch=.*|stlpatch="/moved/build/stl-patch/include"|' %defero_cxx > %t.nostl.sh
// RUN: not bash %t.nostl.sh --stl-patch -c %s -o %t.o 2> %t.err
// RUN: count 1 < %t.err
// RUN: FileCheck %s --check-prefix=NOSTL < %t.err
// -static: the runtime is a shared library.
// RUN: not %defero_cxx -static %t.o -o %t.static 2> %t.err
// RUN: count 1 < %t.err
// RUN: FileCheck %s --check-prefix=STATIC < %t.err
// BADARG: {{^}}error: defero: unknown plugin argument 'bogus' (accepted: disable)
// BADARG-NEXT: {{^}}1 error generated.
// NOPLUGIN: {{^}}defero-c++: the Defero plugin is missing at /moved/build/lib/DeferoPlugin.so; build the project first
// NOHALF: {{^}}defero-c++: the Defero plugin's Clang half is missing at /moved/build/lib/DeferoClangPlugin.so; the build tree was moved or not built
// NORUNTIME: {{^}}defero-c++: the Defero runtime is missing at /moved/build/lib/libdefero.so; the build tree was moved or not built
// NOSTL: {{^}}defero-c++: the patched libstdc++ include path is missing at /moved/build/stl-patch/include; build the project first
// STATIC: {{^}}defero-c++: -static: the Defero runtime is a shared library ({{.*}}/libdefero.so)
int main() { return 0; }
