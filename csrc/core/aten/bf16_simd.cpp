#include "core/aten/bf16_simd.h"

#include <ATen/cpu/Utils.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define NPU_HAVE_X86_SIMD 1
#else
#define NPU_HAVE_X86_SIMD 0
#endif

// Only functions marked NPU_AVX512 use AVX-512 (this unit is compiled for the baseline ISA, so the
// inline code it shares with the rest of the library stays baseline); callers check available().
#define NPU_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))
#define NPU_AVX512F __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

#if NPU_HAVE_X86_SIMD
namespace npudist::core::bf16simd {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

inline uint32_t word(const uint16_t* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof(w));
  return w;
}

inline uint16_t toBf16(float x) {  // round to nearest even, as vcvtneps2bf16 (NaN kept quiet)
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

NPU_AVX512F inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u);
}

// exp over 16 lanes: 2^n * p(r) with x = n ln2 + r, |r| <= ln2/2, p the degree-6 Taylor polynomial
// (relative error ~1e-7); inputs below -104 give 0 (also -inf), above 88.7 give ~2^128 (inf after scaling).
NPU_AVX512F inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.7f)), _mm512_set1_ps(-104.f));
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);  // ln2 split in two for precision
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-6f), r);
  __m512 p = _mm512_set1_ps(1.f / 720.f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, n);
}

NPU_AVX512 inline __m512 loadBf16(const uint16_t* p, __mmask16 m) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

NPU_AVX512 inline __m256i bf16Of(__m512 x) { return (__m256i)_mm512_cvtneps_pbh(x); }

// 16 words (a[i], b[i]) from two rows' bf16 values.
NPU_AVX512 inline __m512i interleave(__m256i a, __m256i b) {
  return _mm512_or_si512(_mm512_cvtepu16_epi32(a), _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
}

// The register tile: MR rows x NR 16-float vectors of C, over kc k-pairs.
template <int MR, int NR>
NPU_AVX512 void micro(int64_t kc, const uint16_t* A, int64_t lda, const uint32_t* Bp, int64_t ldb, float* C,
                      int64_t ldc, bool load_c) {
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) acc[i][j] = load_c ? _mm512_loadu_ps(C + i * ldc + 16 * j) : _mm512_setzero_ps();
  for (int64_t kp = 0; kp < kc; ++kp) {
    __m512i b[NR];
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) b[j] = _mm512_loadu_si512(Bp + kp * ldb + 16 * j);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512i a = _mm512_set1_epi32(int32_t(word(A + i * lda + 2 * kp)));
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], (__m512bh)a, (__m512bh)b[j]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) _mm512_storeu_ps(C + i * ldc + 16 * j, acc[i][j]);
}

constexpr int kMR = 6, kNR = 4;
constexpr int64_t kKc = 128;  // k-pairs per pass: a 128 x 64-column B panel is 32 KiB, within L1

using MicroFn = void (*)(int64_t, const uint16_t*, int64_t, const uint32_t*, int64_t, float*, int64_t, bool);

template <int MR>
constexpr MicroFn pick(int nr) {
  return nr == 1 ? &micro<MR, 1> : nr == 2 ? &micro<MR, 2> : nr == 3 ? &micro<MR, 3> : &micro<MR, 4>;
}

MicroFn microFor(int mr, int nr) {
  switch (mr) {
    case 1:
      return pick<1>(nr);
    case 2:
      return pick<2>(nr);
    case 3:
      return pick<3>(nr);
    case 4:
      return pick<4>(nr);
    case 5:
      return pick<5>(nr);
    default:
      return pick<6>(nr);
  }
}

}  // namespace

namespace {
bool hasAll(std::initializer_list<const char*> keys) {
  auto caps = at::cpu::get_cpu_capabilities();
  for (const char* k : keys) {
    auto it = caps.find(k);
    if (it == caps.end() || !it->second.isBool() || !it->second.toBool()) return false;
  }
  return true;
}
}  // namespace

bool avx512() {
  static const bool ok = hasAll({"avx512_f", "avx512_bw", "avx512_vl", "avx512_dq"});
  return ok;
}

bool available() {
  static const bool ok = avx512() && hasAll({"avx512_bf16"});
  return ok;
}

NPU_AVX512F float rowMax(const float* s, int64_t n) {
  __m512 mx = _mm512_set1_ps(-kInf);
  for (int64_t c = 0; c < n; c += 16) {
    const __mmask16 m = lanes(n - c);
    mx = _mm512_mask_max_ps(mx, m, mx, _mm512_maskz_loadu_ps(m, s + c));
  }
  return _mm512_reduce_max_ps(mx);
}

NPU_AVX512F float expSum(float* s, int64_t n, float ref) {
  const __m512 vr = _mm512_set1_ps(ref);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t c = 0; c < n; c += 16) {
    const __mmask16 m = lanes(n - c);
    const __m512 e = _mm512_maskz_mov_ps(m, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + c), vr)));
    sum = _mm512_add_ps(sum, e);
    _mm512_mask_storeu_ps(s + c, m, e);
  }
  return _mm512_reduce_add_ps(sum);
}

