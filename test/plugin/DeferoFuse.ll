; The late part, defero-fuse: a guarded one-shot hint followed (after
; inlining) by the node's operator new becomes one call of
; __defero_new_hinted through a select that falls back to plain operator
; new without the runtime. Anything that writes memory (but a local
; variable no hint argument points into), may throw or calls between the
; two keeps the hint unfused.
; RUN: %opt -load-pass-plugin=%shlibdir/DeferoPlugin%shlibext -passes=defero-fuse -S %s -o - | FileCheck %s
; The output is valid IR.
; RUN: %opt -load-pass-plugin=%shlibdir/DeferoPlugin%shlibext -passes='defero-fuse' -S %s -o - | %opt -passes=verify -disable-output

declare extern_weak void @__defero_hint_neighbor(ptr, ptr)
declare extern_weak void @__defero_hint_tree(ptr, ptr, i32)
declare extern_weak void @__defero_hint_container(ptr)
declare ptr @_Znwm(i64)
declare void @_ZdlPv(ptr)
declare void @other()
declare i32 @__gxx_personality_v0(...)

; The hint's argument was computed on the hint's own path (later passes
; sink the loads the hints pass put above its guard): it moves back above
; the guard, the kind is a constant and the emptied guard goes away.
; CHECK-LABEL: define ptr @sunk_argument(ptr %list)
; CHECK-NEXT: entry:
; CHECK-NEXT: [[HAS:%.*]] = icmp ne ptr @__defero_new_hinted, null
; CHECK-NEXT: [[FN:%.*]] = select i1 [[HAS]], ptr @__defero_new_hinted, ptr @defero.new.fallback
; CHECK-NEXT: %p = getelementptr inbounds i8, ptr %list, i64 8
; CHECK-NEXT: %tail = load ptr, ptr %p
; CHECK-NEXT: %node = call noalias nonnull dereferenceable(24) ptr [[FN]](i64 24, i32 1, ptr %list, ptr %tail, i32 0)
; CHECK-NEXT: ret ptr %node
define ptr @sunk_argument(ptr %list) {
entry:
  %absent = icmp eq ptr @__defero_hint_neighbor, null
  br i1 %absent, label %join, label %hint
hint:
  %p = getelementptr inbounds i8, ptr %list, i64 8
  %tail = load ptr, ptr %p
  call void @__defero_hint_neighbor(ptr %list, ptr %tail)
  br label %join
join:
  %node = call noalias nonnull dereferenceable(24) ptr @_Znwm(i64 24)
  ret ptr %node
}

