// Hot loops: built with -O3 so the compiler vectorises them, for the baseline
// x86-64 ISA and again for AVX2 chosen at run time (no -march=native: the
// binary must run on any x86-64 host). Copy loops stay vector loops
// (no-tree-loop-distribute-patterns): turned into memcpy calls they were
// expanded inline as `rep movsq`, which took half the reduction's time.
#pragma GCC optimize("O3", "no-tree-loop-distribute-patterns")

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
    case DType::kFloat:
    case DType::kInt32:
      return 4;
    case DType::kDouble:
    case DType::kInt64:
      return 8;
    case DType::kHalf:
    case DType::kBFloat16:
    case DType::kInt16:
      return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool:
      return 1;
  }
  return 0;
}

const char* dtypeName(DType t) {
  switch (t) {
    case DType::kFloat:
      return "float32";
    case DType::kDouble:
      return "float64";
    case DType::kHalf:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kInt8:
      return "int8";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kUInt8:
      return "uint8";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

const char* redopName(RedOp op) {
  switch (op) {
    case RedOp::kSum:
      return "SUM";
    case RedOp::kAvg:
      return "AVG";
    case RedOp::kProduct:
      return "PRODUCT";
    case RedOp::kMin:
      return "MIN";
    case RedOp::kMax:
      return "MAX";
    case RedOp::kPremulSum:
      return "PREMUL_SUM";
  }
  return "?";
}

bool isFloating(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kHalf || t == DType::kBFloat16;
}

DType toDType(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat:
      return DType::kFloat;
    case c10::kDouble:
      return DType::kDouble;
    case c10::kHalf:
      return DType::kHalf;
    case c10::kBFloat16:
      return DType::kBFloat16;
    case c10::kChar:
      return DType::kInt8;
    case c10::kShort:
      return DType::kInt16;
    case c10::kInt:
      return DType::kInt32;
    case c10::kLong:
      return DType::kInt64;
    case c10::kByte:
      return DType::kUInt8;
    case c10::kBool:
      return DType::kBool;
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

#define NPUDIST_HOT inline __attribute__((always_inline))

constexpr int64_t kBlock = 1024;  // elements per block of the n-input path: the accumulator stays in L1

template <typename T>
struct Acc {
  using type = T;
};
template <>
struct Acc<c10::Half> {
  using type = float;
};
template <>
struct Acc<c10::BFloat16> {
  using type = float;
};

// Integer sums wrap as in two's complement (no signed-overflow UB).
template <typename A>
NPUDIST_HOT A addWrap(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return A(U(a) + U(b));
  } else {
    return a + b;
  }
}
template <typename A>
NPUDIST_HOT A mulWrap(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return A(U(a) * U(b));
  } else {
    return a * b;
  }
}
// MIN/MAX propagate NaN, as torch.minimum/maximum do.
template <typename A>
NPUDIST_HOT A minNan(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(a) || std::isnan(b)) return a + b;
  }
  return b < a ? b : a;
}
template <typename A>
NPUDIST_HOT A maxNan(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(a) || std::isnan(b)) return a + b;
  }
  return b > a ? b : a;
}
struct AddOp {
  template <typename A>
  NPUDIST_HOT A operator()(A a, A b) const {
    return addWrap(a, b);
  }
};
struct MulOp {
  template <typename A>
  NPUDIST_HOT A operator()(A a, A b) const {
    return mulWrap(a, b);
  }
};
struct MinOp {
  template <typename A>
  NPUDIST_HOT A operator()(A a, A b) const {
    return minNan(a, b);
  }
};
struct MaxOp {
  template <typename A>
  NPUDIST_HOT A operator()(A a, A b) const {
    return maxNan(a, b);
  }
};

// The value stored: AVG divides the rank-order sum once, at the end.
template <typename T, bool kAvg, typename A>
NPUDIST_HOT T finish(A v, A d) {
  return T(kAvg ? v / d : v);
}

// Two inputs (two ranks): one pass, each element read once from each input
// and its result stored straight to every output (no accumulator round
// trip: in-place buffers stay in cache). Outputs may be the inputs.
template <typename T, typename F, bool kAvg>
NPUDIST_HOT void reduce2(T* const* outs, int nout, const void* const* ins, int64_t count, F op, int divisor) {
  using A = typename Acc<T>::type;
  const A d = A(divisor);
  const T* a = static_cast<const T*>(ins[0]);
  const T* b = static_cast<const T*>(ins[1]);
  if (nout == 1) {
    T* o = outs[0];
    for (int64_t i = 0; i < count; ++i) o[i] = finish<T, kAvg>(op(A(a[i]), A(b[i])), d);
  } else if (nout == 2) {
    T* o0 = outs[0];
    T* o1 = outs[1];
    for (int64_t i = 0; i < count; ++i) {
      const T v = finish<T, kAvg>(op(A(a[i]), A(b[i])), d);
      o0[i] = v;
      o1[i] = v;
    }
  } else {
    for (int64_t i = 0; i < count; ++i) {
      const T v = finish<T, kAvg>(op(A(a[i]), A(b[i])), d);
      for (int k = 0; k < nout; ++k) outs[k][i] = v;
    }
  }
}