NPU_AVX512F void expGrad(float* p, float* dp, int64_t n, float lse, float delta) {
  const __m512 vl = _mm512_set1_ps(lse), vd = _mm512_set1_ps(delta);
  for (int64_t c = 0; c < n; c += 16) {
    const __mmask16 m = lanes(n - c);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, p + c), vl));
    _mm512_mask_storeu_ps(p + c, m, e);
    _mm512_mask_storeu_ps(dp + c, m, _mm512_mul_ps(e, _mm512_sub_ps(_mm512_maskz_loadu_ps(m, dp + c), vd)));
  }
}

void gemm(int64_t M, int64_t N, int64_t K, const uint16_t* A, int64_t lda, const uint32_t* Bp, int64_t ldb, float* C,
          int64_t ldc, bool accumulate) {
  const int64_t kp_total = K / 2, nvec = roundUp(N, 16) / 16;
  if (kp_total == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + nvec * 16, 0.f);
    return;
  }
  for (int64_t kp0 = 0; kp0 < kp_total; kp0 += kKc) {
    const int64_t kc = std::min(kKc, kp_total - kp0);
    const bool load_c = accumulate || kp0 > 0;
    for (int64_t v0 = 0; v0 < nvec; v0 += kNR) {
      const int nr = int(std::min<int64_t>(kNR, nvec - v0));
      const MicroFn full = microFor(kMR, nr);
      int64_t m0 = 0;
      for (; m0 + kMR <= M; m0 += kMR)
        full(kc, A + m0 * lda + 2 * kp0, lda, Bp + kp0 * ldb + 16 * v0, ldb, C + m0 * ldc + 16 * v0, ldc, load_c);
      if (m0 < M)
        microFor(int(M - m0), nr)(kc, A + m0 * lda + 2 * kp0, lda, Bp + kp0 * ldb + 16 * v0, ldb,
                                  C + m0 * ldc + 16 * v0, ldc, load_c);
    }
  }
}

void packTransposed(const uint16_t* X, int64_t ldx, int64_t N, int64_t K, uint32_t* out, int64_t ldo) {
  const int64_t kp_total = K / 2, n_pad = roundUp(N, 16);
  for (int64_t kp = 0; kp < kp_total; ++kp) {
    uint32_t* o = out + kp * ldo;
    for (int64_t n = 0; n < N; ++n) o[n] = word(X + n * ldx + 2 * kp);
    std::fill(o + N, o + n_pad, 0u);
  }
}

void packRowPairs(const uint16_t* X, int64_t ldx, int64_t R, int64_t N, uint32_t* out, int64_t ldo) {
  const int64_t n_pad = roundUp(N, 16);
  for (int64_t r = 0; r < R; r += 2) {
    uint32_t* o = out + (r / 2) * ldo;
    const uint16_t* x0 = X + r * ldx;
    const uint16_t* x1 = r + 1 < R ? X + (r + 1) * ldx : nullptr;
    for (int64_t n = 0; n < N; ++n) o[n] = uint32_t(x0[n]) | (x1 ? uint32_t(x1[n]) << 16 : 0u);
    std::fill(o + N, o + n_pad, 0u);
  }
}

void transpose(const uint16_t* X, int64_t ldx, int64_t R, int64_t N, uint16_t* out, int64_t ldo) {
  for (int64_t n = 0; n < N; ++n) {
    uint16_t* o = out + n * ldo;
    for (int64_t r = 0; r < R; ++r) o[r] = X[r * ldx + n];
    if (R % 2) o[R] = 0;
  }
}

NPU_AVX512 float scaleBiasMax(float* s, int64_t n, float scale, const uint16_t* bias) {
  const __m512 vs = _mm512_set1_ps(scale);
  __m512 mx = _mm512_set1_ps(-kInf);
  for (int64_t c = 0; c < n; c += 16) {
    const __mmask16 m = lanes(n - c);
    __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + c), vs);
    if (bias) x = _mm512_add_ps(x, loadBf16(bias + c, m));
    _mm512_mask_storeu_ps(s + c, m, x);
    mx = _mm512_mask_max_ps(mx, m, mx, x);
  }
  return _mm512_reduce_max_ps(mx);
}

NPU_AVX512 float expToBf16(const float* s, int64_t n, int64_t n_pad, float ref, uint16_t* p) {
  const __m512 vr = _mm512_set1_ps(ref);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t c = 0; c < n_pad; c += 16) {
    const __mmask16 m = lanes(n - c), mp = lanes(n_pad - c);
    const __m512 e = _mm512_maskz_mov_ps(m, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + c), vr)));
    sum = _mm512_add_ps(sum, e);
    _mm256_mask_storeu_epi16(p + c, mp, bf16Of(e));
  }
  return _mm512_reduce_add_ps(sum);
}

