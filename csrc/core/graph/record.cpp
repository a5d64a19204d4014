// Recording kernels into a capture instead of running them.
//
// Output shapes come from the op's meta kernel; fresh outputs are allocated
// (from the graph's pool: the capturing stream is routed there) and the node
// calls the op's out= overload on them at replay, so replay allocates no
// outputs. In-place and out= ops are recorded as they are. An op without an
// out= overload is replayed functionally and its results copied into the
// captured outputs (one temporary per replay; correct, slower).
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/device.h"
#include "core/graph/capture.h"

namespace npudist::core::graph {
namespace {

// Ops whose output shape depends on tensor values: the shape is unknown
// until the kernel runs, so a graph (fixed addresses and shapes) cannot
// hold them, as on CUDA.
bool dataDependent(const std::string& name) {
  static const std::unordered_set<std::string> ops = {
      "aten::nonzero",
      "aten::nonzero_numpy",
      "aten::argwhere",
      "aten::unique",
      "aten::_unique",
      "aten::_unique2",
      "aten::unique_dim",
      "aten::unique_consecutive",
      "aten::unique_dim_consecutive",
      "aten::masked_select",
      "aten::_local_scalar_dense",
      "aten::repeat_interleave",
      "aten::bincount",
      "aten::histc",
      "aten::_ragged_idx",
  };
  return ops.count(name) > 0;
}

bool isWriteAlias(const c10::Argument& a) { return a.alias_info() && a.alias_info()->isWrite(); }

template <typename F>
c10::IValue mapValue(const c10::IValue& v, F f) {
  if (v.isTensor()) return f(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorList()) out.push_back(f(t));
    return out;
  }
  if (v.isList()) {
    c10::List<c10::IValue> list = v.toList();
    bool has_tensor = false;
    for (const c10::IValue& e : list) has_tensor = has_tensor || e.isTensor();
    if (!has_tensor) return v;
    c10::List<std::optional<at::Tensor>> out;
    for (const c10::IValue& e : list) {
      if (e.isTensor())
        out.push_back(f(e.toTensor()));
      else
        out.push_back(std::nullopt);
    }
    return out;
  }
  return v;
}

c10::IValue deviceTo(const c10::IValue& v, c10::DeviceType type) {
  if (v.isDevice() && v.toDevice().is_privateuseone()) return c10::Device(type);
  return v;
}

// The out= overload of a functional op: same name, arguments of the same
// names and types, plus one out argument per return. Cached per op.
std::optional<c10::OperatorHandle> outVariant(const c10::OperatorHandle& op) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::optional<c10::OperatorHandle>> cache;
  static std::unordered_map<std::string, std::vector<c10::OperatorName>> by_name;
  const auto& schema = op.schema();
  std::string key = schema.name() + "." + schema.overload_name();
  std::lock_guard<std::mutex> g(mutex);
  auto hit = cache.find(key);
  if (hit != cache.end()) return hit->second;
  if (by_name.empty())
    for (const auto& n : c10::Dispatcher::singleton().getAllOpNames()) by_name[n.name].push_back(n);
  std::optional<c10::OperatorHandle> found;
  for (const auto& name : by_name[schema.name()]) {
    auto h = c10::Dispatcher::singleton().findSchema(name);
    if (!h) continue;
    const auto& s = h->schema();
    std::vector<const c10::Argument*> ins;
    size_t outs = 0;
    for (const auto& a : s.arguments()) {
      if (a.is_out())
        ++outs;
      else
        ins.push_back(&a);
    }
    if (outs == 0 || outs != schema.returns().size() || ins.size() != schema.arguments().size()) continue;
    bool same = true;
    for (size_t i = 0; same && i < ins.size(); ++i) {
      const auto& a = schema.arguments()[i];
      same = a.name() == ins[i]->name() && *a.type() == *ins[i]->type();
    }
    size_t k = 0;
    for (const auto& a : s.arguments()) {
      if (!same || !a.is_out()) continue;
      same = *a.type() == *schema.returns()[k++].type();
    }
    if (same) {
      found = *h;
      break;
    }
  }
  cache.emplace(key, found);
  return found;
}

// Losses with a `reduction` argument: their CPU out= overloads reduce with
// an empty dim list, which newer kernels read as "no reduction" (the out
// tensor gets resized to the elementwise shape); the functional overloads
// are right. Replay those functionally.
bool reducesThroughOut(const c10::FunctionSchema& schema) {
  for (const auto& a : schema.arguments())
    if (a.name() == "reduction") return true;
  return false;
}