// Any number of inputs: block by block, the inputs folded in rank order into
// an accumulator in L1 (the first two combined in one pass), then stored to
// every output. Each block is read whole before it is written.
template <typename T, typename F, bool kAvg>
NPUDIST_HOT void reduceN(T* const* outs, int nout, const void* const* ins, int nin, int64_t count, F op, int divisor) {
  using A = typename Acc<T>::type;
  const A d = A(divisor);
  alignas(64) A acc[kBlock];
  for (int64_t base = 0; base < count; base += kBlock) {
    const int64_t len = std::min(kBlock, count - base);
    const T* first = static_cast<const T*>(ins[0]) + base;
    if (nin == 1) {
      for (int64_t i = 0; i < len; ++i) acc[i] = A(first[i]);
    } else {
      const T* second = static_cast<const T*>(ins[1]) + base;
      for (int64_t i = 0; i < len; ++i) acc[i] = op(A(first[i]), A(second[i]));
    }
    for (int r = 2; r < nin; ++r) {
      const T* in = static_cast<const T*>(ins[r]) + base;
      for (int64_t i = 0; i < len; ++i) acc[i] = op(acc[i], A(in[i]));
    }
    for (int k = 0; k < nout; ++k) {
      T* o = outs[k] + base;
      for (int64_t i = 0; i < len; ++i) o[i] = finish<T, kAvg>(acc[i], d);
    }
  }
}

template <typename T, typename F, bool kAvg = false>
NPUDIST_HOT void reduceWith(T* const* outs, int nout, const void* const* ins, int nin, int64_t count, F op,
                            int divisor) {
  if (nin == 2) return reduce2<T, F, kAvg>(outs, nout, ins, count, op, divisor);
  reduceN<T, F, kAvg>(outs, nout, ins, nin, count, op, divisor);
}

template <typename T>
NPUDIST_HOT void reduceOp(void* const* outs, int nout, const void* const* ins, int nin, int64_t count, RedOp op,
                          int divisor) {
  T* const* o = reinterpret_cast<T* const*>(outs);
  switch (op) {
    case RedOp::kSum:
    case RedOp::kPremulSum:
      return reduceWith<T>(o, nout, ins, nin, count, AddOp{}, 1);
    case RedOp::kAvg:
      return reduceWith<T, AddOp, true>(o, nout, ins, nin, count, AddOp{}, divisor);
    case RedOp::kProduct:
      return reduceWith<T>(o, nout, ins, nin, count, MulOp{}, 1);
    case RedOp::kMin:
      return reduceWith<T>(o, nout, ins, nin, count, MinOp{}, 1);
    case RedOp::kMax:
      return reduceWith<T>(o, nout, ins, nin, count, MaxOp{}, 1);
  }
}

// The same loops compiled twice: for the baseline x86-64 ISA and for AVX2,
// chosen at run time (the binary still runs on any x86-64; no -march=native).
// Every operation is element-wise IEEE arithmetic with no contraction, so
// both versions give the same bits (and every rank the same results).
template <typename T>
void reduceBaseline(void* const* outs, int nout, const void* const* ins, int nin, int64_t count, RedOp op,
                    int divisor) {
  reduceOp<T>(outs, nout, ins, nin, count, op, divisor);
}
#if defined(__x86_64__) && defined(__GNUC__)
#define NPUDIST_HAVE_AVX2_PATH 1
template <typename T>
__attribute__((target("avx2"))) void reduceAvx2(void* const* outs, int nout, const void* const* ins, int nin,
                                                int64_t count, RedOp op, int divisor) {
  reduceOp<T>(outs, nout, ins, nin, count, op, divisor);
}
bool haveAvx2() {
  static const bool v = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return v;
}
// And for AVX-512 (512-bit vectors), used for float16/bfloat16: twice the
// elements per instruction of AVX2 for their conversions to and from
// float32, which take several integer operations per vector.
template <typename T>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,prefer-vector-width=512"))) void reduceAvx512(
    void* const* outs, int nout, const void* const* ins, int nin, int64_t count, RedOp op, int divisor) {
  reduceOp<T>(outs, nout, ins, nin, count, op, divisor);
}
bool haveAvx512() {
  static const bool v = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }();
  return v;
}
#endif

