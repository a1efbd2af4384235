; Left alone: a map with a custom allocator, even when its key type names
; std::allocator (std::vector<int> keys); and _M_insert_ instantiated with
; _Reuse_or_alloc_node (assignment reusing old nodes: it may not allocate,
; and a one-shot hint would then land on an unrelated allocation).
; RUN: %opt -load-pass-plugin=%shlibdir/DeferoPlugin%shlibext -passes=defero-hints -S %s | FileCheck %s
; CHECK-NOT: __defero_hint

define linkonce_odr ptr @_ZNSt8_Rb_treeISt6vectorIiSaIiEESt4pairIKS2_iESt10_Select1stIS5_ESt4lessIS2_E7MyAllocIS5_EE10_M_insert_IS5_NSC_11_Alloc_nodeEEESt17_Rb_tree_iteratorIS5_EPSt18_Rb_tree_node_baseSI_OT_RT0_(ptr %this, ptr %x, ptr %p, ptr %v, ptr %gen) {
  %insert_left = alloca i8
  store i8 0, ptr %insert_left
  %z = call ptr @_ZNKSt8_Rb_treeISt6vectorIiSaIiEESt4pairIKS2_iESt10_Select1stIS5_ESt4lessIS2_E7MyAllocIS5_EE11_Alloc_nodeclIS5_EEPSt13_Rb_tree_nodeIS5_EOT_(ptr %gen, ptr %v)
  %l = load i8, ptr %insert_left
  %b = trunc i8 %l to i1
  call void @_ZSt29_Rb_tree_insert_and_rebalancebPSt18_Rb_tree_node_baseS0_RS_(i1 zeroext %b, ptr %z, ptr %p, ptr %this)
  ret ptr %z
}
declare ptr @_ZNKSt8_Rb_treeISt6vectorIiSaIiEESt4pairIKS2_iESt10_Select1stIS5_ESt4lessIS2_E7MyAllocIS5_EE11_Alloc_nodeclIS5_EEPSt13_Rb_tree_nodeIS5_EOT_(ptr, ptr)

define linkonce_odr ptr @_ZNSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE10_M_insert_IRKS2_NS8_20_Reuse_or_alloc_nodeEEESt17_Rb_tree_iteratorIS2_EPSt18_Rb_tree_node_baseSG_OT_RT0_(ptr %this, ptr %x, ptr %p, ptr %v, ptr %gen) {
  %insert_left = alloca i8
  store i8 0, ptr %insert_left
  %z = call ptr @_ZNSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE20_Reuse_or_alloc_nodeclIRKS2_EEPSt13_Rb_tree_nodeIS2_EOT_(ptr %gen, ptr %v)
  %l = load i8, ptr %insert_left
  %b = trunc i8 %l to i1
  call void @_ZSt29_Rb_tree_insert_and_rebalancebPSt18_Rb_tree_node_baseS0_RS_(i1 zeroext %b, ptr %z, ptr %p, ptr %this)
  ret ptr %z
}
declare ptr @_ZNSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE20_Reuse_or_alloc_nodeclIRKS2_EEPSt13_Rb_tree_nodeIS2_EOT_(ptr, ptr)
declare void @_ZSt29_Rb_tree_insert_and_rebalancebPSt18_Rb_tree_node_baseS0_RS_(i1 zeroext, ptr, ptr, ptr)
