// -###: clang's plan of what the wrapper runs: the plugin loaded into the
// compile job, the runtime in the link job (and none when not linking),
// no warning.
// RUN: %defero_cxx -### %s -o %t 2> %t.link
// RUN: FileCheck %s --check-prefix=LINK < %t.link
// RUN: %defero_cxx -### -c %s -o %t.o 2> %t.compile
// RUN: FileCheck %s --check-prefix=COMPILE < %t.compile
// LINK-NOT: warning:
// LINK: "-cc1"{{.*}}"-load" "{{.*}}DeferoPlugin.so"
// LINK: "-ldefero"
// LINK-SAME: "-rpath" "{{.*}}/lib"
// COMPILE-NOT: warning:
// COMPILE: "-cc1"{{.*}}"-load" "{{.*}}DeferoPlugin.so"
// COMPILE-NOT: ldefero
int main() { return 0; }
