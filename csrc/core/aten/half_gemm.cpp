#include "core/aten/half_gemm.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addbmm.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <atomic>
#include <optional>

#include "core/allocator/cpu_redirect.h"
#include "core/aten/cpu_alias.h"
#include "core/aten/bf16_simd.h"
#include "core/aten/fallback.h"
#include "core/graph/capture_state.h"
#include "core/stream.h"
#include "profiler/kernel_scope.h"

namespace npudist::core {
namespace {

std::atomic<int64_t> g_block_bytes{16 << 20};
std::atomic<int64_t> g_calls{0};
std::atomic<bool> g_enabled{true};
std::atomic<bool> g_native_bf16{true};

enum class Kind { kMm, kBmm, kAddmm, kBaddbmm, kAddbmm };
enum class Form { kFunctional, kOut, kInplace };

struct Call {
  Kind kind;
  Form form;
  at::Tensor self;  // the added term of the addmm family
  at::Tensor a, b;
  c10::Scalar beta = 1, alpha = 1;
  at::Tensor out;  // out= or in-place target
};

std::optional<Call> parse(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const c10::FunctionSchema& schema = op.schema();
  const std::string& name = schema.name();
  const std::string& overload = schema.overload_name();
  size_t n = schema.arguments().size();
  const c10::IValue* args = &stack[stack.size() - n];
  Call c;
  std::string base = name.substr(6);  // drop "aten::"
  bool inplace = !base.empty() && base.back() == '_';
  if (inplace) base.pop_back();
  if (base == "mm")
    c.kind = Kind::kMm;
  else if (base == "bmm")
    c.kind = Kind::kBmm;
  else if (base == "addmm")
    c.kind = Kind::kAddmm;
  else if (base == "baddbmm")
    c.kind = Kind::kBaddbmm;
  else if (base == "addbmm")
    c.kind = Kind::kAddbmm;
  else
    return std::nullopt;
  c.form = inplace ? Form::kInplace : overload == "out" ? Form::kOut : Form::kFunctional;
  if (!overload.empty() && overload != "out") return std::nullopt;
  for (size_t i = 0; i < n; ++i)
    if (schema.arguments()[i].type()->kind() == c10::TypeKind::TensorType && !args[i].isTensor()) return std::nullopt;
  if (c.kind == Kind::kMm || c.kind == Kind::kBmm) {
    c.a = args[0].toTensor();
    c.b = args[1].toTensor();
    if (c.form == Form::kOut) c.out = args[2].toTensor();
  } else {
    c.self = args[0].toTensor();
    c.a = args[1].toTensor();
    c.b = args[2].toTensor();
    c.beta = args[3].toScalar();
    c.alpha = args[4].toScalar();
    if (c.form == Form::kOut) c.out = args[5].toTensor();
    if (c.form == Form::kInplace) c.out = c.self;
  }
  return c;
}

// The result's shape when the call can take the widening path, else nullopt
// (the fallback then runs PyTorch's CPU kernel, with its errors).
std::optional<std::vector<int64_t>> fastShape(const Call& c) {
  std::vector<const at::Tensor*> ts = {&c.a, &c.b};
  if (c.self.defined()) ts.push_back(&c.self);
  if (c.out.defined()) ts.push_back(&c.out);
  c10::ScalarType dtype = c.a.scalar_type();
  if (!isHalfPrecision(dtype)) return std::nullopt;
  for (const at::Tensor* t : ts) {
    if (!t->defined() || !t->is_privateuseone() || t->device() != c.a.device() || t->scalar_type() != dtype ||
        t->layout() != c10::Layout::Strided || t->is_neg())
      return std::nullopt;
  }
  bool batched_in = c.kind == Kind::kBmm || c.kind == Kind::kBaddbmm || c.kind == Kind::kAddbmm;
  int64_t dims = batched_in ? 3 : 2;
  if (c.a.dim() != dims || c.b.dim() != dims) return std::nullopt;
  if (c.a.size(-1) != c.b.size(-2)) return std::nullopt;
  if (batched_in && c.a.size(0) != c.b.size(0)) return std::nullopt;
  std::vector<int64_t> shape;
  if (c.kind == Kind::kBmm || c.kind == Kind::kBaddbmm) shape.push_back(c.a.size(0));
  shape.push_back(c.a.size(-2));
  shape.push_back(c.b.size(-1));
  if (c.self.defined()) {
    if (c.form == Form::kInplace ? c.self.sizes() != c10::IntArrayRef(shape)
                                 : !at::is_expandable_to(c.self.sizes(), shape))
      return std::nullopt;
  }
  if (c.out.defined()) {
    if (at::has_internal_overlap(c.out) == at::MemOverlap::Yes) return std::nullopt;
    for (const at::Tensor* t : {&c.a, &c.b})
      if (at::get_overlap_status(c.out, *t) != at::MemOverlapStatus::No) return std::nullopt;
    // The added term may be the target itself (in-place, or out=self): each block reads it before writing.
    if (c.self.defined() && !c.self.is_same(c.out) && at::get_overlap_status(c.out, c.self) != at::MemOverlapStatus::No)
      return std::nullopt;
  }
  return shape;
}

// bf16 on a CPU with AVX512-BF16: PyTorch's CPU bf16 GEMM (oneDNN) multiplies bf16 pairs natively and
// accumulates in fp32, rounding once, 3-4x faster than widening to an fp32 GEMM here. Below ~32^3
// multiply-adds its set-up costs more than widening saves.
bool nativeBf16(const Call& c) {
  if (c.a.scalar_type() != c10::kBFloat16 || !g_native_bf16.load(std::memory_order_relaxed)) return false;
  const int64_t macs = (c.a.dim() == 3 ? c.a.size(0) : 1) * c.a.size(-2) * c.a.size(-1) * c.b.size(-1);
  return macs >= 32 * 32 * 32 && bf16simd::available();
}

constexpr int64_t kMinBlock = 64;

struct GemmBlocks {
  int64_t batch, rows, cols;  // block sizes over batches (bmm/baddbmm only), rows (M) and columns (N)
};

// Block sizes whose fp32 workspace (widened a and b panels, the added term and the fp32 result) fits
// the budget, or blocks of kMinBlock rows and columns when even those do not (a very long contraction);
// the contraction (K, and the batches addbmm sums over) is never split.
GemmBlocks chooseBlocks(const Call& c, int64_t B, int64_t M, int64_t N, int64_t K) {
  int64_t budget = std::max<int64_t>(g_block_bytes.load(std::memory_order_relaxed) / 4, 256);
  int64_t terms = c.self.defined() ? 2 : 1;
  bool sums_batches = c.kind == Kind::kAddbmm;
  int64_t kk = sums_batches ? B * K : K;  // contraction length per output element
  auto cost = [&](int64_t bb, int64_t bm, int64_t bn) { return bb * (bm * kk + kk * bn + terms * bm * bn); };
  if (sums_batches || B == 1) {
    if (cost(1, M, N) <= budget) return {B, M, N};
  } else {
    int64_t one = cost(1, M, N);
    if (one <= budget) return {std::max<int64_t>(1, std::min(B, budget / std::max<int64_t>(one, 1))), M, N};
  }
  // At least kMinBlock rows and columns: MKL's sgemm computes each element the same way for any block from
  // 64 up (checked by tests/device/test_half_precision.py), but takes other kernels for thinner ones.
  int64_t bn = std::clamp<int64_t>(budget / 2 / std::max<int64_t>(kk, 1), std::min<int64_t>(N, kMinBlock),
                                   std::max<int64_t>(N, 1));
  if (bn > kMinBlock) bn -= bn % kMinBlock;
  int64_t bm = std::clamp<int64_t>((budget - kk * bn) / std::max<int64_t>(kk + terms * bn, 1),
                                   std::min<int64_t>(M, kMinBlock), std::max<int64_t>(M, 1));
  if (bm > kMinBlock) bm -= bm % kMinBlock;
  return {sums_batches ? B : 1, bm, bn};
}

at::Tensor fp32Op(const Call& c, const at::Tensor& s, const at::Tensor& a, const at::Tensor& b) {
  switch (c.kind) {
    case Kind::kMm:
      return at::mm(a, b);
    case Kind::kBmm:
      return at::bmm(a, b);
    case Kind::kAddmm:
      return at::addmm(s, a, b, c.beta, c.alpha);
    case Kind::kBaddbmm:
      return at::baddbmm(s, a, b, c.beta, c.alpha);
    case Kind::kAddbmm:
      return at::addbmm(s, a, b, c.beta, c.alpha);
  }
  TORCH_INTERNAL_ASSERT(false);
}

// Computes the call into `result` (npu, the result's shape). Runs on CPU aliases of the npu memory
// with temporaries allocated from the npu allocator.
void compute(const Call& c, const at::Tensor& result, c10::DeviceIndex device) {
  at::Tensor a = aliasAsCpu(c.a), b = aliasAsCpu(c.b), r = aliasAsCpu(result);
  at::Tensor s;
  if (c.self.defined()) s = aliasAsCpu(c.self).expand(r.sizes());
  bool batched_out = r.dim() == 3;
  bool batched_in = a.dim() == 3;
  int64_t B = batched_in ? a.size(0) : 1, M = a.size(-2), K = a.size(-1), N = b.size(-1);
  RedirectToNpu redirect(device);
  GemmBlocks blk = chooseBlocks(c, B, M, N, K);
  blk = {std::max<int64_t>(blk.batch, 1), std::max<int64_t>(blk.rows, 1), std::max<int64_t>(blk.cols, 1)};
  // Slices [b0, b1) x [m0, m1) x [n0, n1) of an operand laid out as (batch?, rows, cols).
  auto rows = [&](const at::Tensor& t, int64_t b0, int64_t b1, int64_t m0, int64_t m1) {
    at::Tensor x = batched_out ? t.slice(0, b0, b1) : t;
    return x.slice(-2, m0, m1);
  };
  for (int64_t b0 = 0; b0 < (batched_out ? B : 1); b0 += blk.batch) {
    int64_t b1 = std::min(B, b0 + blk.batch);
    for (int64_t n0 = 0; n0 < std::max<int64_t>(N, 1); n0 += blk.cols) {
      int64_t n1 = std::min(N, n0 + blk.cols);
      at::Tensor bf = (batched_out ? b.slice(0, b0, b1) : b).slice(-1, n0, n1).to(at::kFloat);
      for (int64_t m0 = 0; m0 < std::max<int64_t>(M, 1); m0 += blk.rows) {
        int64_t m1 = std::min(M, m0 + blk.rows);
        at::Tensor af = rows(a, b0, b1, m0, m1).to(at::kFloat);
        at::Tensor sf;
        if (s.defined()) sf = rows(s, b0, b1, m0, m1).slice(-1, n0, n1).to(at::kFloat);
        at::Tensor cf = fp32Op(c, sf, af, bf);
        rows(r, b0, b1, m0, m1).slice(-1, n0, n1).copy_(cf);  // the one rounding
      }
    }
  }
}

}  // namespace

void npuHalfGemm(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  std::optional<Call> call = parse(op, *stack);
  std::optional<std::vector<int64_t>> shape;
  if (call) shape = fastShape(*call);
  // A capturing stream records the op through the fallback (replay runs PyTorch's CPU kernel).
  bool capturing = shape && C10_UNLIKELY(graph::anyCapture()) && !inDeferredWork() &&
                   graph::captureOfCurrent(call->a.device().index()) != nullptr;
  if (!shape || capturing || !g_enabled.load(std::memory_order_relaxed) || nativeBf16(*call)) {
    npuFallback(op, stack);
    return;
  }
  const Call& c = *call;
  c10::DeviceIndex device = c.a.device().index();
  c10::DeviceGuard guard(c.a.device());
  const int64_t wait_from = profiler::waitStart();
  waitCurrentStream(device);
  at::Tensor result;
  if (c.form == Form::kFunctional) {
    result = at::empty(*shape, c.a.options());
  } else {
    result = c.out;
    at::native::resize_output(result, *shape);
  }
  {
    // described as the fallback describes a kernel, so the planner's step trace has its shapes and FLOPs
    const size_t n = op.schema().arguments().size();
    profiler::KernelScope timed(op.schema().name(), device, stack->data() + stack->size() - n, n, wait_from);
    compute(c, result, device);
    if (timed.shapes()) {
      c10::IValue out(result);
      timed.outputs(&out, 1);
    }
  }
  g_calls.fetch_add(1, std::memory_order_relaxed);
  torch::jit::drop(*stack, op.schema().arguments().size());
  torch::jit::push(*stack, result);
}

const std::vector<const char*>& halfGemmOps() {
  static const std::vector<const char*> names = {
      "mm",      "mm.out",      "bmm",      "bmm.out", "addmm",      "addmm.out", "addmm_",
      "baddbmm", "baddbmm.out", "baddbmm_", "addbmm",  "addbmm.out", "addbmm_",
  };
  return names;
}

int64_t setHalfGemmBlockBytes(int64_t bytes) { return g_block_bytes.exchange(std::max<int64_t>(bytes, 1024)); }

int64_t halfGemmBlockBytes() { return g_block_bytes.load(); }

bool setHalfKernelsEnabled(bool on) { return g_enabled.exchange(on); }

bool halfKernelsEnabled() { return g_enabled.load(std::memory_order_relaxed); }

bool setHalfGemmNativeBf16(bool on) { return g_native_bf16.exchange(on); }

bool halfGemmNativeBf16() { return g_native_bf16.load(std::memory_order_relaxed) && bf16simd::available(); }

int64_t halfGemmCalls() { return g_calls.load(); }

}  // namespace npudist::core
