; Red-black trees (map, set, multimap, multiset): insertions whose position
; is known first go through _Rb_tree::_M_insert_(x, p, v, node_gen), which
; computes __insert_left, makes the node with _Alloc_node, then rebalances.
; The pass hints (tree, parent p, insert_left) right before the node is made,
; reading __insert_left from the variable the rebalance call reads.
; RUN: %opt -load-pass-plugin=%shlibdir/DeferoPlugin%shlibext -passes=defero-hints -S %s | FileCheck %s

define linkonce_odr ptr @_ZNSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE10_M_insert_IS2_NS8_11_Alloc_nodeEEESt17_Rb_tree_iteratorIS2_EPSt18_Rb_tree_node_baseSE_OT_RT0_(ptr %this, ptr %x, ptr %p, ptr %v, ptr %gen) {
entry:
  %insert_left = alloca i8
  store i8 1, ptr %insert_left
  %z = call ptr @_ZNKSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE11_Alloc_nodeclIS2_EEPSt13_Rb_tree_nodeIS2_EOT_(ptr %gen, ptr %v)
  %l = load i8, ptr %insert_left
  %b = trunc i8 %l to i1
  call void @_ZSt29_Rb_tree_insert_and_rebalancebPSt18_Rb_tree_node_baseS0_RS_(i1 zeroext %b, ptr %z, ptr %p, ptr %this)
  ret ptr %z
}

declare ptr @_ZNKSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE11_Alloc_nodeclIS2_EEPSt13_Rb_tree_nodeIS2_EOT_(ptr, ptr)
declare void @_ZSt29_Rb_tree_insert_and_rebalancebPSt18_Rb_tree_node_baseS0_RS_(i1 zeroext, ptr, ptr, ptr)

; CHECK:      store i8 1, ptr %insert_left
; CHECK-NEXT: [[L:%.*]] = load i8, ptr %insert_left
; CHECK-NEXT: [[NZ:%.*]] = icmp ne i8 [[L]], 0
; CHECK-NEXT: %defero.insert_left = zext i1 [[NZ]] to i32
; CHECK-NEXT: %defero.runtime = icmp ne ptr @__defero_hint_tree, null
; CHECK:      call void @__defero_hint_tree(ptr %this, ptr %p, i32 %defero.insert_left)
; CHECK:      call ptr @_ZNKSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE11_Alloc_nodecl
; CHECK:      declare extern_weak void @__defero_hint_tree(ptr, ptr, i32)
