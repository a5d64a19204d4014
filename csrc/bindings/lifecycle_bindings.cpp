// Process lifecycle of the extension's threads (docs/lifecycle.md): the
// interpreter-exit shutdown npudist registers with atexit, and a status view
// for tests.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/stream.h"
#include "hccl/watchdog.h"
#include "util/env.h"
#include "util/shm_name.h"

namespace py = pybind11;

namespace npudist::bindings {

void registerLifecycle(py::module& m) {
  // For tests: the engine's side of the rules npurun and npudist._env mirror in Python.
  m.def(
      "_shm_job_prefix", [](const py::bytes& tag) { return shm::jobPrefix(std::string(tag)); },
      "npudist-<component>-: the start of every /dev/shm entry of job tag `tag` (util/shm_name.h).");
  m.def("_env_bool", &env::getBool, "util/env.h's getBool (for tests).");
  m.def("_env_int", &env::getInt, "util/env.h's getInt (for tests).");
  m.def("_env_float", &env::getFloat, "util/env.h's getFloat (for tests).");
  m.def("_env_choice", &env::getChoice, "util/env.h's getChoice (for tests).");
  m.def(
      "_shutdown_threads",
      [] {
        int joined = 0, detached = 0;
        {
          // Without the GIL: a finishing collective's callback may need it.
          py::gil_scoped_release nogil;
          // Queued work first (the watchdog still guards it), then the watchdog.
          joined = core::shutdownStreamWorkers();
          detached = hccl::Watchdog::get().stop(std::chrono::milliseconds(2000));
        }
        return py::make_tuple(joined, detached);
      },
      "Completes queued npu work, joins every stream worker and stops the hccl watchdog's threads; no worker "
      "starts afterwards (deferred work then runs on the queuing thread). Called by npudist at interpreter exit. "
      "Returns (stream workers joined, watchdog threads left detached because they were stuck in a store call).");
}

}  // namespace npudist::bindings
