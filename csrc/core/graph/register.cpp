// Registers NpuGraph as the "NPU" graph implementation (torch.accelerator.Graph
// and torch.npu.NPUGraph both construct it through at::GraphImplRegistry).
// The key is PrivateUse1's name after rename_privateuse1_backend("npu").
#include "core/graph/npu_graph.h"

namespace at {
REGISTER_GRAPH_IMPL(NPU, npudist::core::graph::NpuGraph);
}  // namespace at
