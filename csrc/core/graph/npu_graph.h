// NpuGraph: the one graph implementation behind torch.npu.NPUGraph and
// torch.accelerator.Graph (at::GraphImplInterface, registered for "NPU").
//
// CUDA-graph semantics on the simulated device: capture_begin makes the
// current (non-default) stream record instead of run; kernels issued on it
// by any thread, and on streams forked from it through events, become
// nodes; outputs live in a private (or shared) pool of the caching
// allocator; replay runs the nodes from C++ on the baked-in addresses.
#pragma once

#include <ATen/core/GraphImplInterface.h>

#include <memory>
#include <string>
#include <vector>

#include "core/graph/capture.h"

namespace npudist::core::graph {

class NpuGraph final : public at::GraphImplInterface {
 public:
  explicit NpuGraph(const at::GraphImplArgs& args = {});
  ~NpuGraph() override;

  void capture_begin(c10::MempoolId_t pool = {0, 0},
                     at::GraphCaptureMode mode = at::GraphCaptureMode::Default) override;
  void capture_end() override;
  void instantiate() override;
  void replay() override;
  void reset() override;
  c10::MempoolId_t pool() const override;
  void enable_debug_mode() override;
  void debug_dump(const std::string& path) override;

  size_t numNodes() const { return nodes_.size(); }

 private:
  void discardCapture();
  void verifyOutputs(const Node& n);

  bool keep_graph_ = false;
  bool debug_ = false;
  std::unique_ptr<Capture> capture_;  // while capturing
  bool captured_ = false;
  bool instantiated_ = false;
  bool holds_pool_ = false;
  c10::DeviceIndex device_ = -1;
  c10::MempoolId_t pool_{0, 0};
  std::vector<Node> nodes_;
  std::vector<GeneratorSlot> gens_;
  std::vector<c10::Storage> keep_;  // CPU aliases of the storages the nodes use
  size_t max_args_ = 0;
  bool verified_ = false;  // the first replay checked out= outputs kept their shape
};

// A fresh pool id for graphs to share (torch.npu.graph_pool_handle()).
c10::MempoolId_t graphPoolHandle();

}  // namespace npudist::core::graph
