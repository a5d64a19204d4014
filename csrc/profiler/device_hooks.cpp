#include "profiler/device_hooks.h"

#include <c10/util/irange.h>

#include <cmath>
#include <sstream>

namespace npudist::profiler {
namespace {

void dims(std::ostringstream& o, c10::IntArrayRef d) {
  o << '[';
  for (size_t i = 0; i < d.size(); ++i) o << (i ? "," : "") << d[i];
  o << ']';
}

int64_t nbytes(const at::Tensor& t) { return t.defined() ? t.numel() * int64_t(t.element_size()) : 0; }

// One JSON entry per IValue for each of the three descriptions; tensors count into `bytes`.
struct ArgWriter {
  std::ostringstream dims_, types_, strides_, concrete_;
  int64_t bytes = 0;
  bool first = true;

  void tensor(const at::Tensor& t) {
    if (!t.defined()) {
      dims_ << "[]";
      types_ << "\"\"";
      strides_ << "[]";
      return;
    }
    dims(dims_, t.sizes());
    types_ << '"' << c10::toString(t.scalar_type()) << '"';
    dims(strides_, t.strides());
    bytes += nbytes(t);
  }

  void add(const c10::IValue& v) {
    const char* sep = first ? "" : ",";
    first = false;
    dims_ << sep;
    types_ << sep;
    strides_ << sep;
    concrete_ << sep;
    if (v.isTensor()) {
      tensor(v.toTensor());
      concrete_ << "\"\"";
    } else if (v.isTensorList() || v.isOptionalTensorList()) {
      dims_ << '[';
      types_ << '[';
      strides_ << '[';
      bool f = true;
      auto each = [&](const at::Tensor& t) {
        if (!f) dims_ << ',', types_ << ',', strides_ << ',';
        f = false;
        tensor(t);
      };
      if (v.isTensorList()) {
        for (const at::Tensor& t : v.toTensorList()) each(t);
      } else {
        for (const std::optional<at::Tensor> t : v.toOptionalTensorList()) each(t.has_value() ? *t : at::Tensor());
      }
      dims_ << ']';
      types_ << ']';
      strides_ << ']';
      concrete_ << "\"\"";
    } else {
      dims_ << "[]";
      types_ << (v.isScalar() ? "\"Scalar\"" : v.isIntList() ? "\"ScalarList\"" : "\"\"");
      strides_ << "[]";
      if (v.isBool()) {
        concrete_ << (v.toBool() ? "true" : "false");
      } else if (v.isInt()) {
        concrete_ << v.toInt();
      } else if (v.isDouble() && std::isfinite(v.toDouble())) {
        concrete_ << v.toDouble();
      } else if (v.isIntList()) {
        dims(concrete_, v.toDimVector());
      } else {
        concrete_ << "\"\"";
      }
    }
  }

  std::string list(std::ostringstream& o) { return "[" + o.str() + "]"; }
};

}  // namespace

void describeKernelInputs(DeviceScope& scope, const c10::IValue* args, size_t n) {
  ArgWriter w;
  for (size_t i = 0; i < n; ++i) w.add(args[i]);
  scope.arg("Input Dims", w.list(w.dims_));
  scope.arg("Input type", w.list(w.types_));
  scope.arg("Input Strides", w.list(w.strides_));
  scope.arg("Concrete Inputs", w.list(w.concrete_));
  scope.arg("bytes read", std::to_string(w.bytes));
}

void describeKernelOutputs(DeviceScope& scope, const c10::IValue* rets, size_t n) {
  ArgWriter w;
  for (size_t i = 0; i < n; ++i) w.add(rets[i]);
  scope.arg("Output Dims", w.list(w.dims_));
  scope.arg("Output type", w.list(w.types_));
  scope.arg("bytes written", std::to_string(w.bytes));
}

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
