// bf16 building blocks for CPUs with AVX512-BF16 (vdpbf16ps: bf16 pairs
// multiplied and summed into fp32 lanes), chosen at run time: the kernels
// are compiled for that ISA with function target attributes in an otherwise
// portable unit, and may only be called when bf16SimdAvailable() says so.
// Used by the native bf16 attention kernels (attention_bf16.h).
//
// Layouts (bf16 values as uint16_t bits, fp32 as float):
//  - "row-major A": A[i][k] at A[i*lda + k]; K even, lda even, so each (k, k+1)
//    pair is one aligned 32-bit word.
//  - "VNNI B": the K x N matrix B as 32-bit words Bp[(k/2)*ldb + n] holding
//    (B[k][n], B[k+1][n]) (low half first); ldb is a multiple of 16 and the
//    words of columns N..roundup(N,16) are zero.
#pragma once

#include <cstdint>

namespace npudist::core::bf16simd {

// True when this CPU has AVX512F/BW/VL/DQ and AVX512-BF16 (read once, from
// ATen's cpuinfo-backed at::cpu::get_cpu_capabilities()).
bool available();

// True when this CPU has AVX512F/BW/VL/DQ (the fp32 row operations below need no more).
bool avx512();

inline int64_t roundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// C[M x roundup(N,16)] (+)= A[M x K] * B: row-major bf16 A, VNNI bf16 B, fp32 C
// (ldc >= roundup(N,16); the padding columns receive A * 0). K even. fp32
// accumulation (each pair product summed in fp32, as vdpbf16ps does).
void gemm(int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda, const uint32_t* Bp, int64_t ldb, float* C,
          int64_t ldc, bool accumulate);

// VNNI B from X^T, X being N x K row-major (ldx even, K even): out[(k/2)*ldo + n] = (X[n][k], X[n][k+1]).
void packTransposed(const uint16_t* X, int64_t ldx, int64_t N, int64_t K, uint32_t* out, int64_t ldo);
// VNNI B from X, X being R x N row-major: out[(r/2)*ldo + n] = (X[r][n], X[r+1][n]); a missing row R (R odd) is 0.
void packRowPairs(const uint16_t* X, int64_t ldx, int64_t R, int64_t N, uint32_t* out, int64_t ldo);
// out[n][r] = X[r][n] (out is N x roundup(R,2), row stride ldo; a padding column is 0): a row-major A of X^T.
void transpose(const uint16_t* X, int64_t ldx, int64_t R, int64_t N, uint16_t* out, int64_t ldo);

// Row operations on fp32 score rows (AVX-512 exp, max, sum).
// s[0..n) = s * scale (+ bias[0..n) widened from bf16 when bias is not null); returns the max (-inf when n == 0).
float scaleBiasMax(float* s, int64_t n, float scale, const uint16_t* bias);
// p[0..n) = bf16(exp(s - ref)), p[n..n_pad) = 0; returns the fp32 sum of the exps.
float expToBf16(const float* s, int64_t n, int64_t n_pad, float ref, uint16_t* p);
// x[0..n) *= a (needs avx512() only).
void scale(float* x, int64_t n, float a);
// out[0..n) = bf16(x * a).
void scaleToBf16(const float* x, int64_t n, float a, uint16_t* out);
// sum_i a[i] * b[i] over bf16 vectors, in fp32.
float dot(const uint16_t* a, const uint16_t* b, int64_t n);
// out[n][r] = bf16(X[r][n] * a) for the R x N fp32 matrix X (row stride ldx); out row stride ldo.
void transposeToBf16(const float* X, int64_t ldx, int64_t R, int64_t N, float a, uint16_t* out, int64_t ldo);

// fp32 rows (need avx512() only): the widening kernels' fused softmax steps.
// max of s[0..n) (-inf when n == 0).
float rowMax(const float* s, int64_t n);
// s[0..n) = exp(s - ref) in place; returns the sum.
float expSum(float* s, int64_t n, float ref);
// p[0..n) = exp(p - lse); dp[0..n) = p * (dp - delta).
void expGrad(float* p, float* dp, int64_t n, float lse, float delta);

// Backward's element-wise step for two query rows r0, r1 of a block (r1 may be absent: s1 == nullptr):
// p = exp(s * scale + bias - lse) over the row's first `valid` keys (0 after), ds = p * (dp - delta).
// Writes p and ds as one VNNI row-pair word row (n_pad words, zero after valid) and ds as two
// row-major bf16 rows of n_pad2 = roundup(n, 2) elements.
struct BackwardRow {
  const float* s = nullptr;
  const float* dp = nullptr;
  const uint16_t* bias = nullptr;
  int64_t valid = 0;
  float lse = 0.f, delta = 0.f;
  uint16_t* ds_row = nullptr;
};
void backwardRowPair(const BackwardRow& r0, const BackwardRow& r1, int64_t n_pad, int64_t n_pad2, float scale,
                     uint32_t* p_vnni, uint32_t* ds_vnni);

}  // namespace npudist::core::bf16simd
