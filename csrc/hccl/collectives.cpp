// The c10d entry points of ProcessGroupHCCL: each checks its arguments on
// this rank (a failure is announced to the peers, see rejectInput), then
// submits a body that runs the collective on dense tensors.
#include <ATen/MemoryOverlap.h>
#include <c10/util/Exception.h>

#include <numeric>

#include "hccl/process_group_hccl.h"

namespace npudist::hccl {
namespace {

bool supportedDtype(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat:
    case c10::kDouble:
    case c10::kHalf:
    case c10::kBFloat16:
    case c10::kChar:
    case c10::kShort:
    case c10::kInt:
    case c10::kLong:
    case c10::kByte:
    case c10::kBool:
      return true;
    default:
      return false;
  }
}

// Why these tensors cannot take part in a collective, or "".
std::string checkTensors(const std::vector<at::Tensor>& ts, const char* what) {
  c10::optional<c10::Device> device;
  for (size_t i = 0; i < ts.size(); ++i) {
    const at::Tensor& t = ts[i];
    if (!t.defined()) return c10::str(what, "[", i, "] is an undefined tensor");
    if (t.layout() != c10::kStrided)
      return c10::str(what, "[", i, "] is a ", t.layout(), " tensor; hccl needs dense (strided) tensors");
    if (!t.device().is_cpu() && !t.device().is_privateuseone())
      return c10::str(what, "[", i, "] is on ", t.device(), "; hccl takes npu or cpu tensors");
    if (!supportedDtype(t.scalar_type()))
      return c10::str(what, "[", i, "] has dtype ", t.scalar_type(),
                      ", which hccl does not support (float32, float64, float16, bfloat16, int8, int16, int32, int64, "
                      "uint8, bool)");
    if (!t.is_contiguous() && at::has_internal_overlap(t) == at::MemOverlap::Yes)
      return c10::str(what, "[", i,
                      "] has elements that share memory (an expand()ed or stride-0 view); hccl needs "
                      "each element in its own memory: pass .contiguous() or .clone() of it");
    if (device && *device != t.device())
      return c10::str(what, " mix devices (", *device, " and ", t.device(),
                      "); put every tensor of a collective on one device");
    device = t.device();
  }
  return "";
}

std::string checkSameDtype(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  for (const auto& x : a)
    for (const auto& y : b)
      if (x.scalar_type() != y.scalar_type())
        return c10::str("input and output dtypes differ (", x.scalar_type(), " vs ", y.scalar_type(), ")");
  return "";
}

RedOp toRedOp(const c10d::ReduceOp& op, std::string* why) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return RedOp::kSum;
    case c10d::ReduceOp::AVG:
      return RedOp::kAvg;
    case c10d::ReduceOp::PRODUCT:
      return RedOp::kProduct;
    case c10d::ReduceOp::MIN:
      return RedOp::kMin;
    case c10d::ReduceOp::MAX:
      return RedOp::kMax;
    case c10d::ReduceOp::PREMUL_SUM:
      return RedOp::kPremulSum;
    default:
      *why = "ReduceOp.BAND/BOR/BXOR are not supported by hccl (use SUM, AVG, PRODUCT, MIN, MAX or PREMUL_SUM)";
      return RedOp::kSum;
  }
}

// The PREMUL_SUM factor, read when the collective runs (it may be a tensor
// produced by earlier work).
double premulFactor(const c10d::ReduceOp& op) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM || !op.supplement_) return 1.0;
  auto* s = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
  if (!s) return 1.0;
  return s->tensor_factor.defined() ? s->tensor_factor.item<double>() : s->double_factor;
}

std::string checkReduce(const c10d::ReduceOp& op, const at::Tensor& t, RedOp* out) {
  std::string why;
  *out = toRedOp(op, &why);
  if (!why.empty()) return why;
  return checkReduction(toDType(t.scalar_type()), *out);
}

