#include "core/aten/attention_bf16.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "core/aten/bf16_simd.h"

namespace npudist::core {
namespace {

namespace simd = bf16simd;
using simd::roundUp;

std::atomic<bool> g_native{true};
// Query x key blocks: attentionBlocks (attention_kernels.h), multiples of 16 as the SIMD loops need.

// An uninitialised scratch buffer of n elements of T (allocated as a tensor, so on npu memory when
// the caller redirects allocations).
template <typename T>
struct Scratch {
  at::Tensor t;
  T* p = nullptr;
  explicit Scratch(int64_t n) {
    t = at::empty({std::max<int64_t>(n, 1) * int64_t(sizeof(T))}, at::kByte);
    p = reinterpret_cast<T*>(t.data_ptr());
  }
};

const uint16_t* bits(const at::Tensor& t) { return reinterpret_cast<const uint16_t*>(t.const_data_ptr()); }
uint16_t* bitsMut(const at::Tensor& t) { return reinterpret_cast<uint16_t*>(t.data_ptr()); }

// Row-pair packing reads each row's elements at unit stride.
at::Tensor unitLastDim(const at::Tensor& t) { return t.stride(-1) == 1 ? t : t.contiguous(); }

bool applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::optional<at::Tensor>& bias,
             const AttentionDropout& dropout) {
  if (!g_native.load(std::memory_order_relaxed) || !simd::available()) return false;
  if (q.scalar_type() != at::kBFloat16 || k.scalar_type() != at::kBFloat16 || v.scalar_type() != at::kBFloat16)
    return false;
  if (bias && bias->defined() && bias->scalar_type() != at::kBFloat16) return false;
  if (dropout.p > 0.0) return false;
  return q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && q.size(3) % 2 == 0 && v.size(3) % 2 == 0 &&
         q.size(3) == k.size(3) && k.size(1) > 0 && q.size(1) % k.size(1) == 0;
}

// Pointer to bias row (b, h, i), key j0, or nullptr (bias broadcast over size-1 batch/head dimensions).
struct BiasRows {
  const uint16_t* base = nullptr;
  int64_t sb = 0, sh = 0, si = 0;
  BiasRows(const std::optional<at::Tensor>& bias) {
    if (!bias || !bias->defined()) return;
    base = bits(*bias);
    sb = bias->size(0) == 1 ? 0 : bias->stride(0);
    sh = bias->size(1) == 1 ? 0 : bias->stride(1);
    si = bias->stride(2);
  }
  const uint16_t* row(int64_t b, int64_t h, int64_t i, int64_t j0) const {
    return base ? base + b * sb + h * sh + i * si + j0 : nullptr;
  }
};

}  // namespace

bool bf16AttentionNative() { return g_native.load() && simd::available(); }

bool setBf16AttentionNative(bool on) { return g_native.exchange(on); }

