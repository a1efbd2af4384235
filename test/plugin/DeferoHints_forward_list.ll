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
