// The interpreter: runs a program (expression_program.hpp) with one flat
// switch and no recursion, allocation or text. Every operation is the
// language's (docs/kernel-descriptors.md): exact 64-bit arithmetic that
// fails on overflow, C++ division, the functions' own checks. A failure
// returns at once with the instruction and the reason; what the message
// says is expression_diagnostics.cpp's.
#include <jitwarm/plugin.hpp>

#include "expression_program.hpp"
#include "launch_plan.hpp"

#include <algorithm>

namespace jitwarm::gpu::expr {
namespace {

using Reason = Failure::Reason;

int64_t threads_cap_of(int64_t cap, int64_t warp, int64_t limit) {
  return std::max(warp, std::min(cap, limit) / warp * warp);
}

// Whether scalar argument `s` can be stored in dtype `d` (fits_dtype).
bool fits_dtype(const jw_scalar& s, jw_dtype d) {
  if (s.kind == JW_SCALAR_FLOAT) {
    return d == JW_DTYPE_FLOAT32 || d == JW_DTYPE_FLOAT64;
  }
  if (d == JW_DTYPE_INT32) {
    return s.kind == JW_SCALAR_UINT
               ? s.value.u <= INT32_MAX
               : s.value.i >= INT32_MIN && s.value.i <= INT32_MAX;
  }
  if (d == JW_DTYPE_INT64) {
    return s.kind != JW_SCALAR_UINT ||
           s.value.u <= static_cast<uint64_t>(INT64_MAX);
  }
  return d == JW_DTYPE_FLOAT32 || d == JW_DTYPE_FLOAT64;
}

// A compile-scope integer parameter's spec; false for a scalar the key has
// as a float.
bool integer_spec(const jw_param_spec& s) {
  return s.kind == JW_PARAM_INT ||
         (s.kind == JW_PARAM_SCALAR && s.scalar_kind == JW_SCALAR_INT);
}
bool float_spec(const jw_param_spec& s) {
  return s.kind == JW_PARAM_FLOAT ||
         (s.kind == JW_PARAM_SCALAR && s.scalar_kind == JW_SCALAR_FLOAT);
}

}  // namespace

bool tensor_stride(const jw_tensor_meta& m, int64_t d, int64_t& value) {
  if ((m.flags & JW_TENSOR_HAS_STRIDES) != 0) {
    value = m.strides[d];
    return true;
  }
  int64_t stride = 1;
  for (auto k = static_cast<int64_t>(m.rank) - 1; k > d; --k) {
    if (__builtin_mul_overflow(stride, std::max<int64_t>(m.shape[k], 1),
                               &stride)) {
      return false;
    }
  }
  value = stride;
  return true;
}

bool run(std::span<const Instruction> code, const Inputs& in,
         std::span<int64_t> stack, Failure& failure) {
  // `top` points at the top of the stack (the compiler bounded its depth);
  // one flat switch, so a binary operator costs one dispatch, not two.
  int64_t* top = stack.data();  // stack[0] is never read
  const Instruction* const begin = code.data();
  const Instruction* pc = begin;
  const Instruction* const end = begin + code.size();
  // Read once: a store to a slot could otherwise be taken to change them.
  const jw_arg_value* const args = in.args.data();
  int64_t* const slots = in.slots;
  const int64_t warp = in.warp;
  const int64_t thread_limit = in.thread_limit;
  const auto fail = [&](const Instruction& i, Reason reason) {
    failure.at = static_cast<uint32_t>(&i - begin);
    failure.reason = reason;
    return false;
  };
  const auto spec = [&](const Instruction& i) -> const jw_param_spec& {
    return in.context->key->params[i.param];
  };
  // Compile scope reads the key's dtype, launch scope the argument's.
  const auto dtype_of = [&](uint32_t p) {
    const jw_compile_key_view* key = in.context->key;
    return key != nullptr ? key->params[p].dtype
                          : args[p].value.tensor->meta.dtype;
  };
  // Shape or stride `d` of parameter `i.param` into `value`, or false.
  const auto dimension = [&](const Instruction& i, bool shape, int64_t d,
                             int64_t& value) {
    const jw_tensor_meta& m = args[i.param].value.tensor->meta;
    if (tensor_dimension(m, shape, d, value)) return true;
    const bool rank = d < 0 || d >= static_cast<int64_t>(m.rank);
    return fail(i, rank ? Reason::rank : Reason::overflow);  // a stride's
  };
  while (pc != end) {
    const Instruction& i = *pc++;
    switch (i.op) {
      case pConst: *++top = i.value; break;
      case pLoad: *++top = slots[i.target]; break;
      case pLet: {
        const Context& c = *in.context;
        const std::size_t compile = c.compile_lets.size();
        const ExprSlot& let = i.target < compile
                                  ? c.compile_lets[i.target]
                                  : c.launch_lets[i.target - compile];
        *++top = i.value != 0 ? int64_t{let.boolean} : let.integer;
        break;
      }
      case pSpellingLet: return fail(i, Reason::spelling_let);
      case pIntParam: {
        const jw_scalar& s = args[i.param].value.scalar;
        if (s.kind == JW_SCALAR_INT || s.kind == JW_SCALAR_BOOL) {
          *++top = s.value.i;
        } else if (s.kind != JW_SCALAR_UINT) {
          return fail(i, Reason::not_an_integer);
        } else if (s.value.u > static_cast<uint64_t>(INT64_MAX)) {
          return fail(i, Reason::value_too_large);
        } else {
          *++top = static_cast<int64_t>(s.value.u);
        }
        break;
      }
      case pConstexpr: {
        const jw_scalar& v = spec(i).constexpr_value;
        if (v.kind == JW_SCALAR_UINT &&
            v.value.u > static_cast<uint64_t>(INT64_MAX)) {
          return fail(i, Reason::value_too_large);
        }
        if (v.kind == JW_SCALAR_FLOAT) return fail(i, Reason::float_constexpr);
        *++top = v.kind == JW_SCALAR_UINT ? static_cast<int64_t>(v.value.u)
                                          : v.value.i;
        break;
      }
      case pShapeAt:
      case pStrideAt:
        ++top;
        if (!dimension(i, i.op == pShapeAt, i.value, *top)) return false;
        break;
      case pShape:
      case pStride:
        if (!dimension(i, i.op == pShape, *top, *top)) return false;
        break;
      case pDtypeBytes:
        *++top = static_cast<int64_t>(plugin::dtype_size(dtype_of(i.param)));
        break;
      case pIsDtype: *++top = dtype_of(i.param) == i.value; break;
      case pFitsDtype:
      case pFitsArgDtype:
        *++top = fits_dtype(args[i.param].value.scalar,
                            i.op == pFitsDtype ? static_cast<jw_dtype>(i.value)
                                               : dtype_of(i.target));
        break;
      case pWarpSize: *++top = warp; break;
      case pSmCount: *++top = in.context->limits->multiprocessor_count; break;
      case pMaxThreads:
        *++top = in.context->limits->max_threads_per_block;
        break;
      case pMaxGridX: *++top = in.context->limits->max_grid.x; break;
      case pMaxGridY: *++top = in.context->limits->max_grid.y; break;
      case pMaxGridZ: *++top = in.context->limits->max_grid.z; break;
      case pAligned: *++top = spec(i).alignment == JW_ALIGN_16; break;
      case pScalarIsFloat:
        *++top = spec(i).scalar_kind == JW_SCALAR_FLOAT;
        break;
      case pIntClass:
      case pDiv16:
      case pIsOne: {
        if (!integer_spec(spec(i))) return fail(i, Reason::not_integer_in_key);
        const jw_int_class c = spec(i).int_spec.value_class;
        *++top = i.op == pIntClass ? int64_t{c}
                 : i.op == pDiv16  ? c == JW_INT_CLASS_DIV16
                                   : c == JW_INT_CLASS_ONE;
        break;
      }
      case pElement:
      case pStorage:
        *++top = spelling_code(
            i.op == pElement ? Spelling::element : Spelling::storage,
            spec(i).dtype);
        break;
      case pIntType:
        if (!integer_spec(spec(i))) return fail(i, Reason::not_integer_in_key);
        *++top = spelling_code(Spelling::int_type, spec(i).int_spec.type);
        break;
      case pFloatType:
        if (!float_spec(spec(i))) return fail(i, Reason::not_float_in_key);
        *++top = spelling_code(Spelling::float_type, spec(i).float_type);
        break;
      case pNegate:
        if (*top == INT64_MIN) return fail(i, Reason::overflow);
        *top = -*top;
        break;
      case pNot: *top = *top == 0 ? 1 : 0; break;
      // Short-circuit: a top that decides the result (false for and, true
      // for or) stays and skips the right side; else it is popped.
      case pAndJump:
      case pOrJump:
        if ((*top != 0) == (i.op == pOrJump)) {
          pc = &i + i.target;
        } else {
          --top;
        }
        break;
      case pJumpIfFalse:
        if (*top-- == 0) pc = &i + i.target;
        break;
      case pJump: pc = &i + i.target; break;
      case pStore: slots[i.target] = *top--; break;
      case pRequire:
        if (*top-- == 0) return fail(i, Reason::check);
        break;
      case pNextPow2: {
        int64_t p = 1;
        while (p < *top) {
          if (p > INT64_MAX / 2) return fail(i, Reason::overflows);
          p *= 2;
        }
        *top = p;
        break;
      }
      case pThreadsCap: *top = threads_cap_of(*top, warp, thread_limit); break;
      case pLanesFor: {
        int64_t lanes = 1;
        while (lanes < *top && lanes < warp) lanes *= 2;
        *top = lanes;
        break;
      }
      case pClampBounds:
        if (top[-1] > top[0]) return fail(i, Reason::bounds_cross);
        break;
      case pClamp: {
        const int64_t x = *top--;
        const int64_t hi = *top--;
        *top = std::clamp(x, *top, hi);
        break;
      }
      // The binary operators: b on top, a below it; the result replaces a.
      case pAdd:
        --top;
        if (__builtin_add_overflow(top[0], top[1], top)) {
          return fail(i, Reason::overflow);
        }
        break;
      case pSub:
        --top;
        if (__builtin_sub_overflow(top[0], top[1], top)) {
          return fail(i, Reason::overflow);
        }
        break;
      case pMul:
        --top;
        if (__builtin_mul_overflow(top[0], top[1], top)) {
          return fail(i, Reason::overflow);
        }
        break;
      case pDiv:
      case pMod: {
        const int64_t b = *top--;
        int64_t& a = *top;
        if (b == 0) return fail(i, Reason::divides_by_zero);
        if (b == -1) {  // INT64_MIN / -1 overflows; any x % -1 is 0
          if (i.op == pMod) {
            a = 0;
          } else if (a == INT64_MIN) {
            return fail(i, Reason::overflow);
          } else {
            a = -a;
          }
        } else {
          a = i.op == pDiv ? a / b : a % b;
        }
        break;
      }
      case pEq:
        --top;
        top[0] = top[0] == top[1];
        break;
      case pNe:
        --top;
        top[0] = top[0] != top[1];
        break;
      case pLt:
        --top;
        top[0] = top[0] < top[1];
        break;
      case pLe:
        --top;
        top[0] = top[0] <= top[1];
        break;
      case pGt:
        --top;
        top[0] = top[0] > top[1];
        break;
      case pGe:
        --top;
        top[0] = top[0] >= top[1];
        break;
      case pMin:
        --top;
        top[0] = std::min(top[0], top[1]);
        break;
      case pMax:
        --top;
        top[0] = std::max(top[0], top[1]);
        break;
      case pCeilDiv:
      case pRoundUp: {
        const int64_t b = *top--;
        int64_t& a = *top;
        if (b <= 0) return fail(i, Reason::divisor);
        if (a < 0) return fail(i, Reason::negative_count);
        const int64_t q = a / b + (a % b != 0);
        if (i.op == pCeilDiv) {
          a = q;
        } else if (__builtin_mul_overflow(q, b, &a)) {
          return fail(i, Reason::overflow);
        }
        break;
      }
      case pAccessesFit:
        if (std::max<int64_t>(*top, 1) > INT64_MAX - warp) {
          return fail(i, Reason::overflows);
        }
        break;
      case pBlockThreads: {
        // a = accesses, b = cap (block_threads(accesses, cap)).
        const int64_t b = *top--;
        int64_t& a = *top;
        const int64_t w = warp;
        const int64_t accesses = std::max<int64_t>(a, 1);
        if (accesses > INT64_MAX - w) return fail(i, Reason::overflows);
        const int64_t wanted = (accesses + w - 1) / w * w;
        a = std::clamp(wanted, w, threads_cap_of(b, w, thread_limit));
        break;
      }
      default: __builtin_unreachable();  // the compiler's opcodes only
    }
  }
  return true;
}

}  // namespace jitwarm::gpu::expr
