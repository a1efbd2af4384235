; The node of every std::list insertion is made in list::_M_insert (and
; insert/emplace) by _M_create_node: the pass hints the neighbour right
; before it - the position's node, or the tail when the position is the
; header (push_back) - through the weak, null-checked runtime entry.
; RUN: %opt -load-pass-plugin=%shlibdir/DeferoPlugin%shlibext -passes=defero-hints -S %s | FileCheck %s

; A hand-written stand-in for libstdc++'s instantiation (names are what
; matters to the pass).
define linkonce_odr void @_ZNSt7__cxx114listIiSaIiEE9_M_insertIJRKiEEEvSt14_List_iteratorIiEDpOT_(ptr %this, ptr %pos, ptr %x) {
entry:
  %node = call ptr @_ZNSt7__cxx114listIiSaIiEE14_M_create_nodeIJRKiEEEPSt10_List_nodeIiEDpOT_(ptr %this, ptr %x)
  ret void
}

declare ptr @_ZNSt7__cxx114listIiSaIiEE14_M_create_nodeIJRKiEEEPSt10_List_nodeIiEDpOT_(ptr, ptr)

; CHECK-LABEL: define linkonce_odr void @_ZNSt7__cxx114listIiSaIiEE9_M_insert
; CHECK:       %defero.at_header = icmp eq ptr %pos, %this
; CHECK-NEXT:  [[PREV:%.*]] = getelementptr inbounds i8, ptr %pos, i64 8
; CHECK-NEXT:  %defero.beside_header = load ptr, ptr [[PREV]]
; CHECK-NEXT:  %defero.neighbour = select i1 %defero.at_header, ptr %defero.beside_header, ptr %pos
; CHECK-NEXT:  %defero.runtime = icmp ne ptr @__defero_hint_neighbor, null
; CHECK-NEXT:  br i1 %defero.runtime
; CHECK:       call void @__defero_hint_neighbor(ptr %this, ptr %defero.neighbour)
; CHECK:       call ptr @_ZNSt7__cxx114listIiSaIiEE14_M_create_node
; CHECK:       declare extern_weak void @__defero_hint_neighbor(ptr, ptr)
