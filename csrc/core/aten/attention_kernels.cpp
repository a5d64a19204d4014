#include "core/aten/attention_kernels.h"

#include <ATen/Parallel.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/aten/attention_bf16.h"
#include "core/aten/bf16_simd.h"

namespace npudist::core {
namespace {

at::Tensor f32(const at::Tensor& t) { return t.scalar_type() == at::kFloat ? t : t.to(at::kFloat); }

// A contiguous m x n float view of the front of `buf` (a flat scratch buffer reused across blocks:
// fresh large allocations would page-fault on every block).
at::Tensor block(const at::Tensor& buf, int64_t m, int64_t n) { return buf.narrow(0, 0, m * n).view({m, n}); }

// SplitMix64's finaliser over (seed, counter): a stateless, counter-based
// stream, so any element's draw is computed without the ones before it.
inline uint64_t mix(uint64_t seed, uint64_t counter) {
  uint64_t z = counter + 0x9E3779B97F4A7C15ULL * (seed + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Fills z (m x n) with the dropout multiplier: 1/(1-p) where kept, 0 where dropped.
void dropoutScale(const AttentionDropout& d, uint64_t row_base, int64_t i0, int64_t j0, int64_t S, at::Tensor& z) {
  const int64_t m = z.size(0), n = z.size(1);
  float* zp = z.data_ptr<float>();
  const float keep_scale = static_cast<float>(1.0 / (1.0 - d.p));
  // 24 random bits per element, compared with p in the same resolution.
  const uint64_t threshold = static_cast<uint64_t>(d.p * double(1 << 24));
  for (int64_t r = 0; r < m; ++r) {
    uint64_t base = d.offset + (row_base + uint64_t(i0 + r)) * uint64_t(S) + uint64_t(j0);
    for (int64_t c = 0; c < n; ++c) zp[r * n + c] = (mix(d.seed, base + c) >> 40) >= threshold ? keep_scale : 0.f;
  }
}

// Sets scores of keys after the query (j > i) to -inf; only blocks that
// straddle the diagonal have any.
void maskCausal(at::Tensor& s, int64_t i0, int64_t j0) {
  const int64_t m = s.size(0), n = s.size(1);
  float* sp = s.data_ptr<float>();
  for (int64_t r = 0; r < m; ++r) {
    int64_t first = std::max<int64_t>(0, i0 + r + 1 - j0);
    for (int64_t c = first; c < n; ++c) sp[r * n + c] = -kInf;
  }
}

// s = q_scaled K^T (+ bias block), causal-masked: one block of scores (q already holds the scale).
void scores(at::Tensor& s, const at::Tensor& q_scaled, const at::Tensor& k, const std::optional<at::Tensor>& bias_bh,
            int64_t i0, int64_t j0, bool is_causal) {
  if (bias_bh) {
    s.copy_(bias_bh->slice(0, i0, i0 + q_scaled.size(0)).slice(1, j0, j0 + k.size(0)));
    s.addmm_(q_scaled, k.t());
  } else {
    at::mm_out(s, q_scaled, k.t());
  }
  if (is_causal && j0 + k.size(0) - 1 > i0) maskCausal(s, i0, j0);
}

std::optional<at::Tensor> biasOf(const std::optional<at::Tensor>& bias, int64_t b, int64_t h) {
  if (!bias || !bias->defined()) return std::nullopt;
  return bias->select(0, bias->size(0) == 1 ? 0 : b).select(0, bias->size(1) == 1 ? 0 : h);
}

void checkInputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
              "_scaled_dot_product_efficient_attention on npu expects 4-D query, key and value (batch, heads, seq, "
              "head_dim); got ",
              q.dim(), "-D, ", k.dim(), "-D and ", v.dim(), "-D");
  TORCH_CHECK(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(),
              "_scaled_dot_product_efficient_attention on npu expects query, key and value of one dtype; got ",
              q.scalar_type(), ", ", k.scalar_type(), ", ", v.scalar_type());
  TORCH_CHECK(q.scalar_type() == at::kFloat || q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16,
              "_scaled_dot_product_efficient_attention on npu supports float32, float16 and bfloat16; got ",
              q.scalar_type(), " (use the math path: torch.nn.attention.sdpa_kernel(SDPBackend.MATH))");
  TORCH_CHECK(q.size(0) == k.size(0) && k.size(0) == v.size(0) && k.size(1) == v.size(1) && k.size(2) == v.size(2) &&
                  q.size(3) == k.size(3),
              "_scaled_dot_product_efficient_attention on npu: query ", q.sizes(), ", key ", k.sizes(), " and value ",
              v.sizes(), " do not fit (batch, heads, seq, head_dim) attention");
  TORCH_CHECK(k.size(1) > 0 && q.size(1) % k.size(1) == 0,
              "_scaled_dot_product_efficient_attention on npu: the number of key/value heads (", k.size(1),
              ") must divide the number of query heads (", q.size(1), ")");
  if (bias && bias->defined()) {
    TORCH_CHECK(bias->dim() == 4 && (bias->size(0) == 1 || bias->size(0) == q.size(0)) &&
                    (bias->size(1) == 1 || bias->size(1) == q.size(1)) && bias->size(2) == q.size(2) &&
                    bias->size(3) == k.size(2),
                "_scaled_dot_product_efficient_attention on npu: attn_bias ", bias->sizes(),
                " does not broadcast to (batch, heads, L, S) = (", q.size(0), ", ", q.size(1), ", ", q.size(2), ", ",
                k.size(2), ")");
  }
}

}  // namespace

void efficientAttentionForwardCpu(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                  const std::optional<at::Tensor>& bias, double scale, bool is_causal,
                                  const AttentionDropout& dropout, const at::Tensor& out, const at::Tensor& lse) {
  checkInputs(query, key, value, bias);
  // bf16 on a CPU with AVX512-BF16: native bf16 GEMMs (attention_bf16.h).
  if (bf16AttentionForward(query, key, value, bias, scale, is_causal, dropout, out, lse)) return;
  const int64_t B = query.size(0), H = query.size(1), L = query.size(2), S = key.size(2);
  const int64_t group = H / key.size(1);
  const auto [kBlockQ, kBlockK] = attentionBlocks(L, S);
  const int64_t nq = (L + kBlockQ - 1) / kBlockQ;
  const bool use_dropout = dropout.p > 0.0;
  const bool fused = bf16simd::avx512();
  at::parallel_for(0, B * H * nq, 1, [&](int64_t begin, int64_t end) {
    at::Tensor s_buf = at::empty({kBlockQ * kBlockK}, at::kFloat);
    at::Tensor z_buf = use_dropout ? at::empty({kBlockQ * kBlockK}, at::kFloat) : at::Tensor();
    at::Tensor blk_max = at::empty({kBlockQ}, at::kFloat), blk_sum = at::empty({kBlockQ}, at::kFloat);
    at::Tensor alpha = at::empty({kBlockQ}, at::kFloat), ref = at::empty({kBlockQ}, at::kFloat);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / (H * nq), h = (task / nq) % H, i0 = (task % nq) * kBlockQ;
      const int64_t m = std::min(kBlockQ, L - i0);
      const at::Tensor k_bh = key[b][h / group], v_bh = value[b][h / group];
      const std::optional<at::Tensor> bias_bh = biasOf(bias, b, h);
      const at::Tensor q =
          query[b][h].slice(0, i0, i0 + m).to(at::kFloat, /*non_blocking=*/false, /*copy=*/true).mul_(scale);
      std::vector<float> row_max(m, -kInf), row_sum(m, 0.f);
      at::Tensor acc = at::zeros({m, value.size(3)}, at::kFloat);
      float *bmax = blk_max.data_ptr<float>(), *bsum = blk_sum.data_ptr<float>();
      float *al = alpha.data_ptr<float>(), *rf = ref.data_ptr<float>();
      // Causal: keys past the block's last query are masked for every row.
      const int64_t s_end = is_causal ? std::min(S, i0 + m) : S;
      for (int64_t j0 = 0; j0 < s_end; j0 += kBlockK) {
        const int64_t n = std::min(kBlockK, s_end - j0);
        at::Tensor s = block(s_buf, m, n);
        scores(s, q, f32(k_bh.slice(0, j0, j0 + n)), bias_bh, i0, j0, is_causal);
        if (fused) {
          // One AVX-512 pass per row for the max, one for exp and sum (attention_bf16.h does the same on bf16).
          float* sp = s.data_ptr<float>();
          float* ap = acc.data_ptr<float>();
          for (int64_t r = 0; r < m; ++r) {
            const float nm = std::max(row_max[r], bf16simd::rowMax(sp + r * n, n));
            const float rf_r = nm == -kInf ? 0.f : nm;
            const float al_r = std::exp(row_max[r] - rf_r);
            row_max[r] = nm;
            row_sum[r] = row_sum[r] * al_r + bf16simd::expSum(sp + r * n, n, rf_r);
            if (j0 > 0 && al_r != 1.f) bf16simd::scale(ap + r * acc.size(1), acc.size(1), al_r);
          }
        } else {
          at::Tensor bm = blk_max.narrow(0, 0, m), bs = blk_sum.narrow(0, 0, m);
          at::amax_out(bm, s, {1});
          for (int64_t r = 0; r < m; ++r) {
            const float nm = std::max(row_max[r], bmax[r]);
            // A row with every score -inf so far keeps a finite reference point.
            rf[r] = nm == -kInf ? 0.f : nm;
            al[r] = std::exp(row_max[r] - rf[r]);
            row_max[r] = nm;
          }
          s.sub_(ref.narrow(0, 0, m).unsqueeze(1)).exp_();
          at::sum_out(bs, s, {1});
          for (int64_t r = 0; r < m; ++r) row_sum[r] = row_sum[r] * al[r] + bsum[r];
          acc.mul_(alpha.narrow(0, 0, m).unsqueeze(1));
        }
        if (use_dropout) {
          at::Tensor z = block(z_buf, m, n);
          dropoutScale(dropout, uint64_t(b * H + h) * uint64_t(L), i0, j0, S, z);
          s.mul_(z);
        }
        acc.addmm_(s, f32(v_bh.slice(0, j0, j0 + n)));
      }
      // Rows with nothing to attend to (all masked) give 0 and lse = +inf, so backward sees p = 0.
      at::Tensor inv = at::empty({m, 1}, at::kFloat), l = at::empty({m}, at::kFloat);
      for (int64_t r = 0; r < m; ++r) {
        const bool none = row_sum[r] == 0.f;
        inv.data_ptr<float>()[r] = none ? 0.f : 1.f / row_sum[r];
        l.data_ptr<float>()[r] = none ? kInf : row_max[r] + std::log(row_sum[r]);
      }
      out[b][h].slice(0, i0, i0 + m).copy_(acc.mul_(inv));
      if (lse.defined()) lse[b][h].slice(0, i0, i0 + m).copy_(l);
    }
  });
}