// The common case of one tensor, checked without building any message:
// true when checkTensors and checkReduce would pass (anything else takes
// those checks, which name the problem).
bool plainReduction(const std::vector<at::Tensor>& ts, const c10d::ReduceOp& op, RedOp* out) {
  if (ts.size() != 1) return false;
  const at::Tensor& t = ts[0];
  if (!t.defined() || t.layout() != c10::kStrided || !t.is_contiguous()) return false;  // (others: full checks)
  const c10::Device d = t.device();
  if (!d.is_cpu() && !d.is_privateuseone()) return false;
  const c10::ScalarType st = t.scalar_type();
  if (!supportedDtype(st)) return false;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      *out = RedOp::kSum;
      return true;
    case c10d::ReduceOp::PRODUCT:
      *out = RedOp::kProduct;
      return true;
    case c10d::ReduceOp::MIN:
      *out = RedOp::kMin;
      return true;
    case c10d::ReduceOp::MAX:
      *out = RedOp::kMax;
      return true;
    default:
      return false;  // AVG, PREMUL_SUM (floating only) and the unsupported ones
  }
}

std::string checkRoot(int64_t root, int size) {
  if (root < 0 || root >= size) return c10::str("root rank ", root, " is out of range for a group of ", size, " ranks");
  return "";
}

// A tensor the engine can use directly; non-contiguous ones go through a
// contiguous copy (written back for outputs).
struct Dense {
  at::Tensor user, work;
  static Dense in(const at::Tensor& t) { return {t, t.is_contiguous() ? t : t.contiguous()}; }
  static Dense out(const at::Tensor& t) {
    return {t, t.is_contiguous() ? t : at::empty_like(t, at::MemoryFormat::Contiguous)};
  }
  void writeBack() {
    if (!work.is_same(user)) user.copy_(work);
  }
};

// Several outputs at once (all_gather lists, gather, all_to_all lists).
struct DenseList {
  std::vector<Dense> items;
  std::vector<at::Tensor> work;
  static DenseList out(const std::vector<at::Tensor>& ts) {
    DenseList l;
    for (const auto& t : ts) l.items.push_back(Dense::out(t)), l.work.push_back(l.items.back().work);
    return l;
  }
  void writeBack() {
    for (auto& d : items) d.writeBack();
  }
};

// Whether every tensor of a list has the same number of elements.
bool sameNumel(const std::vector<at::Tensor>& ts) {
  for (const auto& t : ts)
    if (t.numel() != ts.front().numel()) return false;
  return true;
}

// The n equal parts of a dense buffer (for the *_tensor forms); an empty
// buffer gives n empty parts.
std::vector<at::Tensor> equalParts(const at::Tensor& dense, int n) {
  at::Tensor flat1 = dense.view({-1});
  if (dense.numel() == 0) return std::vector<at::Tensor>(size_t(n), flat1);
  return flat1.chunk(n);
}

std::vector<at::Tensor> flat(const std::vector<std::vector<at::Tensor>>& v) {
  std::vector<at::Tensor> out;
  for (const auto& l : v) out.insert(out.end(), l.begin(), l.end());
  return out;
}

}  // namespace

