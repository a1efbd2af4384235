; Left alone: a user type that merely looks like a list (mylib::list), a
; std::list with a custom allocator (its nodes may not come from malloc),
; and a std::list function that makes no node.
; RUN: %opt -load-pass-plugin=%shlibdir/DeferoPlugin%shlibext -passes=defero-hints -S %s | FileCheck %s
; CHECK-NOT: __defero_hint

define void @_ZN5mylib4listIiSaIiEE9_M_insertIJRKiEEEvPvDpOT_(ptr %this, ptr %pos, ptr %x) {
  %n = call ptr @_ZN5mylib4listIiSaIiEE14_M_create_nodeIJRKiEEEPvDpOT_(ptr %this, ptr %x)
  ret void
}
declare ptr @_ZN5mylib4listIiSaIiEE14_M_create_nodeIJRKiEEEPvDpOT_(ptr, ptr)

define linkonce_odr void @_ZNSt7__cxx114listIi7MyAllocIiEE9_M_insertIJRKiEEEvSt14_List_iteratorIiEDpOT_(ptr %this, ptr %pos, ptr %x) {
  %n = call ptr @_ZNSt7__cxx114listIi7MyAllocIiEE14_M_create_nodeIJRKiEEEPSt10_List_nodeIiEDpOT_(ptr %this, ptr %x)
  ret void
}
declare ptr @_ZNSt7__cxx114listIi7MyAllocIiEE14_M_create_nodeIJRKiEEEPSt10_List_nodeIiEDpOT_(ptr, ptr)

define linkonce_odr void @_ZNSt7__cxx114listIiSaIiEE9_M_insertIJRKiEEEvSt14_List_iteratorIiEDpOT_(ptr %this, ptr %pos, ptr %x) {
  ret void
}
