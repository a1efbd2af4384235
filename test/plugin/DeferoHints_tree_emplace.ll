; Emplace-style tree insertions (emplace, emplace_hint, operator[],
; try_emplace, insert_or_assign) make the node before its position is known:
; the node is made by _Rb_tree::_Auto_node's constructor, and the pass sends
; the container hint right before it.
; RUN: %opt -load-pass-plugin=%shlibdir/DeferoPlugin%shlibext -passes=defero-hints -S %s | FileCheck %s

%auto_node = type { ptr, ptr }

define linkonce_odr ptr @_ZNSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE22_M_emplace_hint_uniqueIJRiSA_EEESt17_Rb_tree_iteratorIS2_ESt23_Rb_tree_const_iteratorIS2_EDpOT_(ptr %this, ptr %pos, ptr %k, ptr %v) {
entry:
  %z = alloca %auto_node
  call void @_ZNSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE10_Auto_nodeC2IJRiSB_EEERS8_DpOT_(ptr %z, ptr %this, ptr %k, ptr %v)
  ret ptr %z
}

declare void @_ZNSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE10_Auto_nodeC2IJRiSB_EEERS8_DpOT_(ptr, ptr, ptr, ptr)

; CHECK:      %defero.runtime = icmp ne ptr @__defero_hint_container, null
; CHECK:      call void @__defero_hint_container(ptr %this)
; CHECK:      call void @_ZNSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE10_Auto_nodeC2
; CHECK:      declare extern_weak void @__defero_hint_container(ptr)
