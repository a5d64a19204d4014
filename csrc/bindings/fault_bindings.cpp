// Python access to fault injection (core/fault_inject.h): npudist.fault_inject
// parses NPUDIST_FAULT_INJECT and hands the specs that apply to this process
// over once, as dicts.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>

#include "core/fault_inject.h"

namespace py = pybind11;
namespace fault = npudist::core::fault;

namespace npudist::bindings {

namespace {

fault::Kind kindOf(const std::string& k) {
  if (k == "hang") return fault::Kind::kHang;
  if (k == "kill") return fault::Kind::kKill;
  if (k == "slow") return fault::Kind::kSlow;
  if (k == "oom") return fault::Kind::kOom;
  if (k == "store_down") return fault::Kind::kStoreDown;
  if (k == "partition") return fault::Kind::kPartition;
  throw std::invalid_argument("unknown fault kind '" + k + "'");
}

}  // namespace

void registerFaultInject(py::module& m) {
  m.def(
      "_fault_configure",
      [](const std::vector<py::dict>& specs, int rank) {
        std::vector<fault::Spec> out;
        for (const py::dict& d : specs) {
          fault::Spec s;
          s.kind = kindOf(d["kind"].cast<std::string>());
          s.text = d["text"].cast<std::string>();
          auto num = [&](const char* key, auto& field) {
            if (d.contains(key) && !d[key].is_none()) field = d[key].cast<std::decay_t<decltype(field)>>();
          };
          num("collective", s.collective);
          num("every", s.every);
          num("delay_ms", s.delay_ms);
          num("alloc", s.alloc);
          num("after_s", s.after_s);
          num("peers", s.peers);
          if (s.every < 1) throw std::invalid_argument("every must be >= 1");
          out.push_back(std::move(s));
        }
        fault::configure(std::move(out), rank);
      },
      py::arg("specs"), py::arg("rank"),
      "Sets the faults of this process (npudist.fault_inject does, from NPUDIST_FAULT_INJECT).");
  m.def(
      "_fault_counts",
      [] {
        auto c = fault::counts();
        py::dict d;
        d["collectives"] = c.first;
        d["allocations"] = c.second;
        return d;
      },
      "How many collectives and npu allocations this process counted since injection was configured.");
}

}  // namespace npudist::bindings
