#include "profiler/device_hooks.h"

namespace npudist::profiler {

std::string kernelName(const std::string& op_name) { return op_name + " (npu kernel)"; }

void describeCopy(DeviceScope& scope, const at::Tensor& src, const at::Tensor& dst) {
  const bool from_npu = src.is_privateuseone(), to_npu = dst.is_privateuseone();
  const char* name = from_npu && to_npu ? "Memcpy DtoD (npu -> npu)"
                     : from_npu         ? "Memcpy DtoH (npu -> Host)"
                                        : "Memcpy HtoD (Host -> npu)";
  scope.event().name = name;
  scope.arg("bytes", std::to_string(dst.numel() * dst.element_size()));
  scope.arg("src", src.device().str(), true);
  scope.arg("dst", dst.device().str(), true);
}

void describeGraphReplay(DeviceScope& scope, size_t nodes) {
  scope.event().name = "npu graph replay";
  scope.arg("nodes", std::to_string(nodes));
}

}  // namespace npudist::profiler
