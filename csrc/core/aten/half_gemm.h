// bf16 / fp16 GEMMs on npu with the NPU cube unit's numerics: inputs widened
// to fp32, one fp32 GEMM (the CPU's MKL/OpenBLAS sgemm through ATen), the
// result rounded once to the input dtype. Widening goes in blocks over the
// output's rows and columns (and batches), never over the contraction, so each
// element equals `op(a.float(), b.float()).to(dtype)` and no fp32 copy of a
// whole operand is kept beyond the kernel (docs/device_api.md, "Half precision").
// Exception: bf16 on CPUs with AVX512-BF16 runs PyTorch's native CPU bf16 GEMM
// (setHalfGemmNativeBf16 below), same numerics up to summation order.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <vector>

namespace npudist::core {

// bf16 or fp16: the dtypes the widening kernels (half_gemm, half_conv) take.
inline bool isHalfPrecision(c10::ScalarType t) { return t == c10::kBFloat16 || t == c10::kHalf; }

// Boxed npu kernel of every op in halfGemmOps(). Calls on bf16/fp16 npu
// tensors of one dtype take the widening path; everything else (other dtypes,
// mixed devices, overlapping out=, a capturing stream) goes to npuFallback,
// which gives PyTorch's CPU behaviour and errors.
void npuHalfGemm(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// "mm", "mm.out", "bmm", ..., the schema names npuHalfGemm is registered for.
const std::vector<const char*>& halfGemmOps();

// The fp32 workspace one kernel call may hold (bytes; default 16 MiB). Calls
// whose widened operands and result fit run as one fp32 op; larger ones are
// blocked (blocks of at least 64 rows and 64 columns, whatever the budget).
// Returns the previous value; values < 1 KiB are raised to 1 KiB.
int64_t setHalfGemmBlockBytes(int64_t bytes);
int64_t halfGemmBlockBytes();

// On by default. Off: bf16/fp16 GEMMs and convolutions run PyTorch's CPU
// half-precision kernels as before (benchmarks/half_precision.py measures the
// two side by side). Returns the previous value.
bool setHalfKernelsEnabled(bool on);
bool halfKernelsEnabled();

// bf16 GEMMs on a CPU with AVX512-BF16 (checked at run time) run PyTorch's CPU bf16 GEMM instead of
// widening: native bf16 products, fp32 accumulation, one rounding, as widening (the bits may differ
// from widening's in the last place: another summation order). Elsewhere, and for fp16, they widen.
// On by default; off makes every bf16 GEMM widen (bit-equal to the fp32 GEMM). Returns the previous
// value; halfGemmNativeBf16() says whether the native path is on and this CPU has it.
bool setHalfGemmNativeBf16(bool on);
bool halfGemmNativeBf16();

// Counts calls that took the widening path (tests check that an op reached it).
int64_t halfGemmCalls();

}  // namespace npudist::core