bool bf16AttentionForward(const at::Tensor& query_in, const at::Tensor& key_in, const at::Tensor& value_in,
                          const std::optional<at::Tensor>& bias_in, double scale_d, bool is_causal,
                          const AttentionDropout& dropout, const at::Tensor& out, const at::Tensor& lse) {
  if (!applies(query_in, key_in, value_in, bias_in, dropout)) return false;
  if (out.stride(3) != 1) return false;
  const at::Tensor query = unitLastDim(query_in), key = unitLastDim(key_in), value = unitLastDim(value_in);
  std::optional<at::Tensor> bias;
  if (bias_in && bias_in->defined()) bias = unitLastDim(*bias_in);
  const BiasRows bias_rows(bias);
  const int64_t B = query.size(0), H = query.size(1), L = query.size(2), S = key.size(2);
  const int64_t D = query.size(3), Dv = value.size(3), Hkv = key.size(1), group = H / Hkv;
  const float scale = float(scale_d);
  const int64_t S16 = roundUp(S, 16), S2 = roundUp(S, 2), Dv16 = roundUp(Dv, 16);
  // Keys transposed and values, packed once per (batch, kv head) for every query block.
  const int64_t kt_words = (D / 2) * S16, v_words = (S2 / 2) * Dv16;
  Scratch<uint32_t> packed(B * Hkv * (kt_words + v_words));
  at::parallel_for(0, B * Hkv, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = t / Hkv, hk = t % Hkv;
      uint32_t* kt = packed.p + t * (kt_words + v_words);
      simd::packTransposed(bits(key) + b * key.stride(0) + hk * key.stride(1), key.stride(2), S, D, kt, S16);
      simd::packRowPairs(bits(value) + b * value.stride(0) + hk * value.stride(1), value.stride(2), S, Dv,
                         kt + kt_words, Dv16);
    }
  });
  const auto [bq, bk] = attentionBlocks(L, S);
  const int64_t nq = (L + bq - 1) / bq;
  at::parallel_for(0, B * H * nq, 1, [&](int64_t begin, int64_t end) {
    Scratch<float> s_buf(bq * bk), acc(bq * Dv16);
    Scratch<uint16_t> p_buf(bq * bk);
    std::vector<float> row_max(bq), row_sum(bq);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / (H * nq), h = (task / nq) % H, i0 = (task % nq) * bq;
      const int64_t m = std::min(bq, L - i0), hk = h / group;
      const uint32_t* kt = packed.p + (b * Hkv + hk) * (kt_words + v_words);
      const uint32_t* vp = kt + kt_words;
      const uint16_t* q = bits(query) + b * query.stride(0) + h * query.stride(1) + i0 * query.stride(2);
      std::fill(row_max.begin(), row_max.end(), -kInf);
      std::fill(row_sum.begin(), row_sum.end(), 0.f);
      std::fill(acc.p, acc.p + m * Dv16, 0.f);
      const int64_t s_end = is_causal ? std::min(S, i0 + m) : S;
      for (int64_t j0 = 0; j0 < s_end; j0 += bk) {
        const int64_t n = std::min(bk, s_end - j0), n16 = roundUp(n, 16), n2 = roundUp(n, 2);
        simd::gemm(m, n, D, q, query.stride(2), kt + j0, S16, s_buf.p, n16, false);
        for (int64_t r = 0; r < m; ++r) {
          // Causal (top-left): query i sees keys j <= i.
          const int64_t valid = is_causal ? std::clamp<int64_t>(i0 + r + 1 - j0, 0, n) : n;
          float* row = s_buf.p + r * n16;
          const float bmax = valid ? simd::scaleBiasMax(row, valid, scale, bias_rows.row(b, h, i0 + r, j0)) : -kInf;
          const float nm = std::max(row_max[r], bmax);
          // A row with every score -inf so far keeps a finite reference point.
          const float ref = nm == -kInf ? 0.f : nm;
          const float alpha = std::exp(row_max[r] - ref);
          row_max[r] = nm;
          const float sum = simd::expToBf16(row, valid, n2, ref, p_buf.p + r * n2);
          row_sum[r] = row_sum[r] * alpha + sum;
          if (j0 > 0 && alpha != 1.f) simd::scale(acc.p + r * Dv16, Dv, alpha);
        }
        simd::gemm(m, Dv, n2, p_buf.p, n2, vp + (j0 / 2) * Dv16, Dv16, acc.p, Dv16, true);
      }
      // Rows with nothing to attend to (all masked) give 0 and lse = +inf, so backward sees p = 0.
      uint16_t* o = bitsMut(out) + b * out.stride(0) + h * out.stride(1) + i0 * out.stride(2);
      for (int64_t r = 0; r < m; ++r) {
        const bool none = row_sum[r] == 0.f;
        simd::scaleToBf16(acc.p + r * Dv16, Dv, none ? 0.f : 1.f / row_sum[r], o + r * out.stride(2));
        if (lse.defined())
          lse.data_ptr<float>()[b * lse.stride(0) + h * lse.stride(1) + (i0 + r) * lse.stride(2)] =
              none ? kInf : row_max[r] + std::log(row_sum[r]);
      }
    }
  });
  return true;
}

