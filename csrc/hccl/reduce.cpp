// Hot loops: built with -O3 so the compiler vectorises them for the baseline
// x86-64 ISA (no -march=native: the binary must run on any x86-64 host).
#pragma GCC optimize("O3")

#include "hccl/reduce.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace npudist::hccl {

size_t elementSize(DType t) {
  switch (t) {
    case DType::kFloat: case DType::kInt32: return 4;
    case DType::kDouble: case DType::kInt64: return 8;
    case DType::kHalf: case DType::kBFloat16: case DType::kInt16: return 2;
    case DType::kInt8: case DType::kUInt8: case DType::kBool: return 1;
  }
  return 0;
}

const char* dtypeName(DType t) {
  switch (t) {
    case DType::kFloat: return "float32";
    case DType::kDouble: return "float64";
    case DType::kHalf: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt8: return "int8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kUInt8: return "uint8";
    case DType::kBool: return "bool";
  }
  return "?";
}

const char* redopName(RedOp op) {
  switch (op) {
    case RedOp::kSum: return "SUM";
    case RedOp::kAvg: return "AVG";
    case RedOp::kProduct: return "PRODUCT";
    case RedOp::kMin: return "MIN";
    case RedOp::kMax: return "MAX";
    case RedOp::kPremulSum: return "PREMUL_SUM";
  }
  return "?";
}

bool isFloating(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kHalf || t == DType::kBFloat16;
}

DType toDType(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: return DType::kFloat;
    case c10::kDouble: return DType::kDouble;
    case c10::kHalf: return DType::kHalf;
    case c10::kBFloat16: return DType::kBFloat16;
    case c10::kChar: return DType::kInt8;
    case c10::kShort: return DType::kInt16;
    case c10::kInt: return DType::kInt32;
    case c10::kLong: return DType::kInt64;
    case c10::kByte: return DType::kUInt8;
    case c10::kBool: return DType::kBool;
    default:
      TORCH_CHECK_TYPE(false, "hccl does not support tensors of dtype ", t,
                       "; supported: float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, bool "
                       "(complex tensors are reduced as their real view)");
  }
}

std::string checkReduction(DType dtype, RedOp op) {
  if ((op == RedOp::kAvg || op == RedOp::kPremulSum) && !isFloating(dtype)) {
    return std::string("ReduceOp.") + redopName(op) + " needs a floating-point tensor, got " + dtypeName(dtype) +
           " (use SUM and divide, or convert the tensor to float)";
  }
  return "";
}

namespace {

constexpr int64_t kBlock = 2048;  // elements per block: the accumulator stays in L1

template <typename T> struct Acc { using type = T; };
template <> struct Acc<c10::Half> { using type = float; };
template <> struct Acc<c10::BFloat16> { using type = float; };

// Integer sums wrap as in two's complement (no signed-overflow UB).
template <typename A> inline A addWrap(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return A(U(a) + U(b));
  } else {
    return a + b;
  }
}
template <typename A> inline A mulWrap(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return A(U(a) * U(b));
  } else {
    return a * b;
  }
}
// MIN/MAX propagate NaN, as torch.minimum/maximum do.
template <typename A> inline A minNan(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(a) || std::isnan(b)) return a + b;
  }
  return b < a ? b : a;
}
template <typename A> inline A maxNan(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(a) || std::isnan(b)) return a + b;
  }
  return b > a ? b : a;
}

// One pass per input after the first two: the first pass combines inputs 0
// and 1, the last one writes the output (scaled for AVG) as it adds the last
// input, so two ranks take a single pass (out = in0 op in1). The operations
// and their order are those of "acc = in0; acc op= in1; ...; out = acc", so
// results are bitwise the same whatever the number of passes.
template <typename T, typename F>
void reduceTyped(T* out, const void* const* ins, int nin, int64_t count, F op, bool average, int divisor) {
  using A = typename Acc<T>::type;
  const A d = A(divisor);
  if (nin == 2) {
    // `out` may alias an input at the same offset: element i is read before it is written.
    const T* a = static_cast<const T*>(ins[0]);
    const T* b = static_cast<const T*>(ins[1]);
    if (average) {
      for (int64_t i = 0; i < count; ++i) out[i] = T(op(A(a[i]), A(b[i])) / d);
    } else {
      for (int64_t i = 0; i < count; ++i) out[i] = T(op(A(a[i]), A(b[i])));
    }
    return;
  }
  A acc[kBlock];
  for (int64_t base = 0; base < count; base += kBlock) {
    const int64_t len = std::min(kBlock, count - base);
    const T* first = static_cast<const T*>(ins[0]) + base;
    T* o = out + base;
    if (nin == 1) {  // AVG of one rank
      for (int64_t i = 0; i < len; ++i) o[i] = average ? T(A(first[i]) / d) : first[i];
      continue;
    }
    const T* second = static_cast<const T*>(ins[1]) + base;
    for (int64_t i = 0; i < len; ++i) acc[i] = op(A(first[i]), A(second[i]));
    for (int r = 2; r < nin - 1; ++r) {
      const T* in = static_cast<const T*>(ins[r]) + base;
      for (int64_t i = 0; i < len; ++i) acc[i] = op(acc[i], A(in[i]));
    }
    const T* last = static_cast<const T*>(ins[nin - 1]) + base;
    if (average) {
      for (int64_t i = 0; i < len; ++i) o[i] = T(op(acc[i], A(last[i])) / d);
    } else {
      for (int64_t i = 0; i < len; ++i) o[i] = T(op(acc[i], A(last[i])));
    }
  }
}