uint64_t valuesOf(const c10::IValue& v) {
  uint64_t n = 0;
  if (v.isTensor()) n = uint64_t(v.toTensor().numel());
  if (v.isTensorList())
    for (const at::Tensor& t : v.toTensorList()) n = std::max<uint64_t>(n, uint64_t(t.numel()));
  return n;
}

std::string shapesOf(const std::vector<c10::IValue>& vals) {
  std::string out;
  for (const auto& v : vals) {
    if (!v.isTensor()) continue;
    if (!out.empty()) out += ", ";
    out += c10::str(v.toTensor().sizes());
  }
  return out;
}

}  // namespace

void recordOp(Capture& c, const c10::OperatorHandle& op, torch::jit::Stack* stack, c10::StreamId stream,
              const at::Generator* gen, size_t gen_arg) {
  const auto& schema = op.schema();
  const std::string& name = schema.name();
  std::string full = schema.overload_name().empty() ? name : name + "." + schema.overload_name();
  if (dataDependent(name)) {
    failOnCapturingStream(&c, c10::str(full,
                                       " has an output shape that depends on tensor values, so it cannot "
                                       "be captured in an npu graph (use a fixed-size alternative, e.g. "
                                       "nonzero_static / masking with torch.where)"));
  }
  for (const auto& r : schema.returns()) {
    c10::TypeKind k = r.type()->kind();
    bool tensorish = k == c10::TypeKind::TensorType ||
                     (k == c10::TypeKind::ListType &&
                      r.type()->castRaw<c10::ListType>()->getElementType()->kind() == c10::TypeKind::TensorType);
    if (!tensorish)
      failOnCapturingStream(&c, c10::str(full, " returns a host value computed from tensor data (", *r.type(),
                                         "), which a captured graph cannot provide"));
  }
  {
    std::lock_guard<std::mutex> g(c.mutex);
    c.checkValid(full.c_str());
  }

  const size_t num_args = schema.arguments().size();
  const size_t first = stack->size() - num_args;
  std::vector<c10::IValue> args(stack->begin() + ptrdiff_t(first), stack->end());
  stack->resize(first);

  bool mutating = true;
  for (const auto& r : schema.returns()) mutating = mutating && isWriteAlias(r);
  bool has_out = false;
  for (const auto& a : schema.arguments()) has_out = has_out || a.is_out();

  // Results as the eager kernel returns them (npu tensors).
  std::vector<c10::IValue> results;
  if (!mutating || has_out) {
    std::vector<c10::IValue> meta;
    meta.reserve(num_args);
    for (size_t i = 0; i < num_args; ++i) {
      c10::IValue v = mapValue(args[i], [](const at::Tensor& t) -> at::Tensor {
        if (!t.defined() || !t.is_privateuseone()) return t;
        return at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
      });
      meta.push_back(deviceTo(v, c10::DeviceType::Meta));
    }
    if (gen) meta[gen_arg] = c10::IValue();  // meta kernels draw nothing
    try {
      op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta);
    } catch (const c10::Error& e) {
      failOnCapturingStream(&c, c10::str(full,
                                         " cannot be captured: its output shape could not be computed "
                                         "without running it (meta kernel: ",
                                         e.what_without_backtrace(), ")"));
    }
    if (!mutating) {
      c10::Device dev(c10::DeviceType::PrivateUse1, c.device);
      for (const c10::IValue& m : meta) {
        results.push_back(mapValue(m, [&](const at::Tensor& t) -> at::Tensor {
          if (!t.defined()) return t;
          return at::empty_strided(t.sizes(), t.strides(), t.options().device(dev));
        }));
      }
    } else {
      // out=: an out tensor of the wrong shape would be resized by the kernel.
      size_t k = 0;
      for (size_t i = 0; i < num_args; ++i) {
        if (!schema.arguments()[i].is_out()) continue;
        const c10::IValue& given = args[i];
        const c10::IValue& want = meta.size() > k ? meta[k] : c10::IValue();
        ++k;
        // The kernel would resize it (e.g. arange into an empty tensor): do
        // it now, in the graph's pool, so replay finds the right shape.
        if (given.isTensor() && want.isTensor() && given.toTensor().sizes() != want.toTensor().sizes())
          given.toTensor().resize_(want.toTensor().sizes());
      }
    }
  }
  if (mutating) {
    // Returns are the written arguments, matched by alias set.
    for (const auto& r : schema.returns()) {
      for (size_t i = 0; i < num_args; ++i) {
        const c10::AliasInfo* ai = schema.arguments()[i].alias_info();
        if (ai && ai->isWrite() && ai->beforeSets() == r.alias_info()->beforeSets()) {
          results.push_back(args[i]);
          break;
        }
      }
    }
  }

  Node node;
  node.stream = stream;
  node.name = full;
  uint64_t drawn = 0;
  for (const auto& v : results) drawn = std::max(drawn, valuesOf(v));
  {
    std::lock_guard<std::mutex> g(c.mutex);
    c.checkValid(full.c_str());
    auto alias = [&](const at::Tensor& t) -> at::Tensor {
      if (!t.defined() || !t.is_privateuseone()) return t;
      TORCH_CHECK(t.device().index() == c.device, full, " uses ", t.device(),
                  " while the graph captures npu:", int(c.device));
      return c.cpuAlias(t);
    };
    std::vector<c10::IValue> cpu_args;
    cpu_args.reserve(num_args);
    for (const auto& a : args) cpu_args.push_back(deviceTo(mapValue(a, alias), c10::DeviceType::CPU));
    if (mutating) {
      node.kind = Node::Kind::kOp;
      node.op = op;
      node.args = std::move(cpu_args);
    } else if (auto out_op = reducesThroughOut(schema) ? std::nullopt : outVariant(op)) {
      node.kind = Node::Kind::kOp;
      node.op = *out_op;
      size_t in = 0, k = 0;
      for (const auto& a : out_op->schema().arguments()) {
        if (a.is_out())
          node.args.push_back(mapValue(results[k++], alias));
        else
          node.args.push_back(cpu_args[in++]);
      }
    } else {
      node.kind = Node::Kind::kOpCopyBack;
      node.op = op;
      node.args = std::move(cpu_args);
      for (const auto& r : results) node.copy_dst.push_back(mapValue(r, alias));
    }
    if (gen) {
      int slot = -1;
      for (size_t i = 0; i < c.gens.size(); ++i)
        if (c.gens[i].gen.unsafeGetGeneratorImpl() == gen->unsafeGetGeneratorImpl()) slot = int(i);
      if (slot < 0) {
        c.gens.push_back({*gen, 0});
        slot = int(c.gens.size()) - 1;
      }
      node.gen_slot = slot;
      node.gen_arg = gen_arg;  // same position in the out= overload (inputs come first)
      node.rng_offset = c.gens[size_t(slot)].consumed;
      c.gens[size_t(slot)].consumed += (drawn + 3) / 4 * 4;
    }
    if (c.debug) node.detail = shapesOf(results);
    c.append(std::move(node));
  }
  for (auto& r : results) stack->push_back(std::move(r));
}