NPU_AVX512F void scale(float* x, int64_t n, float a) {
  const __m512 va = _mm512_set1_ps(a);
  for (int64_t c = 0; c < n; c += 16) {
    const __mmask16 m = lanes(n - c);
    _mm512_mask_storeu_ps(x + c, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + c), va));
  }
}

NPU_AVX512 void scaleToBf16(const float* x, int64_t n, float a, uint16_t* out) {
  const __m512 va = _mm512_set1_ps(a);
  for (int64_t c = 0; c < n; c += 16) {
    const __mmask16 m = lanes(n - c);
    _mm256_mask_storeu_epi16(out + c, m, bf16Of(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + c), va)));
  }
}

NPU_AVX512 float dot(const uint16_t* a, const uint16_t* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t c = 0; c < n; c += 16) {
    const __mmask16 m = lanes(n - c);
    acc = _mm512_fmadd_ps(loadBf16(a + c, m), loadBf16(b + c, m), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

void transposeToBf16(const float* X, int64_t ldx, int64_t R, int64_t N, float a, uint16_t* out, int64_t ldo) {
  for (int64_t r = 0; r < R; ++r)
    for (int64_t n = 0; n < N; ++n) out[n * ldo + r] = toBf16(X[r * ldx + n] * a);
}

NPU_AVX512 void backwardRowPair(const BackwardRow& r0, const BackwardRow& r1, int64_t n_pad, int64_t n_pad2,
                                float scale, uint32_t* p_vnni, uint32_t* ds_vnni) {
  const __m512 vs = _mm512_set1_ps(scale);
  const BackwardRow* rows[2] = {&r0, &r1};
  for (int64_t c = 0; c < n_pad; c += 16) {
    __m256i p16[2], ds16[2];
    for (int t = 0; t < 2; ++t) {
      const BackwardRow& r = *rows[t];
      if (!r.s) {
        p16[t] = ds16[t] = _mm256_setzero_si256();
        continue;
      }
      const __mmask16 m = lanes(r.valid - c);
      __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r.s + c), vs);
      if (r.bias) x = _mm512_add_ps(x, loadBf16(r.bias + c, m));
      const __m512 p = _mm512_maskz_mov_ps(m, exp16(_mm512_sub_ps(x, _mm512_set1_ps(r.lse))));
      const __m512 ds = _mm512_mul_ps(p, _mm512_sub_ps(_mm512_maskz_loadu_ps(m, r.dp + c), _mm512_set1_ps(r.delta)));
      p16[t] = bf16Of(p);
      ds16[t] = bf16Of(ds);
      _mm256_mask_storeu_epi16(r.ds_row + c, lanes(n_pad2 - c), ds16[t]);
    }
    _mm512_storeu_si512(p_vnni + c, interleave(p16[0], p16[1]));
    _mm512_storeu_si512(ds_vnni + c, interleave(ds16[0], ds16[1]));
  }
}

}  // namespace npudist::core::bf16simd
#else
// Not x86-64: no AVX-512; available() and avx512() say so and the kernels are never called.
namespace npudist::core::bf16simd {
bool avx512() { return false; }
bool available() { return false; }
[[noreturn]] void unreachable() {
  TORCH_CHECK(false,
              "internal error: a bf16simd kernel was called on a CPU without AVX-512 (callers check available())");
  std::abort();
}
#define NPU_UNREACHABLE unreachable()
void gemm(int64_t, int64_t, int64_t, const uint16_t*, int64_t, const uint32_t*, int64_t, float*, int64_t, bool) {
  NPU_UNREACHABLE;
}
void packTransposed(const uint16_t*, int64_t, int64_t, int64_t, uint32_t*, int64_t) { NPU_UNREACHABLE; }
void packRowPairs(const uint16_t*, int64_t, int64_t, int64_t, uint32_t*, int64_t) { NPU_UNREACHABLE; }
void transpose(const uint16_t*, int64_t, int64_t, int64_t, uint16_t*, int64_t) { NPU_UNREACHABLE; }
float rowMax(const float*, int64_t) { NPU_UNREACHABLE; }
float expSum(float*, int64_t, float) { NPU_UNREACHABLE; }
void expGrad(float*, float*, int64_t, float, float) { NPU_UNREACHABLE; }
float scaleBiasMax(float*, int64_t, float, const uint16_t*) { NPU_UNREACHABLE; }
float expToBf16(const float*, int64_t, int64_t, float, uint16_t*) { NPU_UNREACHABLE; }
void scale(float*, int64_t, float) { NPU_UNREACHABLE; }
void scaleToBf16(const float*, int64_t, float, uint16_t*) { NPU_UNREACHABLE; }
float dot(const uint16_t*, const uint16_t*, int64_t) { NPU_UNREACHABLE; }
void transposeToBf16(const float*, int64_t, int64_t, int64_t, float, uint16_t*, int64_t) { NPU_UNREACHABLE; }
void backwardRowPair(const BackwardRow&, const BackwardRow&, int64_t, int64_t, float, uint32_t*, uint32_t*) {
  NPU_UNREACHABLE;
}
}  // namespace npudist::core::bf16simd
#endif
