// Groups spanning hosts: shared memory within each host, Gloo among one
// leader per host (docs/collectives.md, "How it works"). Only all_reduce and broadcast — the
// collectives whose volume matters across hosts here — are hierarchical;
// the others go through a Gloo group of all ranks (engine.cpp).
#include <c10/util/Exception.h>

#include "hccl/engine.h"

namespace npudist::hccl {

void Engine::hierAllreduce(at::Tensor& t, RedOp op, double premul) {
  const DType dtype = toDType(t.scalar_type());
  // 1. Reduce onto the host leader (local index 0); AVG sums here, divides at the end.
  const RedOp local_op = op == RedOp::kAvg ? RedOp::kSum : op;
  local_->reduce(t.data_ptr(), t.data_ptr(), t.numel(), dtype, local_op, premul, /*root=*/0, deadline());
  // 2. Leaders all-reduce the host partials with Gloo. If that fails, the
  //    hosts are out of step: abort, so local peers fail now, not at the timeout.
  if (gloo_leaders_) try {
      const bool is_bool = t.scalar_type() == at::kBool;
      const at::ScalarType wire = glooReductionDtype(t.scalar_type());
      at::Tensor view = wire == t.scalar_type() ? asCpu(t) : (is_bool ? asCpu(t).view(at::kByte) : asCpu(t).to(wire));
      c10d::AllreduceOptions o;
      o.reduceOp = glooOp(op, is_bool);
      std::vector<at::Tensor> v{view};
      glooWait(gloo_leaders_->allreduce(v, o));
      if (!is_bool && wire != t.scalar_type()) t.copy_(view);
      if (op == RedOp::kAvg) t.div_(topo.size);
    } catch (const std::exception& e) {
      local_->abort(std::string("the inter-host all_reduce failed: ") + e.what());
      throw;
    }
  // 3. Fan the result out within the host.
  local_->broadcast(t.data_ptr(), t.numel(), dtype, /*root=*/0, deadline());
}

void Engine::hierBroadcast(at::Tensor& t, int root) {
  const DType dtype = toDType(t.scalar_type());
  const int root_host = topo.host_of_rank[size_t(root)];
  // The root's host first spreads the data (so its leader has it), then the
  // leaders broadcast from the root's host, then the other hosts spread it.
  if (topo.my_host == root_host) {
    local_->broadcast(t.data_ptr(), t.numel(), dtype, topo.localIndexOf(root), deadline());
  }
  if (gloo_leaders_) try {
      std::vector<at::Tensor> v{asCpu(t).reshape({-1}).view(at::kByte)};
      c10d::BroadcastOptions o;
      o.rootRank = root_host;
      glooWait(gloo_leaders_->broadcast(v, o));
    } catch (const std::exception& e) {
      local_->abort(std::string("the inter-host broadcast failed: ") + e.what());
      throw;
    }
  if (topo.my_host != root_host) {
    local_->broadcast(t.data_ptr(), t.numel(), dtype, /*root=*/0, deadline());
  }
}

}  // namespace npudist::hccl
