; The pass lowers clang's annotate("defero.policy", predicate, K) - what the
; Clang plugin makes of [[defero::policy]] - into guarded calls of
; __defero_container_policy. Other annotations are left alone, and a field
; annotation that does not feed a constructor (a plain access) is not
; lowered.
; RUN: %opt -load-pass-plugin=%shlibdir/DeferoPlugin%shlibext -passes=defero-hints -S %s -o - | FileCheck %s

@.str = private unnamed_addr constant [14 x i8] c"defero.policy\00", section "llvm.metadata"
@.file = private unnamed_addr constant [6 x i8] c"t.cpp\00", section "llvm.metadata"
@.other = private unnamed_addr constant [6 x i8] c"other\00", section "llvm.metadata"
@.best = private unnamed_addr constant [5 x i8] c"best\00", section "llvm.metadata"
@.path = private unnamed_addr constant [5 x i8] c"path\00", section "llvm.metadata"
@.args.best12 = private unnamed_addr constant { ptr, i32 } { ptr @.best, i32 12 }, section "llvm.metadata"
@.args.path0 = private unnamed_addr constant { ptr, i32 } { ptr @.path, i32 0 }, section "llvm.metadata"
@g = global [48 x i8] zeroinitializer
@h = global [48 x i8] zeroinitializer
@llvm.global.annotations = appending global [2 x { ptr, ptr, ptr, i32, ptr }] [
  { ptr, ptr, ptr, i32, ptr } { ptr @g, ptr @.str, ptr @.file, i32 3, ptr @.args.path0 },
  { ptr, ptr, ptr, i32, ptr } { ptr @h, ptr @.other, ptr @.file, i32 4, ptr @.args.path0 }], section "llvm.metadata"

; CHECK-DAG: @llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 101, ptr @defero.policy.init, ptr null }]
; CHECK-DAG: @defero.policy.best = private unnamed_addr constant [5 x i8] c"best\00"
; CHECK-DAG: @defero.policy.path = private unnamed_addr constant [5 x i8] c"path\00"

declare void @llvm.var.annotation.p0.p0(ptr, ptr, ptr, i32, ptr)
declare ptr @llvm.ptr.annotation.p0.p0(ptr, ptr, ptr, i32, ptr)
declare void @_ZNSt3setIiSt4lessIiESaIiEEC2Ev(ptr)
declare void @use(ptr)

; CHECK-LABEL: define void @local()
; CHECK: %s = alloca [48 x i8]
; CHECK: call void @llvm.var.annotation.p0.p0(ptr %s, ptr @.str,
; CHECK: %defero.runtime = icmp ne ptr @__defero_container_policy, null
; CHECK: call void @__defero_container_policy(ptr %s, ptr @defero.policy.best, i32 12)
; CHECK: call void @_ZNSt3setIiSt4lessIiESaIiEEC2Ev(ptr %s)
; CHECK-NOT: __defero_container_policy
; CHECK: ret void
define void @local() {
  %s = alloca [48 x i8]
  %o = alloca [48 x i8]
  call void @llvm.var.annotation.p0.p0(ptr %s, ptr @.str, ptr @.file, i32 7, ptr @.args.best12)
  call void @llvm.var.annotation.p0.p0(ptr %o, ptr @.other, ptr @.file, i32 8, ptr @.args.best12)
  call void @_ZNSt3setIiSt4lessIiESaIiEEC2Ev(ptr %s)
  call void @_ZNSt3setIiSt4lessIiESaIiEEC2Ev(ptr %o)
  ret void
}

; CHECK-LABEL: define void @_ZN6HolderC2Ev(ptr %this)
; CHECK: %f = call ptr @llvm.ptr.annotation.p0.p0(ptr %this, ptr @.str,
; CHECK: call void @__defero_container_policy(ptr %f, ptr @defero.policy.path, i32 0)
; CHECK: call void @_ZNSt3setIiSt4lessIiESaIiEEC2Ev(ptr %f)
define void @_ZN6HolderC2Ev(ptr %this) {
  %f = call ptr @llvm.ptr.annotation.p0.p0(ptr %this, ptr @.str, ptr @.file, i32 9, ptr @.args.path0)
  call void @_ZNSt3setIiSt4lessIiESaIiEEC2Ev(ptr %f)
  ret void
}

; CHECK-LABEL: define void @access(ptr %this)
; CHECK-NOT: __defero_container_policy
; CHECK: ret void
define void @access(ptr %this) {
  %f = call ptr @llvm.ptr.annotation.p0.p0(ptr %this, ptr @.str, ptr @.file, i32 9, ptr @.args.path0)
  call void @use(ptr %f)
  ret void
}

; Only @g: @h's annotation is not Defero's.
; CHECK-LABEL: define internal void @defero.policy.init()
; CHECK: call void @__defero_container_policy(ptr @g, ptr @defero.policy.path, i32 0)
; CHECK-NOT: call void @__defero_container_policy
; CHECK: ret void