#define HCCL_REJECT_IF(op, expr)              \
  do {                                        \
    std::string why_ = (expr);                \
    if (!why_.empty()) rejectInput(op, why_); \
  } while (0)

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  HCCL_REJECT_IF(Op::kBroadcast, tensors.size() == 1 ? "" : "broadcast takes exactly one tensor per rank");
  HCCL_REJECT_IF(Op::kBroadcast, checkTensors(tensors, "tensor"));
  HCCL_REJECT_IF(Op::kBroadcast, checkRoot(opts.rootRank, size_));
  at::Tensor t = tensors[0];
  int root = int(opts.rootRank);
  return submit(c10d::OpType::BROADCAST, "broadcast", tensors, tensors, opts.asyncOp, [t, root](Engine& e) {
    Dense d = Dense::in(t);
    e.broadcast(d.work, root);
    d.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  RedOp op;
  if (!plainReduction(tensors, opts.reduceOp, &op)) {
    HCCL_REJECT_IF(Op::kAllreduce, tensors.size() == 1 ? "" : "all_reduce takes exactly one tensor per rank");
    HCCL_REJECT_IF(Op::kAllreduce, checkTensors(tensors, "tensor"));
    HCCL_REJECT_IF(Op::kAllreduce, checkReduce(opts.reduceOp, tensors[0], &op));
  }
  if (op != RedOp::kPremulSum) {
    // The latency path's body: a pointer and the op, small and trivially
    // copyable enough for std::function's inline storage (no allocation per
    // collective). The tensor outlives every run of the body: the
    // collective's OpState holds it (outputs) until the body has run, and a
    // graph capture's closure holds it for every replay.
    at::TensorImpl* impl = tensors[0].unsafeGetTensorImpl();
    return submit(c10d::OpType::ALLREDUCE, "all_reduce", tensors, tensors, opts.asyncOp, [impl, op](Engine& e) {
      Dense d = Dense::in(at::Tensor(c10::intrusive_ptr<at::TensorImpl, at::UndefinedTensorImpl>::reclaim_copy(impl)));
      e.allreduce(d.work, op, 1.0);
      d.writeBack();
    });
  }
  at::Tensor t = tensors[0];
  c10d::ReduceOp rop = opts.reduceOp;
  return submit(c10d::OpType::ALLREDUCE, "all_reduce", tensors, tensors, opts.asyncOp, [t, op, rop](Engine& e) {
    Dense d = Dense::in(t);
    e.allreduce(d.work, op, premulFactor(rop));
    d.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  HCCL_REJECT_IF(Op::kAllreduce, checkTensors(tensors, "tensors"));
  RedOp op = RedOp::kSum;
  for (const auto& t : tensors) HCCL_REJECT_IF(Op::kAllreduce, checkReduce(opts.reduceOp, t, &op));
  std::vector<at::Tensor> ts = tensors;
  c10d::ReduceOp rop = opts.reduceOp;
  return submit(c10d::OpType::ALLREDUCE_COALESCED, "all_reduce_coalesced", tensors, tensors, opts.asyncOp,
                [ts, op, rop](Engine& e) {
                  for (const auto& t : ts) {
                    Dense d = Dense::in(t);
                    e.allreduce(d.work, op, premulFactor(rop));
                    d.writeBack();
                  }
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  HCCL_REJECT_IF(Op::kReduce, tensors.size() == 1 ? "" : "reduce takes exactly one tensor per rank");
  HCCL_REJECT_IF(Op::kReduce, checkTensors(tensors, "tensor"));
  HCCL_REJECT_IF(Op::kReduce, checkRoot(opts.rootRank, size_));
  RedOp op;
  HCCL_REJECT_IF(Op::kReduce, checkReduce(opts.reduceOp, tensors[0], &op));
  at::Tensor t = tensors[0];
  c10d::ReduceOp rop = opts.reduceOp;
  int root = int(opts.rootRank);
  return submit(c10d::OpType::REDUCE, "reduce", tensors, tensors, opts.asyncOp, [t, op, rop, root](Engine& e) {
    Dense d = Dense::in(t);
    e.reduce(d.work, op, premulFactor(rop), root);
    d.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllgatherOptions& opts) {
  HCCL_REJECT_IF(Op::kAllgather, inputs.size() == 1 && outputs.size() == 1
                                     ? ""
                                     : "all_gather takes one input tensor and one output list per rank");
  HCCL_REJECT_IF(Op::kAllgather, outputs[0].size() == size_t(size_)
                                     ? ""
                                     : c10::str("all_gather needs an output list of ", size_,
                                                " tensors (the group size), got ", outputs[0].size()));
  HCCL_REJECT_IF(Op::kAllgather, checkTensors(flat({inputs, outputs[0]}), "tensors"));
  HCCL_REJECT_IF(Op::kAllgather, checkSameDtype(inputs, outputs[0]));
  at::Tensor in = inputs[0];
  std::vector<at::Tensor> outs = outputs[0];
  if (!sameNumel(outs)) {
    // Outputs of different sizes, one per rank's input (ProcessGroupNCCL runs these as one
    // broadcast per rank): each rank's input goes to outputs[rank] on every rank.
    HCCL_REJECT_IF(Op::kAllgather,
                   outs[size_t(rank_)].numel() == in.numel()
                       ? ""
                       : c10::str("all_gather output tensor ", rank_, " (this rank's) must have the input's ",
                                  in.numel(), " elements, got ", outs[size_t(rank_)].numel()));
    const int self = rank_;
    return submit(c10d::OpType::ALLGATHER, "all_gather", inputs, outs, opts.asyncOp, [in, outs, self](Engine& e) {
      for (int r = 0; r < int(outs.size()); ++r) {
        Dense d = Dense::out(outs[size_t(r)]);
        if (r == self) d.work.view({-1}).copy_(in.reshape({-1}));
        e.broadcast(d.work, r);
        d.writeBack();
      }
    });
  }
  for (const auto& o : outs)
    HCCL_REJECT_IF(Op::kAllgather, o.numel() == in.numel()
                                       ? ""
                                       : c10::str("all_gather output tensors must have the input's ", in.numel(),
                                                  " elements, got ", o.numel()));
  return submit(c10d::OpType::ALLGATHER, "all_gather", inputs, outs, opts.asyncOp, [in, outs](Engine& e) {
    Dense di = Dense::in(in);
    DenseList dout = DenseList::out(outs);
    e.allgather(di.work, dout.work);
    dout.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::AllgatherOptions& opts) {
  HCCL_REJECT_IF(Op::kAllgather, checkTensors({input, output}, "input and output"));
  HCCL_REJECT_IF(Op::kAllgather, checkSameDtype({input}, {output}));
  HCCL_REJECT_IF(Op::kAllgather,
                 output.numel() == input.numel() * size_
                     ? ""
                     : c10::str("all_gather_into_tensor: the output must have group size x input elements (", size_,
                                " x ", input.numel(), "), got ", output.numel()));
  at::Tensor in = input, out = output;
  const int n = size_;
  return submit(c10d::OpType::_ALLGATHER_BASE, "all_gather_into_tensor", {input}, {output}, opts.asyncOp,
                [in, out, n](Engine& e) {
                  Dense di = Dense::in(in), dout = Dense::out(out);
                  std::vector<at::Tensor> parts = equalParts(dout.work, n);
                  e.allgather(di.work, parts);
                  dout.writeBack();
                });
}

// c10d's layout, as ProcessGroupGloo implements it: outputs[r][i] receives
// rank r's inputs[i]. The inputs travel as one buffer (one collective, one
// sequence number), so tensors of different shapes, empty ones included,
// cost one synchronisation.
c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                                     std::vector<at::Tensor>& inputs,
                                                                     const c10d::AllgatherOptions& opts) {
  HCCL_REJECT_IF(Op::kAllgather, !inputs.empty() ? "" : "all_gather_coalesced needs at least one input tensor");
  HCCL_REJECT_IF(Op::kAllgather, outputs.size() == size_t(size_)
                                     ? ""
                                     : c10::str("all_gather_coalesced needs one output list per rank (", size_,
                                                " lists, the group size), got ", outputs.size()));
  HCCL_REJECT_IF(Op::kAllgather, checkTensors(inputs, "input_tensor_list"));
  for (size_t r = 0; r < outputs.size(); ++r) {
    HCCL_REJECT_IF(Op::kAllgather, outputs[r].size() == inputs.size()
                                       ? ""
                                       : c10::str("all_gather_coalesced: output list ", r, " has ", outputs[r].size(),
                                                  " tensors; it needs one per input (", inputs.size(), ")"));
    HCCL_REJECT_IF(Op::kAllgather, checkTensors(flat({inputs, outputs[r]}), "tensors"));
    HCCL_REJECT_IF(Op::kAllgather, checkSameDtype(inputs, outputs[r]));
    for (size_t i = 0; i < inputs.size(); ++i)
      HCCL_REJECT_IF(Op::kAllgather,
                     outputs[r][i].numel() == inputs[i].numel()
                         ? ""
                         : c10::str("all_gather_coalesced: output_tensor_lists[", r, "][", i, "] has ",
                                    outputs[r][i].numel(), " elements; input ", i, " has ", inputs[i].numel()));
  }
  auto ins = inputs;
  auto outs = outputs;
  const int n = size_;
  return submit(c10d::OpType::ALLGATHER_COALESCED, "all_gather_coalesced", inputs, flat(outputs), opts.asyncOp,
                [ins, outs, n](Engine& e) {
                  std::vector<at::Tensor> flat_ins;
                  for (const auto& t : ins) flat_ins.push_back(t.reshape({-1}));
                  at::Tensor packed = at::cat(flat_ins);
                  at::Tensor gathered = at::empty({n, packed.numel()}, packed.options());
                  std::vector<at::Tensor> rows = gathered.unbind(0);
                  e.allgather(packed, rows);
                  for (int r = 0; r < n; ++r) {
                    int64_t offset = 0;
                    for (size_t i = 0; i < ins.size(); ++i) {
                      const at::Tensor& o = outs[size_t(r)][i];
                      o.copy_(rows[size_t(r)].narrow(0, offset, o.numel()).view(o.sizes()));
                      offset += o.numel();
                    }
                  }
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                 std::vector<at::Tensor>& inputs,
                                                                                 const c10d::AllgatherOptions& opts) {
  HCCL_REJECT_IF(Op::kAllgather,
                 outputs.size() == inputs.size() ? "" : "all_gather_into_tensor_coalesced needs one output per input");
  HCCL_REJECT_IF(Op::kAllgather, checkTensors(flat({inputs, outputs}), "tensors"));
  for (size_t i = 0; i < inputs.size(); ++i)
    HCCL_REJECT_IF(Op::kAllgather, outputs[i].numel() == inputs[i].numel() * size_
                                       ? ""
                                       : c10::str("output ", i, " must have group size x input elements"));
  auto ins = inputs;
  auto outs = outputs;
  const int n = size_;
  return submit(c10d::OpType::COALESCED, "all_gather_into_tensor_coalesced", inputs, outputs, opts.asyncOp,
                [ins, outs, n](Engine& e) {
                  for (size_t i = 0; i < ins.size(); ++i) {
                    Dense di = Dense::in(ins[i]), dout = Dense::out(outs[i]);
                    std::vector<at::Tensor> parts = equalParts(dout.work, n);
                    e.allgather(di.work, parts);
                    dout.writeBack();
                  }
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::GatherOptions& opts) {
  HCCL_REJECT_IF(Op::kGather, checkRoot(opts.rootRank, size_));
  HCCL_REJECT_IF(Op::kGather, inputs.size() == 1 ? "" : "gather takes exactly one input tensor per rank");
  const bool is_root = rank_ == opts.rootRank;
  if (is_root) {
    HCCL_REJECT_IF(Op::kGather, outputs.size() == 1 && outputs[0].size() == size_t(size_)
                                    ? ""
                                    : c10::str("gather: the root needs a gather_list of ", size_, " tensors"));
    for (const auto& o : outputs[0])
      HCCL_REJECT_IF(Op::kGather,
                     o.numel() == inputs[0].numel() ? "" : "gather_list tensors must have the input's size");
  } else {
    HCCL_REJECT_IF(Op::kGather,
                   outputs.empty() || outputs[0].empty() ? "" : "gather: only the root passes a gather_list");
  }
  std::vector<at::Tensor> outs = is_root ? outputs[0] : std::vector<at::Tensor>{};
  HCCL_REJECT_IF(Op::kGather, checkTensors(flat({inputs, outs}), "tensors"));
  at::Tensor in = inputs[0];
  int root = int(opts.rootRank);
  return submit(c10d::OpType::GATHER, "gather", inputs, outs, opts.asyncOp, [in, outs, root](Engine& e) {
    Dense di = Dense::in(in);
    DenseList dout = DenseList::out(outs);
    e.gather(di.work, dout.work, root);
    dout.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::scatter(std::vector<at::Tensor>& outputs,
                                                         std::vector<std::vector<at::Tensor>>& inputs,
                                                         const c10d::ScatterOptions& opts) {
  HCCL_REJECT_IF(Op::kScatter, checkRoot(opts.rootRank, size_));
  HCCL_REJECT_IF(Op::kScatter, outputs.size() == 1 ? "" : "scatter takes exactly one output tensor per rank");
  const bool is_root = rank_ == opts.rootRank;
  if (is_root) {
    HCCL_REJECT_IF(Op::kScatter, inputs.size() == 1 && inputs[0].size() == size_t(size_)
                                     ? ""
                                     : c10::str("scatter: the root needs a scatter_list of ", size_, " tensors"));
    for (const auto& i : inputs[0])
      HCCL_REJECT_IF(Op::kScatter,
                     i.numel() == outputs[0].numel() ? "" : "scatter_list tensors must have the output's size");
  } else {
    HCCL_REJECT_IF(Op::kScatter,
                   inputs.empty() || inputs[0].empty() ? "" : "scatter: only the root passes a scatter_list");
  }
  std::vector<at::Tensor> ins = is_root ? inputs[0] : std::vector<at::Tensor>{};
  HCCL_REJECT_IF(Op::kScatter, checkTensors(flat({ins, outputs}), "tensors"));
  at::Tensor out = outputs[0];
  int root = int(opts.rootRank);
  return submit(c10d::OpType::SCATTER, "scatter", ins, outputs, opts.asyncOp, [ins, out, root](Engine& e) {
    std::vector<at::Tensor> work;
    for (const auto& i : ins) work.push_back(i.contiguous());
    Dense dout = Dense::out(out);
    e.scatter(work, dout.work, root);
    dout.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
  HCCL_REJECT_IF(Op::kReduceScatter, outputs.size() == 1 && inputs.size() == 1
                                         ? ""
                                         : "reduce_scatter takes one output tensor and one input list per rank");
  HCCL_REJECT_IF(Op::kReduceScatter, inputs[0].size() == size_t(size_)
                                         ? ""
                                         : c10::str("reduce_scatter needs an input list of ", size_, " tensors"));
  HCCL_REJECT_IF(Op::kReduceScatter, checkTensors(flat({outputs, inputs[0]}), "tensors"));
  HCCL_REJECT_IF(Op::kReduceScatter, checkSameDtype(outputs, inputs[0]));
  RedOp op;
  HCCL_REJECT_IF(Op::kReduceScatter, checkReduce(opts.reduceOp, outputs[0], &op));
  at::Tensor out = outputs[0];
  std::vector<at::Tensor> ins = inputs[0];
  c10d::ReduceOp rop = opts.reduceOp;
  if (!sameNumel(ins)) {
    // Inputs of different sizes, one per rank's output (ProcessGroupNCCL runs these as one reduce
    // per rank): inputs[r] of every rank reduce into rank r's output. Non-root inputs are reduced
    // from a copy, so the caller's input list is left as it was.
    HCCL_REJECT_IF(Op::kReduceScatter,
                   ins[size_t(rank_)].numel() == out.numel()
                       ? ""
                       : c10::str("reduce_scatter input tensor ", rank_, " (this rank's) must have the output's ",
                                  out.numel(), " elements, got ", ins[size_t(rank_)].numel()));
    const int self = rank_;
    return submit(c10d::OpType::REDUCE_SCATTER, "reduce_scatter", ins, outputs, opts.asyncOp,
                  [ins, out, op, rop, self](Engine& e) {
                    for (int r = 0; r < int(ins.size()); ++r) {
                      if (r == self) {
                        Dense d = Dense::out(out);
                        d.work.view({-1}).copy_(ins[size_t(r)].reshape({-1}));
                        e.reduce(d.work, op, premulFactor(rop), r);
                        d.writeBack();
                      } else {
                        at::Tensor scratch = ins[size_t(r)].clone(at::MemoryFormat::Contiguous);
                        e.reduce(scratch, op, premulFactor(rop), r);
                      }
                    }
                  });
  }
  for (const auto& i : ins)
    HCCL_REJECT_IF(Op::kReduceScatter,
                   i.numel() == out.numel() ? "" : "reduce_scatter input tensors must have the output's size");
  return submit(c10d::OpType::REDUCE_SCATTER, "reduce_scatter", ins, outputs, opts.asyncOp,
                [ins, out, op, rop](Engine& e) {
                  std::vector<at::Tensor> work;
                  for (const auto& i : ins) work.push_back(i.contiguous());
                  Dense dout = Dense::out(out);
                  e.reduceScatter(work, dout.work, op, premulFactor(rop));
                  dout.writeBack();
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::ReduceScatterOptions& opts) {
  HCCL_REJECT_IF(Op::kReduceScatter, checkTensors({input, output}, "input and output"));
  HCCL_REJECT_IF(Op::kReduceScatter, checkSameDtype({input}, {output}));
  HCCL_REJECT_IF(Op::kReduceScatter,
                 input.numel() == output.numel() * size_
                     ? ""
                     : c10::str("reduce_scatter_tensor: the input must have group size x output elements (", size_,
                                " x ", output.numel(), "), got ", input.numel()));
  RedOp op;
  HCCL_REJECT_IF(Op::kReduceScatter, checkReduce(opts.reduceOp, output, &op));
  at::Tensor in = input, out = output;
  c10d::ReduceOp rop = opts.reduceOp;
  const int n = size_;
  return submit(c10d::OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", {input}, {output}, opts.asyncOp,
                [in, out, op, rop, n](Engine& e) {
                  Dense di = Dense::in(in), dout = Dense::out(out);
                  std::vector<at::Tensor> parts = equalParts(di.work, n);
                  e.reduceScatter(parts, dout.work, op, premulFactor(rop));
                  dout.writeBack();
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  HCCL_REJECT_IF(Op::kReduceScatter,
                 outputs.size() == inputs.size() ? "" : "reduce_scatter_tensor_coalesced needs one output per input");
  HCCL_REJECT_IF(Op::kReduceScatter, checkTensors(flat({inputs, outputs}), "tensors"));
  RedOp op = RedOp::kSum;
  for (size_t i = 0; i < inputs.size(); ++i) {
    HCCL_REJECT_IF(Op::kReduceScatter, inputs[i].numel() == outputs[i].numel() * size_
                                           ? ""
                                           : c10::str("input ", i, " must have group size x output elements"));
    HCCL_REJECT_IF(Op::kReduceScatter, checkReduce(opts.reduceOp, outputs[i], &op));
  }
  auto ins = inputs;
  auto outs = outputs;
  c10d::ReduceOp rop = opts.reduceOp;
  const int n = size_;
  return submit(c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, "reduce_scatter_tensor_coalesced", inputs, outputs,
                opts.asyncOp, [ins, outs, op, rop, n](Engine& e) {
                  for (size_t i = 0; i < ins.size(); ++i) {
                    Dense di = Dense::in(ins[i]), dout = Dense::out(outs[i]);
                    std::vector<at::Tensor> parts = equalParts(di.work, n);
                    e.reduceScatter(parts, dout.work, op, premulFactor(rop));
                    dout.writeBack();
                  }
                });
}

namespace {

// Splits dim 0 of `t` by `splits` (rows); empty splits mean equal parts.
std::string splitRows(const at::Tensor& t, const std::vector<int64_t>& splits, int n, const char* what,
                      std::vector<int64_t>* rows) {
  const int64_t dim0 = t.dim() ? t.size(0) : t.numel();
  if (splits.empty()) {
    if (dim0 % n != 0)
      return c10::str(what, " has ", dim0, " rows, not divisible by the group size ", n, "; pass split sizes");
    rows->assign(size_t(n), dim0 / n);
    return "";
  }
  if (splits.size() != size_t(n))
    return c10::str(what, " split sizes have ", splits.size(), " entries; the group has ", n, " ranks");
  for (int64_t s : splits)
    if (s < 0) return c10::str(what, " split sizes must not be negative");
  if (std::accumulate(splits.begin(), splits.end(), int64_t(0)) != dim0)
    return c10::str(what, " split sizes sum to ", std::accumulate(splits.begin(), splits.end(), int64_t(0)),
                    " but dim 0 is ", dim0);
  *rows = splits;
  return "";
}

std::vector<at::Tensor> rowParts(const at::Tensor& t, const std::vector<int64_t>& rows) {
  const int64_t dim0 = t.dim() ? t.size(0) : t.numel();
  const int64_t cols = dim0 ? t.numel() / dim0 : 0;
  at::Tensor flat = t.reshape({-1});
  std::vector<at::Tensor> parts;
  int64_t start = 0;
  for (int64_t r : rows) {
    parts.push_back(flat.narrow(0, start * cols, r * cols));
    start += r;
  }
  return parts;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                               std::vector<int64_t>& output_splits,
                                                               std::vector<int64_t>& input_splits,
                                                               const c10d::AllToAllOptions& opts) {
  HCCL_REJECT_IF(Op::kAlltoall, checkTensors({input, output}, "input and output"));
  HCCL_REJECT_IF(Op::kAlltoall, checkSameDtype({input}, {output}));
  std::vector<int64_t> in_rows, out_rows;
  HCCL_REJECT_IF(Op::kAlltoall, splitRows(input, input_splits, size_, "input", &in_rows));
  HCCL_REJECT_IF(Op::kAlltoall, splitRows(output, output_splits, size_, "output", &out_rows));
  at::Tensor in = input, out = output;
  return submit(c10d::OpType::ALLTOALL_BASE, "all_to_all_single", {input}, {output}, opts.asyncOp,
                [in, out, in_rows, out_rows](Engine& e) {
                  Dense di = Dense::in(in), dout = Dense::out(out);
                  std::vector<at::Tensor> ins = rowParts(di.work, in_rows), outs = rowParts(dout.work, out_rows);
                  e.alltoall(ins, outs);
                  dout.writeBack();
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions& opts) {
  HCCL_REJECT_IF(Op::kAlltoall,
                 inputs.size() == size_t(size_) && outputs.size() == size_t(size_)
                     ? ""
                     : c10::str("all_to_all needs ", size_, " input and output tensors (the group size)"));
  HCCL_REJECT_IF(Op::kAlltoall, checkTensors(flat({inputs, outputs}), "tensors"));
  HCCL_REJECT_IF(Op::kAlltoall, checkSameDtype(inputs, outputs));
  auto ins = inputs;
  auto outs = outputs;
  return submit(c10d::OpType::ALLTOALL, "all_to_all", inputs, outputs, opts.asyncOp, [ins, outs](Engine& e) {
    std::vector<at::Tensor> wi;
    for (const auto& i : ins) wi.push_back(i.contiguous());
    DenseList dout = DenseList::out(outs);
    e.alltoall(wi, dout.work);
    dout.writeBack();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "hccl send takes exactly one tensor");
  std::string why = checkTensors(tensors, "tensor");
  TORCH_CHECK_VALUE(why.empty(), "hccl send: ", why);
  TORCH_CHECK_VALUE(dst >= 0 && dst < size_ && dst != rank_, "hccl send: invalid destination rank ", dst, " (group of ",
                    size_, " ranks, this is rank ", rank_, ")");
  P2PItem item{true, dst, tag, tensors[0].contiguous(), {}};
  if (coalescing_) {
    coalesced_p2p_.push_back(item);
    return submit(c10d::OpType::SEND, "send", tensors, {}, true, [](Engine&) {}, dst);
  }
  return submit(
      c10d::OpType::SEND, "send", tensors, {}, true,
      [item](Engine& e) mutable {
        std::vector<P2PItem> items{item};
        e.p2p(items);
      },
      dst);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "hccl recv takes exactly one tensor");
  std::string why = checkTensors(tensors, "tensor");
  TORCH_CHECK_VALUE(why.empty(), "hccl recv: ", why);
  TORCH_CHECK_VALUE(src >= 0 && src < size_ && src != rank_, "hccl recv: invalid source rank ", src, " (group of ",
                    size_, " ranks, this is rank ", rank_, ")");
  at::Tensor t = tensors[0];
  P2PItem item{false, src, tag, t.is_contiguous() ? t : at::empty_like(t, at::MemoryFormat::Contiguous),
               t.is_contiguous() ? at::Tensor() : t};
  if (coalescing_) {
    coalesced_p2p_.push_back(item);
    return submit(c10d::OpType::RECV, "recv", {}, tensors, true, [](Engine&) {}, src);
  }
  auto work = submit(
      c10d::OpType::RECV, "recv", {}, tensors, true,
      [item](Engine& e) mutable {
        std::vector<P2PItem> items{item};
        e.p2p(items);
      },
      src);
  static_cast<WorkHCCL*>(work.get())->setSourceRank(std::make_shared<const std::atomic<int>>(src));
  return work;
}

// recv without a source (p2p_anysource.cpp has the design).
c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "hccl recv takes exactly one tensor");
  std::string why = checkTensors(tensors, "tensor");
  TORCH_CHECK_VALUE(why.empty(), "hccl recv: ", why);
  TORCH_CHECK_VALUE(size_ > 1, "hccl recv from any source: group '", engine_->group_name,
                    "' has no other rank to receive from");
  TORCH_CHECK_VALUE(!coalescing_,
                    "hccl: a recv without src cannot be part of a batch (batch_isend_irecv and "
                    "coalescing need the source rank of every recv)");
  const Topology& topo = engine_->topo;
  TORCH_CHECK_VALUE(topo.singleHost() || topo.local_ranks.size() == 1, "hccl recv from any source in group '",
                    engine_->group_name,
                    "': the group has ranks on this host and on other hosts; receiving from "
                    "any source is supported when all ranks share a host or all are on different hosts. Pass src=");
  at::Tensor t = tensors[0];
  at::Tensor dense = t.is_contiguous() ? t : at::empty_like(t, at::MemoryFormat::Contiguous);
  auto source = std::make_shared<std::atomic<int>>(-1);
  auto work =
      submit(c10d::OpType::RECVANYSOURCE, "recv", {}, tensors, true, [t, dense, tag, source](Engine& e) mutable {
        const int from = e.recvAnySource(dense, tag);
        if (!dense.is_same(t)) t.copy_(dense);
        source->store(from, std::memory_order_release);
      });
  static_cast<WorkHCCL*>(work.get())->setSourceRank(source);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::barrier(const c10d::BarrierOptions& opts) {
  // Blocking, like ProcessGroupNCCL's barrier: returns once every rank arrived.
  auto work = submit(c10d::OpType::BARRIER, "barrier", {}, {}, /*async_op=*/false, [](Engine& e) { e.barrier(); });
  return work;
}

}  // namespace npudist::hccl
