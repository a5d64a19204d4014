// Element types and reductions of the collective engine. Reductions run in
// rank order with a fixed blocking, so every rank computes bitwise-identical
// results run after run; float16/bfloat16 accumulate in float32.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace npudist::hccl {

enum class DType : uint32_t { kFloat = 1, kDouble, kHalf, kBFloat16, kInt8, kInt16, kInt32, kInt64, kUInt8, kBool };
enum class RedOp : uint32_t { kSum = 1, kAvg, kProduct, kMin, kMax, kPremulSum };

size_t elementSize(DType t);
const char* dtypeName(DType t);
const char* redopName(RedOp op);
bool isFloating(DType t);

// Maps a tensor dtype to the engine's; throws a clear error for the rest
// (complex tensors are viewed as real by c10d before they get here).
DType toDType(c10::ScalarType t);

// out[i] = ins[0][i] (op) ins[1][i] (op) ... for i < count, in that order.
// AVG divides the sum by `divisor`; PREMUL_SUM is a SUM here (the factor is
// applied when each rank's input is staged, see scaleCopy). `out` may alias
// any input at the same offset (every element is read before it is written).
void reduceInto(void* out, const void* const* ins, int nin, int64_t count, DType dtype, RedOp op, int divisor);

// reduceInto storing the result to each of outs[0..nout) in the same pass
// (zero-copy all_reduce writes a rank's slice into every rank's buffer):
// one read of each input per element instead of a reduction then copies.
// Each output may alias any input at the same offset.
void reduceIntoMany(void* const* outs, int nout, const void* const* ins, int nin, int64_t count, DType dtype, RedOp op,
                    int divisor);

// dst[i] = src[i] * factor (float types), for PREMUL_SUM staging.
void scaleCopy(void* dst, const void* src, int64_t count, DType dtype, double factor);

// Checks that (dtype, op) is supported; returns an error text or "".
std::string checkReduction(DType dtype, RedOp op);

}  // namespace npudist::hccl
