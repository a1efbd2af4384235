; forward_list: every insertion goes through _Fwd_list_base::_M_insert_after;
; the neighbour is the position's node, or the head (header's _M_next, at
; offset 0) when the position is before_begin() (push_front).
; RUN: %opt -load-pass-plugin=%shlibdir/DeferoPlugin%shlibext -passes=defero-hints -S %s | FileCheck %s

define linkonce_odr ptr @_ZNSt14_Fwd_list_baseIiSaIiEE15_M_insert_afterIJRKiEEEPSt19_Fwd_list_node_baseSt24_Fwd_list_const_iteratorIiEDpOT_(ptr %this, ptr %pos, ptr %x) {
entry:
  %node = call ptr @_ZNSt14_Fwd_list_baseIiSaIiEE14_M_create_nodeIJRKiEEEPSt14_Fwd_list_nodeIiEDpOT_(ptr %this, ptr %x)
  ret ptr %node
}

declare ptr @_ZNSt14_Fwd_list_baseIiSaIiEE14_M_create_nodeIJRKiEEEPSt14_Fwd_list_nodeIiEDpOT_(ptr, ptr)

; CHECK:      %defero.at_header = icmp eq ptr %pos, %this
; CHECK-NEXT: [[NEXT:%.*]] = getelementptr inbounds i8, ptr %pos, i64 0
; CHECK-NEXT: %defero.beside_header = load ptr, ptr [[NEXT]]
; CHECK:      call void @__defero_hint_neighbor(ptr %this, ptr %defero.neighbour)
; CHECK:      call ptr @_ZNSt14_Fwd_list_baseIiSaIiEE14_M_create_node

; The initialising loops (constructors; through a temporary list also
; insert_after(pos, n, v), insert_after(pos, first, last) and assign):
; `__to->_M_next = _M_create_node(v)`. The neighbour is read from `__to`
; right before the node is made.
define linkonce_odr void @_ZNSt12forward_listIiSaIiEE18_M_fill_initializeEmRKi(ptr %this, i64 %n, ptr %v) {
entry:
  %to = alloca ptr
  store ptr %this, ptr %to
  %node = call ptr @_ZNSt14_Fwd_list_baseIiSaIiEE14_M_create_nodeIJRKiEEEPSt14_Fwd_list_nodeIiEDpOT_(ptr %this, ptr %v)
  %prev = load ptr, ptr %to
  %next = getelementptr inbounds i8, ptr %prev, i64 0
  store ptr %node, ptr %next
  ret void
}

; CHECK-LABEL: define linkonce_odr void @_ZNSt12forward_listIiSaIiEE18_M_fill_initializeEmRKi(
; CHECK:      %defero.previous = load ptr, ptr %to
; CHECK:      call void @__defero_hint_neighbor(ptr %this, ptr %defero.previous)
; CHECK:      call ptr @_ZNSt14_Fwd_list_baseIiSaIiEE14_M_create_node

; Another shape (the new node is not stored through a local): the
; container hint instead.
define linkonce_odr void @_ZNSt12forward_listIiSaIiEE19_M_range_initializeIPKiEEvT_S5_(ptr %this, ptr %first, ptr %last) {
entry:
  %node = call ptr @_ZNSt14_Fwd_list_baseIiSaIiEE14_M_create_nodeIJRKiEEEPSt14_Fwd_list_nodeIiEDpOT_(ptr %this, ptr %first)
  store ptr %node, ptr %this
  ret void
}

; CHECK-LABEL: define linkonce_odr void @_ZNSt12forward_listIiSaIiEE19_M_range_initializeIPKiEEvT_S5_(
; CHECK-NOT:  __defero_hint_neighbor
; CHECK:      call void @__defero_hint_container(ptr %this)
; CHECK:      call ptr @_ZNSt14_Fwd_list_baseIiSaIiEE14_M_create_node