void recordCopy(Capture& c, const at::Tensor& src, const at::Tensor& dst, c10::StreamId stream) {
  std::lock_guard<std::mutex> g(c.mutex);
  c.checkValid("aten::copy_");
  Node node;
  node.kind = Node::Kind::kCopy;
  node.stream = stream;
  node.name = "aten::copy_";
  node.src = c.cpuAlias(src);
  node.dst = c.cpuAlias(dst);
  if (c.debug) node.detail = c10::str(src.sizes(), " ", src.scalar_type(), " -> ", dst.scalar_type());
  c.append(std::move(node));
}

void recordHost(Capture& c, std::string name, std::function<void()> fn, c10::StreamId stream) {
  std::lock_guard<std::mutex> g(c.mutex);
  c.checkValid(name.c_str());
  Node node;
  node.kind = Node::Kind::kHost;
  node.stream = stream;
  node.name = std::move(name);
  node.host = std::move(fn);
  c.append(std::move(node));
}

void recordKernelCall(Capture& c, std::string name, void* fn, std::vector<intptr_t> iargs,
                      const std::vector<at::Tensor>& tensors, c10::StreamId stream) {
  std::lock_guard<std::mutex> g(c.mutex);
  c.checkValid(name.c_str());
  Node node;
  node.kind = Node::Kind::kCall;
  node.stream = stream;
  node.name = std::move(name);
  node.fn = fn;
  node.iargs = std::move(iargs);
  for (const at::Tensor& t : tensors) {
    if (!t.defined() || !t.has_storage()) continue;
    if (t.device().type() == c10::DeviceType::PrivateUse1) {
      TORCH_CHECK(t.device().index() == c.device, node.name, ": an argument on ", t.device(),
                  " in a capture of npu:", int(c.device), " (multi-device graphs are not supported)");
      c.cpuAlias(t);  // keeps memory from outside the pool alive, as for recorded ops
    } else {
      node.keep.push_back(t.storage());
    }
  }
  if (c.debug) node.detail = c10::str(node.iargs.size(), " arguments");
  c.append(std::move(node));
}

}  // namespace npudist::core::graph