void efficientAttentionBackwardCpu(const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
                                   const at::Tensor& value, const std::optional<at::Tensor>& bias,
                                   const at::Tensor& out, const at::Tensor& lse, double scale, bool is_causal,
                                   const AttentionDropout& dropout, const at::Tensor& grad_query,
                                   const at::Tensor& grad_key, const at::Tensor& grad_value,
                                   const at::Tensor& grad_bias) {
  checkInputs(query, key, value, bias);
  const int64_t B = query.size(0), H = query.size(1), L = query.size(2), S = key.size(2);
  const int64_t Hkv = key.size(1), group = H / Hkv;
  TORCH_CHECK(lse.dim() == 3 && lse.size(0) == B && lse.size(1) == H && lse.size(2) >= L,
              "_scaled_dot_product_efficient_attention_backward on npu: logsumexp of shape ", lse.sizes(),
              " does not match query ", query.sizes(), " (was the forward run with compute_log_sumexp=True?)");
  if (bf16AttentionBackward(grad_out, query, key, value, bias, out, lse, scale, is_causal, dropout, grad_query,
                            grad_key, grad_value, grad_bias))
    return;
  const bool use_dropout = dropout.p > 0.0;
  const bool fused = bf16simd::avx512();
  const auto [kBlockQ, kBlockK] = attentionBlocks(L, S);
  // One task per (batch, key/value head): its key and value gradients have one writer.
  at::parallel_for(0, B * Hkv, 1, [&](int64_t begin, int64_t end) {
    at::Tensor p_buf = at::empty({kBlockQ * kBlockK}, at::kFloat), dp_buf = at::empty({kBlockQ * kBlockK}, at::kFloat);
    at::Tensor z_buf = use_dropout ? at::empty({kBlockQ * kBlockK}, at::kFloat) : at::Tensor();
    at::Tensor pz_buf = use_dropout ? at::empty({kBlockQ * kBlockK}, at::kFloat) : at::Tensor();
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / Hkv, hk = task % Hkv;
      const at::Tensor k_all = key[b][hk], v_all = value[b][hk];
      at::Tensor dk = at::zeros({S, key.size(3)}, at::kFloat);
      at::Tensor dv = at::zeros({S, value.size(3)}, at::kFloat);
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        const std::optional<at::Tensor> bias_bh = biasOf(bias, b, h);
        // With Q pre-scaled, dK = scale * dS^T Q = dS^T (scale * Q).
        const at::Tensor q_all = query[b][h].to(at::kFloat, false, /*copy=*/true).mul_(scale);
        const at::Tensor do_all = f32(grad_out[b][h]);
        const at::Tensor lse_all = lse[b][h].slice(0, 0, L);
        // D_i = sum_j P_ij dP_ij = rowsum(dO * O): the softmax backward's correction term.
        const at::Tensor delta = do_all.mul(f32(out[b][h])).sum(1);
        at::Tensor dq = at::zeros({L, query.size(3)}, at::kFloat);
        for (int64_t j0 = 0; j0 < S; j0 += kBlockK) {
          const int64_t n_blk = std::min(kBlockK, S - j0);
          const at::Tensor k_blk = f32(k_all.slice(0, j0, j0 + n_blk)), v_blk = f32(v_all.slice(0, j0, j0 + n_blk));
          at::Tensor dk_all_blk = dk.slice(0, j0, j0 + n_blk), dv_all_blk = dv.slice(0, j0, j0 + n_blk);
          // Causal: query rows before j0 see none of these keys.
          const int64_t i_first = is_causal ? (std::min(j0, L) / kBlockQ) * kBlockQ : 0;
          for (int64_t i0 = i_first; i0 < L; i0 += kBlockQ) {
            const int64_t m = std::min(kBlockQ, L - i0);
            // Causal: keys past this block's last query are masked for all its rows; leave them out.
            const int64_t n = is_causal ? std::min(n_blk, i0 + m - j0) : n_blk;
            const at::Tensor k = k_blk.narrow(0, 0, n), v = v_blk.narrow(0, 0, n);
            at::Tensor dk_blk = dk_all_blk.narrow(0, 0, n), dv_blk = dv_all_blk.narrow(0, 0, n);
            const at::Tensor q = q_all.slice(0, i0, i0 + m), d_o = do_all.slice(0, i0, i0 + m);
            at::Tensor p = block(p_buf, m, n), dp = block(dp_buf, m, n);
            scores(p, q, k, bias_bh, i0, j0, is_causal);
            at::mm_out(dp, d_o, v.t());
            at::Tensor ds;
            if (fused && !use_dropout) {
              // p = exp(s - lse) and dS = p * (dP - delta) in one AVX-512 pass per row (dS in dp's buffer).
              const float* lp = lse_all.const_data_ptr<float>() + i0 * lse_all.stride(0);
              const float* dl = delta.const_data_ptr<float>() + i0;
              float *pp = p.data_ptr<float>(), *dpp = dp.data_ptr<float>();
              for (int64_t r = 0; r < m; ++r)
                bf16simd::expGrad(pp + r * n, dpp + r * n, n, lp[r * lse_all.stride(0)], dl[r]);
              dv_blk.addmm_(p.t(), d_o);
              ds = dp;
            } else {
              p.sub_(lse_all.slice(0, i0, i0 + m).unsqueeze(1)).exp_();
              if (use_dropout) {
                at::Tensor z = block(z_buf, m, n), pz = block(pz_buf, m, n);
                dropoutScale(dropout, uint64_t(b * H + h) * uint64_t(L), i0, j0, S, z);
                dv_blk.addmm_(at::mul_out(pz, p, z).t(), d_o);
                dp.mul_(z);
              } else {
                dv_blk.addmm_(p.t(), d_o);
              }
              ds = p.mul_(dp.sub_(delta.slice(0, i0, i0 + m).unsqueeze(1)));
            }
            if (grad_bias.defined()) grad_bias[b][h].slice(0, i0, i0 + m).slice(1, j0, j0 + n).copy_(ds);
            dq.slice(0, i0, i0 + m).addmm_(ds, k, 1.0, scale);
            dk_blk.addmm_(ds.t(), q);
          }
        }
        grad_query[b][h].copy_(dq);
      }
      grad_key[b][hk].copy_(dk);
      grad_value[b][hk].copy_(dv);
    }
  });
}

}  // namespace npudist::core
