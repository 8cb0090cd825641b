/* print.c - lowering of mo.print (ops.def) for the host and for SIMT
 * targets.
 *
 * Host: the kernel copies the operand into the result (llvm.memcpy) and
 * writes the line ir/interp_print.c writes, with dprintf on fd 2 (the
 * process's libc, resolved like libm), piece by piece: the label and the
 * run-time dims, then the first IR_PRINT_MAX_ELEMS elements in row-major
 * order with print_op.h's formats. The label is an argument of "%s", never a
 * format. The lowering does not call jit_split_range, so the wrapper runs
 * it whole in part 0 and the line is written once, in element order.
 * SIMT: the result is a copy of the operand, byte by byte over a grid-stride
 * loop; the kernel prints nothing (a device kernel has no stderr): the
 * device runtime writes the same line from the result's first elements once
 * the kernel has run (src/device_model.c, print_line).
 * Assumes a verified node (the result's type is the operand's). */
#include <stdio.h>

#include "../ir/print_op.h"
#include "lower.h"
#include "simt.h"

static LLVMValueRef dprintf_fn(jit_fn *f, LLVMTypeRef *ty) {
  LLVMTypeRef params[2] = {f->t_i32, f->t_ptr};
  *ty = LLVMFunctionType(f->t_i32, params, 2, 1);
  LLVMValueRef fn = LLVMGetNamedFunction(f->mod, "dprintf");
  return fn ? fn : LLVMAddFunction(f->mod, "dprintf", *ty);
}

/* dprintf(2, fmt, arg) (arg may be NULL: no argument) */
static void pr(jit_fn *f, const char *fmt, LLVMValueRef arg) {
  LLVMTypeRef ty;
  LLVMValueRef fn = dprintf_fn(f, &ty);
  LLVMValueRef args[3] = {LLVMConstInt(f->t_i32, 2, 0), LLVMBuildGlobalStringPtr(f->b, fmt, ""),
                          arg};
  LLVMBuildCall2(f->b, ty, fn, args, arg ? 3 : 2, "");
}

/* Element i of the operand as the argument of its format. */
static LLVMValueRef elem_arg(jit_fn *f, ir_dtype dt, LLVMValueRef i, LLVMValueRef t_str,
                             LLVMValueRef f_str) {
  LLVMValueRef v = jit_load(f, dt, jit_in(f, 0), i);
  if (dt == IR_DT_BOOL)
    return LLVMBuildSelect(f->b, v, t_str, f_str, "");
  if (ir_dtype_is_float(dt))
    return dt == IR_DT_F64 ? v : LLVMBuildFPExt(f->b, v, f->t_f64, "");
  if (ir_dtype_is_signed(dt))
    return LLVMBuildSExt(f->b, v, f->t_i64, "");
  return dt == IR_DT_UI64 ? v : LLVMBuildZExt(f->b, v, f->t_i64, "");
}

int jit_lower_print(jit_fn *f) {
  const ir_node *n = f->node;
  const ir_type *x = &n->in[0]->type;
  ir_dtype dt = x->dtype;
  size_t es = ir_dtype_size(dt);
  if (es == 0)
    return jit_fn_error(f, "mo.print: unknown dtype");
  LLVMValueRef total = jit_numel_range(f, x, 0, x->rank);
  LLVMBuildMemCpy(f->b, jit_out(f, 0), 1, jit_in(f, 0), 1,
                  LLVMBuildMul(f->b, total, jit_i64(f, (int64_t)es), ""));
  pr(f, "%s: tensor<[",
     LLVMBuildGlobalStringPtr(f->b, ir_node_attr_string(n, "label", "debug_tensor"), ""));
  for (int a = 0; a < x->rank; a++)
    pr(f, a ? ", %lld" : "%lld", jit_dim(f, x->dims[a]));
  char head[64];
  snprintf(head, sizeof head, "], %s> [", ir_dtype_name(dt));
  pr(f, head, NULL);
  const char *fmt = ir_print_elem_format(dt);
  LLVMValueRef zero = jit_i64(f, 0), cap = jit_i64(f, IR_PRINT_MAX_ELEMS);
  LLVMValueRef more = LLVMBuildICmp(f->b, LLVMIntSGT, total, cap, "");
  if (fmt) {
    LLVMValueRef shown = LLVMBuildSelect(f->b, more, cap, total, "");
    LLVMValueRef t_str = LLVMBuildGlobalStringPtr(f->b, "true", "");
    LLVMValueRef f_str = LLVMBuildGlobalStringPtr(f->b, "false", "");
    LLVMValueRef sep = LLVMBuildGlobalStringPtr(f->b, ", ", ""),
                 none = LLVMBuildGlobalStringPtr(f->b, "", "");
    jit_loop L;
    LLVMValueRef i = jit_loop_begin(f, &L, zero, shown, "i");
    pr(f, "%s", LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntEQ, i, zero, ""), none, sep, ""));
    pr(f, fmt, elem_arg(f, dt, i, t_str, f_str));
    jit_loop_end_rolled(f, &L);
  }
  jit_simt_if ib;
  jit_simt_if_begin(f, &ib, fmt ? more : LLVMBuildICmp(f->b, LLVMIntSGT, total, zero, ""));
  pr(f, fmt ? ", ..." : "...", NULL);
  jit_simt_if_end(f, &ib);
  pr(f, "]\n", NULL);
  return f->failed ? -1 : 0;
}

int jit_simt_lower_print(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_type *x = &f->node->in[0]->type;
  size_t es = ir_dtype_size(x->dtype);
  if (es == 0)
    return jit_fn_error(f, "mo.print: unknown dtype");
  LLVMValueRef bytes =
      LLVMBuildMul(f->b, jit_numel_range(f, x, 0, x->rank), jit_i64(f, (int64_t)es), "");
  jit_simt_loop l;
  LLVMValueRef i = jit_simt_grid_loop_begin(sf, &l, bytes);
  LLVMValueRef src = LLVMBuildGEP2(f->b, f->t_i8, jit_in(f, 0), &i, 1, "");
  LLVMValueRef dst = LLVMBuildGEP2(f->b, f->t_i8, jit_out(f, 0), &i, 1, "");
  LLVMBuildStore(f->b, LLVMBuildLoad2(f->b, f->t_i8, src, ""), dst);
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}