template <typename T>
void reduceOp(void* out, const void* const* ins, int nin, int64_t count, RedOp op, int divisor) {
  using A = typename Acc<T>::type;
  T* o = static_cast<T*>(out);
  switch (op) {
    case RedOp::kSum:
    case RedOp::kPremulSum:
      return reduceTyped<T>(o, ins, nin, count, [](A a, A b) { return addWrap(a, b); }, false, 1);
    case RedOp::kAvg:
      return reduceTyped<T>(o, ins, nin, count, [](A a, A b) { return addWrap(a, b); }, true, divisor);
    case RedOp::kProduct:
      return reduceTyped<T>(o, ins, nin, count, [](A a, A b) { return mulWrap(a, b); }, false, 1);
    case RedOp::kMin:
      return reduceTyped<T>(o, ins, nin, count, [](A a, A b) { return minNan(a, b); }, false, 1);
    case RedOp::kMax:
      return reduceTyped<T>(o, ins, nin, count, [](A a, A b) { return maxNan(a, b); }, false, 1);
  }
}

// bool: SUM and MAX are logical or, PRODUCT and MIN logical and (as NCCL maps them).
void reduceBool(void* out, const void* const* ins, int nin, int64_t count, RedOp op) {
  const bool any = op == RedOp::kSum || op == RedOp::kMax;
  uint8_t* o = static_cast<uint8_t*>(out);
  for (int64_t base = 0; base < count; base += kBlock) {
    const int64_t len = std::min(kBlock, count - base);
    uint8_t acc[kBlock];
    const uint8_t* first = static_cast<const uint8_t*>(ins[0]) + base;
    for (int64_t i = 0; i < len; ++i) acc[i] = first[i] != 0;
    for (int r = 1; r < nin; ++r) {
      const uint8_t* in = static_cast<const uint8_t*>(ins[r]) + base;
      if (any) {
        for (int64_t i = 0; i < len; ++i) acc[i] = acc[i] | (in[i] != 0);
      } else {
        for (int64_t i = 0; i < len; ++i) acc[i] = acc[i] & (in[i] != 0);
      }
    }
    std::memcpy(o + base, acc, size_t(len));
  }
}

template <typename T> void scaleTyped(void* dst, const void* src, int64_t count, double factor) {
  using A = typename Acc<T>::type;
  const A f = A(factor);
  const T* s = static_cast<const T*>(src);
  T* d = static_cast<T*>(dst);
  for (int64_t i = 0; i < count; ++i) d[i] = T(A(s[i]) * f);
}

}  // namespace

void reduceInto(void* out, const void* const* ins, int nin, int64_t count, DType dtype, RedOp op, int divisor) {
  if (count <= 0) return;
  if (nin == 1 && op != RedOp::kAvg) {
    if (out != ins[0]) std::memcpy(out, ins[0], size_t(count) * elementSize(dtype));
    if (dtype == DType::kBool) reduceBool(out, ins, 1, count, op);  // normalise to 0/1
    return;
  }
  switch (dtype) {
    case DType::kFloat: return reduceOp<float>(out, ins, nin, count, op, divisor);
    case DType::kDouble: return reduceOp<double>(out, ins, nin, count, op, divisor);
    case DType::kHalf: return reduceOp<c10::Half>(out, ins, nin, count, op, divisor);
    case DType::kBFloat16: return reduceOp<c10::BFloat16>(out, ins, nin, count, op, divisor);
    case DType::kInt8: return reduceOp<int8_t>(out, ins, nin, count, op, divisor);
    case DType::kInt16: return reduceOp<int16_t>(out, ins, nin, count, op, divisor);
    case DType::kInt32: return reduceOp<int32_t>(out, ins, nin, count, op, divisor);
    case DType::kInt64: return reduceOp<int64_t>(out, ins, nin, count, op, divisor);
    case DType::kUInt8: return reduceOp<uint8_t>(out, ins, nin, count, op, divisor);
    case DType::kBool: return reduceBool(out, ins, nin, count, op);
  }
}

void scaleCopy(void* dst, const void* src, int64_t count, DType dtype, double factor) {
  switch (dtype) {
    case DType::kFloat: return scaleTyped<float>(dst, src, count, factor);
    case DType::kDouble: return scaleTyped<double>(dst, src, count, factor);
    case DType::kHalf: return scaleTyped<c10::Half>(dst, src, count, factor);
    case DType::kBFloat16: return scaleTyped<c10::BFloat16>(dst, src, count, factor);
    default: TORCH_CHECK(false, "PREMUL_SUM needs a floating-point tensor, got ", dtypeName(dtype));
  }
}

}  // namespace npudist::hccl