; An argument computed on the hint's path by what may not move above the
; guard (a volatile load): it and the kind are merged into the join block
; (kind 0 where no hint was sent).
; CHECK-LABEL: define ptr @unmovable_argument(ptr %list)
; CHECK: join:
; CHECK-NEXT: [[W:%.*]] = phi ptr [ %tail, %hint ], [ null, %entry ]
; CHECK-NEXT: [[K:%.*]] = phi i32 [ 1, %hint ], [ 0, %entry ]
; CHECK-NEXT: %node = call noalias nonnull dereferenceable(24) ptr %{{.*}}(i64 24, i32 [[K]], ptr %list, ptr [[W]], i32 0)
; CHECK-NOT: @_Znwm
; CHECK-NOT: @__defero_hint_neighbor(
; CHECK: ret ptr %node
define ptr @unmovable_argument(ptr %list) {
entry:
  %absent = icmp eq ptr @__defero_hint_neighbor, null
  br i1 %absent, label %join, label %hint
hint:
  %p = getelementptr inbounds i8, ptr %list, i64 8
  %tail = load volatile ptr, ptr %p
  call void @__defero_hint_neighbor(ptr %list, ptr %tail)
  br label %join
join:
  %node = call noalias nonnull dereferenceable(24) ptr @_Znwm(i64 24)
  ret ptr %node
}

; Two fused calls in one function share the callee chosen at its entry.
; CHECK-LABEL: define void @two_nodes(ptr %list, ptr %w)
; CHECK-NEXT: entry:
; CHECK-NEXT: [[HAS:%.*]] = icmp ne ptr @__defero_new_hinted, null
; CHECK-NEXT: [[FN:%.*]] = select i1 [[HAS]], ptr @__defero_new_hinted, ptr @defero.new.fallback
; CHECK-NEXT: %a = call ptr [[FN]](i64 24, i32 1, ptr %list, ptr %w, i32 0)
; CHECK-NEXT: %b = call ptr [[FN]](i64 24, i32 1, ptr %list, ptr %a, i32 0)
; CHECK-NOT: select
; CHECK: ret void
define void @two_nodes(ptr %list, ptr %w) {
entry:
  call void @__defero_hint_neighbor(ptr %list, ptr %w)
  %a = call ptr @_Znwm(i64 24)
  call void @__defero_hint_neighbor(ptr %list, ptr %a)
  %b = call ptr @_Znwm(i64 24)
  ret void
}

; Every argument is available: no merging, and the empty guard goes away.
; CHECK-LABEL: define ptr @tree(ptr %t, ptr %parent, i32 %left)
; CHECK-NEXT: entry:
; CHECK-NEXT: [[HAS:%.*]] = icmp ne ptr @__defero_new_hinted, null
; CHECK-NEXT: [[FN:%.*]] = select i1 [[HAS]], ptr @__defero_new_hinted, ptr @defero.new.fallback
; CHECK-NEXT: %node = tail call ptr [[FN]](i64 40, i32 2, ptr %t, ptr %parent, i32 %left)
; CHECK-NEXT: ret ptr %node
define ptr @tree(ptr %t, ptr %parent, i32 %left) {
entry:
  %absent = icmp eq ptr @__defero_hint_tree, null
  br i1 %absent, label %join, label %hint
hint:
  call void @__defero_hint_tree(ptr %t, ptr %parent, i32 %left)
  br label %join
join:
  %node = tail call ptr @_Znwm(i64 40)
  ret ptr %node
}

; An invoke stays an invoke, with the same destinations; loads and
; arithmetic in between are harmless.
; CHECK-LABEL: define ptr @container_invoke(ptr %c, i64 %n)
; CHECK: %size = shl i64 %n, 4
; CHECK: %node = invoke ptr %{{.*}}(i64 %size, i32 3, ptr %c, ptr null, i32 0)
; CHECK-NEXT: to label %ok unwind label %lp
define ptr @container_invoke(ptr %c, i64 %n) personality ptr @__gxx_personality_v0 {
entry:
  call void @__defero_hint_container(ptr %c)
  %v = load i64, ptr %c
  %size = shl i64 %n, 4
  %node = invoke ptr @_Znwm(i64 %size)
          to label %ok unwind label %lp
ok:
  ret ptr %node
lp:
  %e = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %e
}

; A store between the hint and operator new: not fused.
; CHECK-LABEL: define ptr @store_between(ptr %list, ptr %w, ptr %out)
; CHECK: call void @__defero_hint_neighbor(ptr %list, ptr %w)
; CHECK: call ptr @_Znwm(i64 24)
define ptr @store_between(ptr %list, ptr %w, ptr %out) {
  call void @__defero_hint_neighbor(ptr %list, ptr %w)
  store i32 1, ptr %out
  %node = call ptr @_Znwm(i64 24)
  ret ptr %node
}

; A store into a local variable between them (std::map's emplace stores
; the tree into its _Auto_node after the container hint): fused.
; CHECK-LABEL: define ptr @local_store_between(ptr %map)
; CHECK: store ptr %map, ptr %auto
; CHECK-NEXT: %node = call ptr %{{.*}}(i64 72, i32 3, ptr %map, ptr null, i32 0)
; CHECK-NOT: @_Znwm(
; CHECK-NOT: @__defero_hint_container(
; CHECK: ret ptr %node
define ptr @local_store_between(ptr %map) {
  %auto = alloca { ptr, ptr }
  call void @__defero_hint_container(ptr %map)
  store ptr %map, ptr %auto
  %node = call ptr @_Znwm(i64 72)
  %second = getelementptr inbounds i8, ptr %auto, i64 8
  store ptr %node, ptr %second
  call void @other()
  ret ptr %node
}

; A store into the local variable the hint names (a list on the stack,
; whose header the runtime may read): not fused.
; CHECK-LABEL: define ptr @store_into_hinted_local(ptr %w)
; CHECK: call void @__defero_hint_neighbor(ptr %list, ptr %w)
; CHECK: call ptr @_Znwm(i64 24)
define ptr @store_into_hinted_local(ptr %w) {
  %list = alloca { ptr, ptr }
  call void @__defero_hint_neighbor(ptr %list, ptr %w)
  %prev = getelementptr inbounds i8, ptr %list, i64 8
  store ptr %w, ptr %prev
  %node = call ptr @_Znwm(i64 24)
  call void @other()
  ret ptr %node
}

; A volatile store into a local variable: not fused.
; CHECK-LABEL: define ptr @volatile_local_store(ptr %map)
; CHECK: call void @__defero_hint_container(ptr %map)
; CHECK: call ptr @_Znwm(i64 72)
define ptr @volatile_local_store(ptr %map) {
  %auto = alloca ptr
  call void @__defero_hint_container(ptr %map)
  store volatile ptr %map, ptr %auto
  %node = call ptr @_Znwm(i64 72)
  ret ptr %node
}

; A call between them (it could allocate and take the hint): not fused.
; CHECK-LABEL: define ptr @call_between(ptr %list, ptr %w)
; CHECK: call void @__defero_hint_neighbor(ptr %list, ptr %w)
; CHECK: call ptr @_Znwm(i64 24)
define ptr @call_between(ptr %list, ptr %w) {
  call void @__defero_hint_neighbor(ptr %list, ptr %w)
  call void @other()
  %node = call ptr @_Znwm(i64 24)
  ret ptr %node
}

; A conditional branch between them: not fused.
; CHECK-LABEL: define ptr @branch_between(ptr %list, ptr %w, i1 %c)
; CHECK: call void @__defero_hint_neighbor(ptr %list, ptr %w)
; CHECK: call ptr @_Znwm(i64 24)
define ptr @branch_between(ptr %list, ptr %w, i1 %c) {
  call void @__defero_hint_neighbor(ptr %list, ptr %w)
  br i1 %c, label %a, label %b
a:
  %node = call ptr @_Znwm(i64 24)
  ret ptr %node
b:
  ret ptr null
}

; No operator new after the hint (the node came from elsewhere): unchanged.
; CHECK-LABEL: define void @no_new(ptr %list, ptr %w)
; CHECK: call void @__defero_hint_neighbor(ptr %list, ptr %w)
define void @no_new(ptr %list, ptr %w) {
  call void @__defero_hint_neighbor(ptr %list, ptr %w)
  ret void
}

; Another path into the join carried no hint (here: a loop's back edge):
; it passes kind 0, so that allocation stays unhinted.
; CHECK-LABEL: define void @other_path(ptr %list, ptr %w, i1 %again)
; CHECK: join:
; CHECK-NEXT: [[K:%.*]] = phi i32 [ 0, %join ], [ 1, %hint ], [ 0, %entry ]
; CHECK: call ptr %{{.*}}(i64 24, i32 [[K]],
define void @other_path(ptr %list, ptr %w, i1 %again) {
entry:
  %absent = icmp eq ptr @__defero_hint_neighbor, null
  br i1 %absent, label %join, label %hint
hint:
  call void @__defero_hint_neighbor(ptr %list, ptr %w)
  br label %join
join:
  %node = call ptr @_Znwm(i64 24)
  br i1 %again, label %join, label %done
done:
  ret void
}

; The runtime's entry is weak; the fallback is plain operator new.
; CHECK: declare extern_weak ptr @__defero_new_hinted(i64, i32, ptr, ptr, i32)
; CHECK-LABEL: define internal ptr @defero.new.fallback(i64 %0, i32 %1, ptr %2, ptr %3, i32 %4)
; CHECK-NEXT: entry:
; CHECK-NEXT: %5 = call ptr @_Znwm(i64 %0)
; CHECK-NEXT: ret ptr %5