template <typename T>
void reduceDispatch(void* const* outs, int nout, const void* const* ins, int nin, int64_t count, RedOp op,
                    int divisor) {
#ifdef NPUDIST_HAVE_AVX2_PATH
  // 16-bit floats only: measured (benchmarks/reduce_loops.py), float32 gains
  // nothing in L1 from 512-bit vectors, bfloat16 ~1.4x.
  if constexpr (std::is_same_v<T, c10::BFloat16> || std::is_same_v<T, c10::Half>) {
    if (haveAvx512()) return reduceAvx512<T>(outs, nout, ins, nin, count, op, divisor);
  }
  if (haveAvx2()) return reduceAvx2<T>(outs, nout, ins, nin, count, op, divisor);
#endif
  reduceBaseline<T>(outs, nout, ins, nin, count, op, divisor);
}

// bool: SUM and MAX are logical or, PRODUCT and MIN logical and (as NCCL maps them).
void reduceBool(void* const* outs, int nout, const void* const* ins, int nin, int64_t count, RedOp op) {
  const bool any = op == RedOp::kSum || op == RedOp::kMax;
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
    for (int k = 0; k < nout; ++k) std::memcpy(static_cast<uint8_t*>(outs[k]) + base, acc, size_t(len));
  }
}

template <typename T>
void scaleTyped(void* dst, const void* src, int64_t count, double factor) {
  using A = typename Acc<T>::type;
  const A f = A(factor);
  const T* s = static_cast<const T*>(src);
  T* d = static_cast<T*>(dst);
  for (int64_t i = 0; i < count; ++i) d[i] = T(A(s[i]) * f);
}

}  // namespace

void reduceIntoMany(void* const* outs, int nout, const void* const* ins, int nin, int64_t count, DType dtype, RedOp op,
                    int divisor) {
  if (count <= 0 || nout <= 0) return;
  if (nin == 1 && op != RedOp::kAvg && dtype != DType::kBool) {
    for (int k = 0; k < nout; ++k)
      if (outs[k] != ins[0]) std::memcpy(outs[k], ins[0], size_t(count) * elementSize(dtype));
    return;
  }
  switch (dtype) {
    case DType::kFloat:
      return reduceDispatch<float>(outs, nout, ins, nin, count, op, divisor);
    case DType::kDouble:
      return reduceDispatch<double>(outs, nout, ins, nin, count, op, divisor);
    case DType::kHalf:
      return reduceDispatch<c10::Half>(outs, nout, ins, nin, count, op, divisor);
    case DType::kBFloat16:
      return reduceDispatch<c10::BFloat16>(outs, nout, ins, nin, count, op, divisor);
    case DType::kInt8:
      return reduceDispatch<int8_t>(outs, nout, ins, nin, count, op, divisor);
    case DType::kInt16:
      return reduceDispatch<int16_t>(outs, nout, ins, nin, count, op, divisor);
    case DType::kInt32:
      return reduceDispatch<int32_t>(outs, nout, ins, nin, count, op, divisor);
    case DType::kInt64:
      return reduceDispatch<int64_t>(outs, nout, ins, nin, count, op, divisor);
    case DType::kUInt8:
      return reduceDispatch<uint8_t>(outs, nout, ins, nin, count, op, divisor);
    case DType::kBool:
      return reduceBool(outs, nout, ins, nin, count, op);  // also normalises one input to 0/1
  }
}

void reduceInto(void* out, const void* const* ins, int nin, int64_t count, DType dtype, RedOp op, int divisor) {
  reduceIntoMany(&out, 1, ins, nin, count, dtype, op, divisor);
}

void scaleCopy(void* dst, const void* src, int64_t count, DType dtype, double factor) {
  switch (dtype) {
    case DType::kFloat:
      return scaleTyped<float>(dst, src, count, factor);
    case DType::kDouble:
      return scaleTyped<double>(dst, src, count, factor);
    case DType::kHalf:
      return scaleTyped<c10::Half>(dst, src, count, factor);
    case DType::kBFloat16:
      return scaleTyped<c10::BFloat16>(dst, src, count, factor);
    default:
      TORCH_CHECK(false, "PREMUL_SUM needs a floating-point tensor, got ", dtypeName(dtype));
  }
}

}  // namespace npudist::hccl
