"""One rank of tests/xp/test_numpy_absent.py: npudist without NumPy.

``import numpy`` fails in this process as when NumPy is not installed, from before anything else
runs: ``sys.modules["numpy"] = None`` (Python's own marker: ``import numpy`` raises
ModuleNotFoundError and ``importlib.util.find_spec("numpy")`` answers None, as for an absent
module; a sys.meta_path finder that raises would break torch._dynamo, which probes modules with
find_spec), plus a sys.meta_path finder that refuses any ``numpy.*`` submodule. Then torch, npu
ops, an hccl all_reduce and one FSDP2 step run, and ``import npudist.xp`` must fail with
ImportError naming NumPy. Prints one ``RESULT {...}`` line."""
import importlib.abc
import json
import sys


class _NoNumpy(importlib.abc.MetaPathFinder):
    """Makes ``import numpy.<sub>`` raise ModuleNotFoundError, as when NumPy is absent."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith("numpy."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by tests/xp/workers/no_numpy.py)", name=name)
        return None


sys.modules["numpy"] = None
sys.meta_path.insert(0, _NoNumpy())

import torch  # noqa: E402  (after the blocker: torch must load without NumPy)
import torch.distributed as dist  # noqa: E402  (after the blocker)
from torch.distributed.fsdp import fully_shard  # noqa: E402  (after the blocker)

import npudist  # noqa: E402  (after the blocker; registers the npu device)

out = {"numpy_loaded": sys.modules.get("numpy") is not None}
x = torch.arange(6, dtype=torch.float32, device="npu").reshape(2, 3)
out["npu_op"] = (x * 2 + 1).sum().item()

dist.init_process_group("hccl")
rank = dist.get_rank()
torch.npu.set_device(rank)
t = torch.full((4,), float(rank + 1), device="npu")
dist.all_reduce(t)
out["all_reduce"] = t.tolist()

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).to("npu")
fully_shard(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.ones(4, 8, device="npu")).pow(2).mean()
loss.backward()
opt.step()
out["fsdp_loss"] = loss.item()

try:
    import npudist.xp  # noqa: F401  (must fail: xp needs NumPy)
    out["xp_error"] = None
except ImportError as e:
    out["xp_error"] = str(e)
out["numpy_loaded_after"] = sys.modules.get("numpy") is not None
dist.destroy_process_group()
print("RESULT " + json.dumps(out), flush=True)