bool bf16AttentionBackward(const at::Tensor& grad_out_in, const at::Tensor& query_in, const at::Tensor& key_in,
                           const at::Tensor& value_in, const std::optional<at::Tensor>& bias_in,
                           const at::Tensor& out_in, const at::Tensor& lse, double scale_d, bool is_causal,
                           const AttentionDropout& dropout, const at::Tensor& grad_query, const at::Tensor& grad_key,
                           const at::Tensor& grad_value, const at::Tensor& grad_bias) {
  if (!applies(query_in, key_in, value_in, bias_in, dropout) || grad_bias.defined()) return false;
  if (grad_out_in.scalar_type() != at::kBFloat16 || out_in.scalar_type() != at::kBFloat16) return false;
  if (grad_query.stride(3) != 1 || grad_key.stride(3) != 1 || grad_value.stride(3) != 1) return false;
  const at::Tensor query = unitLastDim(query_in), key = unitLastDim(key_in), value = unitLastDim(value_in);
  const at::Tensor grad_out = unitLastDim(grad_out_in), out = unitLastDim(out_in);
  std::optional<at::Tensor> bias;
  if (bias_in && bias_in->defined()) bias = unitLastDim(*bias_in);
  const BiasRows bias_rows(bias);
  const int64_t B = query.size(0), H = query.size(1), L = query.size(2), S = key.size(2);
  const int64_t D = query.size(3), Dv = value.size(3), Hkv = key.size(1), group = H / Hkv;
  const float scale = float(scale_d);
  const int64_t S16 = roundUp(S, 16), S2 = roundUp(S, 2), L2 = roundUp(L, 2);
  const int64_t D16 = roundUp(D, 16);
  const auto [bq, bk] = attentionBlocks(L, S);
  // One task per (batch, key/value head): its key and value gradients have one writer.
  at::parallel_for(0, B * Hkv, 1, [&](int64_t begin, int64_t end) {
    // Per kv head: K^T and V^T as VNNI B (scores, dP), K as VNNI B (dQ), and the transposed fp32
    // accumulators of dK and dV. Per query head: Q^T and dO^T as row-major A (dK, dV), dQ, delta.
    Scratch<uint32_t> kt((D / 2) * S16), vt((Dv / 2) * S16), kr((S2 / 2) * D16);
    Scratch<float> dkt(D * S16), dvt(Dv * S16), dq(L * D16), delta(L);
    Scratch<uint16_t> qt(D * L2), got(Dv * L2);
    Scratch<float> s_buf(bq * bk), dp_buf(bq * bk);
    Scratch<uint32_t> p_vnni((bq / 2) * bk), ds_vnni((bq / 2) * bk);
    Scratch<uint16_t> ds_rows(bq * bk);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / Hkv, hk = task % Hkv;
      const uint16_t* k = bits(key) + b * key.stride(0) + hk * key.stride(1);
      const uint16_t* v = bits(value) + b * value.stride(0) + hk * value.stride(1);
      simd::packTransposed(k, key.stride(2), S, D, kt.p, S16);
      simd::packTransposed(v, value.stride(2), S, Dv, vt.p, S16);
      simd::packRowPairs(k, key.stride(2), S, D, kr.p, D16);
      std::fill(dkt.p, dkt.p + D * S16, 0.f);
      std::fill(dvt.p, dvt.p + Dv * S16, 0.f);
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        const uint16_t* q = bits(query) + b * query.stride(0) + h * query.stride(1);
        const uint16_t* go = bits(grad_out) + b * grad_out.stride(0) + h * grad_out.stride(1);
        const uint16_t* o = bits(out) + b * out.stride(0) + h * out.stride(1);
        const float* lse_bh = lse.const_data_ptr<float>() + b * lse.stride(0) + h * lse.stride(1);
        simd::transpose(q, query.stride(2), L, D, qt.p, L2);
        simd::transpose(go, grad_out.stride(2), L, Dv, got.p, L2);
        // D_i = sum_j P_ij dP_ij = rowsum(dO * O): the softmax backward's correction term.
        for (int64_t i = 0; i < L; ++i) delta.p[i] = simd::dot(go + i * grad_out.stride(2), o + i * out.stride(2), Dv);
        std::fill(dq.p, dq.p + L * D16, 0.f);
        for (int64_t j0 = 0; j0 < S; j0 += bk) {
          const int64_t n_blk = std::min(bk, S - j0);
          // Causal: query rows before j0 see none of these keys.
          const int64_t i_first = is_causal ? (std::min(j0, L) / bq) * bq : 0;
          for (int64_t i0 = i_first; i0 < L; i0 += bq) {
            const int64_t m = std::min(bq, L - i0), m2 = roundUp(m, 2);
            // Causal: keys past this block's last query are masked for all its rows; leave them out.
            const int64_t n = is_causal ? std::min(n_blk, i0 + m - j0) : n_blk;
            const int64_t n16 = roundUp(n, 16), n2 = roundUp(n, 2);
            simd::gemm(m, n, D, q + i0 * query.stride(2), query.stride(2), kt.p + j0, S16, s_buf.p, n16, false);
            simd::gemm(m, n, Dv, go + i0 * grad_out.stride(2), grad_out.stride(2), vt.p + j0, S16, dp_buf.p, n16,
                       false);
            for (int64_t r = 0; r < m; r += 2) {
              simd::BackwardRow rows[2];
              for (int64_t t = 0; t < 2 && r + t < m; ++t) {
                const int64_t i = i0 + r + t;
                simd::BackwardRow& row = rows[t];
                row.s = s_buf.p + (r + t) * n16;
                row.dp = dp_buf.p + (r + t) * n16;
                row.bias = bias_rows.row(b, h, i, j0);
                row.valid = is_causal ? std::clamp<int64_t>(i + 1 - j0, 0, n) : n;
                row.lse = lse_bh[i * lse.stride(2)];
                row.delta = delta.p[i];
                row.ds_row = ds_rows.p + (r + t) * n2;
              }
              simd::backwardRowPair(rows[0], rows[1], n16, n2, scale, p_vnni.p + (r / 2) * n16,
                                    ds_vnni.p + (r / 2) * n16);
            }
            // dV^T += dO^T P, dK^T += Q^T dS (scaled at the end), dQ += dS K (scaled at the end).
            simd::gemm(Dv, n, m2, got.p + i0, L2, p_vnni.p, n16, dvt.p + j0, S16, true);
            simd::gemm(D, n, m2, qt.p + i0, L2, ds_vnni.p, n16, dkt.p + j0, S16, true);
            simd::gemm(m, D, n2, ds_rows.p, n2, kr.p + (j0 / 2) * D16, D16, dq.p + i0 * D16, D16, true);
          }
        }
        uint16_t* gq = bitsMut(grad_query) + b * grad_query.stride(0) + h * grad_query.stride(1);
        for (int64_t i = 0; i < L; ++i) simd::scaleToBf16(dq.p + i * D16, D, scale, gq + i * grad_query.stride(2));
      }
      simd::transposeToBf16(dkt.p, S16, D, S, scale,
                            bitsMut(grad_key) + b * grad_key.stride(0) + hk * grad_key.stride(1), grad_key.stride(2));
      simd::transposeToBf16(dvt.p, S16, Dv, S, 1.f,
                            bitsMut(grad_value) + b * grad_value.stride(0) + hk * grad_value.stride(1),
                            grad_value.stride(2));
    }
  });
  return true;
}

}  // namespace npudist::core
