; unordered_map/set/multimap/multiset: every node is allocated by the
; table's allocator base, _Hashtable_alloc::_M_allocate_node; the pass sends
; the container hint at its entry (after the allocas, which stay in the
; entry block). With a custom allocator it does nothing.
; RUN: %opt -load-pass-plugin=%shlibdir/DeferoPlugin%shlibext -passes=defero-hints -S %s | FileCheck %s

define linkonce_odr ptr @_ZNSt8__detail16_Hashtable_allocISaINS_10_Hash_nodeIiLb0EEEEE16_M_allocate_nodeIJRKiEEEPS2_DpOT_(ptr %this, ptr %v) {
entry:
  %slot = alloca ptr
  %n = call ptr @_Znwm(i64 16)
  store ptr %n, ptr %slot
  ret ptr %n
}

define linkonce_odr ptr @_ZNSt8__detail16_Hashtable_allocI7MyAllocINS_10_Hash_nodeIiLb0EEEEE16_M_allocate_nodeIJRKiEEEPS3_DpOT_(ptr %this, ptr %v) {
entry:
  %n = call ptr @_Znwm(i64 16)
  ret ptr %n
}

declare ptr @_Znwm(i64)

; CHECK-LABEL: define linkonce_odr ptr @_ZNSt8__detail16_Hashtable_allocISaINS_10_Hash_nodeIiLb0EEEEE16_M_allocate_node
; CHECK-NEXT:  entry:
; CHECK-NEXT:    %slot = alloca ptr
; CHECK-NEXT:    %defero.runtime = icmp ne ptr @__defero_hint_container, null
; CHECK:         call void @__defero_hint_container(ptr %this)
; CHECK:         call ptr @_Znwm(i64 16)
; CHECK-LABEL: define linkonce_odr ptr @_ZNSt8__detail16_Hashtable_allocI7MyAlloc
; CHECK-NOT:     __defero_hint
; CHECK:         ret ptr
