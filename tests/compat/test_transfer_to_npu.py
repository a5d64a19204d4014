"""``from torch_npu.contrib import transfer_to_npu``: CUDA scripts run on npu."""
import pytest

from ._ranks import npurun

REDIRECTS = r'''
import os, tempfile, torch, torch.nn as nn, torch.distributed as dist
originals = {n: getattr(torch.cuda, n) for n in ("is_available", "device_count", "set_device", "Stream", "synchronize")}
orig_autocast, orig_ipg = torch.autocast, dist.init_process_group
from torch_npu.contrib import transfer_to_npu
from npudist.compat import transfer
assert transfer.is_enabled()
assert torch.cuda.is_available() and torch.cuda.device_count() == torch.npu.device_count()
torch.cuda.set_device(1)
checks = {
    'device="cuda"': torch.randn(2, device="cuda").device,
    'device="cuda:2"': torch.zeros(2, device="cuda:2").device,
    'device=torch.device("cuda", 3)': torch.ones(2, device=torch.device("cuda", 3)).device,
    ".cuda()": torch.zeros(2).cuda().device,
    ".cuda(2)": torch.zeros(2).cuda(2).device,
    ".to(2)": torch.zeros(2).to(2).device,
    '.to("cuda:3")': torch.zeros(2).to("cuda:3").device,
    '.to(device="cuda")': torch.zeros(2).to(device="cuda").device,
    "Module.cuda()": next(nn.Linear(2, 2).cuda().parameters()).device,
    'Module.to("cuda")': next(nn.Linear(2, 2).to("cuda").parameters()).device,
    "torch.tensor(device=cuda)": torch.tensor([1.0], device="cuda:0").device,
    "full_like(device=cuda)": torch.full_like(torch.zeros(1), 2.0, device="cuda").device,
}
for what, got in checks.items():
    print(what, got)
x = torch.randn(4, 4, device="cuda")
assert x.is_cuda and not torch.zeros(1).is_cuda
with torch.autocast("cuda", dtype=torch.bfloat16):
    assert (x @ x).dtype == torch.bfloat16
with torch.cuda.amp.autocast(dtype=torch.bfloat16):
    assert (x @ x).dtype == torch.bfloat16
assert torch.amp.GradScaler("cuda")._device == "npu" and torch.cuda.amp.GradScaler()._device == "npu"
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    y = x * 2
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("r"); torch.cuda.nvtx.range_pop()
with torch.cuda.nvtx.range("r"):
    pass
assert torch.cuda.memory_allocated() > 0 and torch.cuda.get_device_capability() == torch.npu.get_device_capability()
assert torch.cuda.is_bf16_supported()
# nccl -> hccl, a cuda device_id -> npu
store = tempfile.mktemp()
dist.init_process_group("nccl", init_method=f"file://{store}", rank=0, world_size=1,
                        device_id=torch.device("cuda", 1))
assert dist.get_backend() == "hccl" and dist.is_nccl_available()
t = torch.ones(2, device="cuda"); dist.all_reduce(t)
from torch.distributed.device_mesh import init_device_mesh
mesh = init_device_mesh("cuda", (1,))
assert mesh.device_type == "npu"
dist.destroy_process_group()
transfer_to_npu.disable()
assert not transfer.is_enabled()
assert all(getattr(torch.cuda, n) is f for n, f in originals.items()), "disable() restores torch.cuda"
assert torch.autocast is orig_autocast and dist.init_process_group is orig_ipg
assert not torch.cuda.is_available()
try:
    torch.zeros(1, device="cuda")
except (AssertionError, RuntimeError):
    print("OFF")
transfer.enable(); assert torch.zeros(1, device="cuda").is_npu; transfer.disable()
print("OK")
'''


def test_what_transfer_to_npu_redirects_and_that_disable_restores_it(python, tmp_path):
    r = python(REDIRECTS, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    lines = dict(line.rsplit(" ", 1) for line in r.stdout.splitlines() if line.count(" ") and "npu:" in line)
    assert lines == {
        'device="cuda"': "npu:1", 'device="cuda:2"': "npu:2", 'device=torch.device("cuda", 3)': "npu:3",
        ".cuda()": "npu:1", ".cuda(2)": "npu:2", ".to(2)": "npu:2", '.to("cuda:3")': "npu:3",
        '.to(device="cuda")': "npu:1", "Module.cuda()": "npu:1", 'Module.to("cuda")': "npu:1",
        "torch.tensor(device=cuda)": "npu:0", "full_like(device=cuda)": "npu:1"}, r.stdout
    assert "OFF" in r.stdout and r.stdout.strip().endswith("OK")


CUDA_GRAPH = '''
import torch
from torch_npu.contrib import transfer_to_npu
assert torch.cuda.CUDAGraph is torch.npu.NPUGraph and torch.cuda.graph is torch.npu.graph
x = torch.zeros(4, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    y = x + 1  # warm-up on a side stream, as CUDA-graph recipes do
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g, pool=torch.cuda.graph_pool_handle()):
    assert torch.cuda.is_current_stream_capturing()
    y = x * 2 + 1
x.fill_(3)
g.replay()
torch.cuda.synchronize()
print(y.device, y.tolist())
'''


def test_cuda_graph_api_is_npu_graphs(python, tmp_path):
    r = python(CUDA_GRAPH, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    assert r.stdout.strip().splitlines()[-1] == "npu:0 [7.0, 7.0, 7.0, 7.0]"


@pytest.mark.timeout(400)
def test_a_cuda_ddp_script_runs_unchanged_on_2_ranks():
    _, results = npurun("cuda_ddp.py", 2)
    for rank in (0, 1):
        (r,) = results[rank]
        assert r["backend"] == "hccl" and r["param_device"] == f"npu:{rank}" and r["is_cuda"]
        assert r["current"] == rank and r["memory_allocated"] > 0
        assert r["params_equal_across_ranks"], "DDP averaged the gradients of different data"
    assert results[0][0]["losses"] != results[1][0]["losses"]


@pytest.mark.timeout(400)
def test_a_cuda_fsdp2_script_runs_unchanged_on_2_ranks():
    _, results = npurun("cuda_fsdp2.py", 2)
    for rank in (0, 1):
        (r,) = results[rank]
        assert r["backend"] == "hccl" and r["mesh_device"] == "npu" and r["local_devices"] == [f"npu:{rank}"]
    assert results[0][0]["losses"] == results[1][0]["losses"]
    assert results[0][0]["max_diff_vs_unsharded"] < 1e-4


CHECKPOINTS_AND_OBJECTS = '''
import torch, torch.nn as nn
real_generator, real_event, real_load = torch.Generator, torch.Event, torch.load
from torch_npu.contrib import transfer_to_npu
m = nn.Linear(3, 2).cuda()
torch.save(m.state_dict(), "m.pt")
for i, where in enumerate(("cuda", "cuda:1", torch.device("cuda", 1), {"cuda:0": "cuda:1"}, None, "cpu")):
    sd = torch.load("m.pt", map_location=where)
    print("load", i, next(iter(sd.values())).device)
for g in (torch.Generator("cuda"), torch.Generator(device=torch.device("cuda", 1)), torch.Generator()):
    assert isinstance(g, torch.Generator) and isinstance(g, real_generator)
    print("generator", g.device)
assert torch.randn(2, device="cuda", generator=torch.Generator("cuda").manual_seed(0)).is_npu
e = torch.Event(device="cuda:0", enable_timing=True)
assert isinstance(e, torch.Event) and isinstance(e, real_event)
print("event", e.device)
ptr = torch.cuda.caching_allocator_alloc(1 << 20, torch.device("cuda:0"))
assert ptr and torch.cuda.memory_allocated(0) >= 1 << 20
torch.cuda.caching_allocator_delete(ptr)
torch.cuda.memory._record_memory_history(device=torch.device("cuda:0"))
assert torch.cuda.memory._snapshot()["segments"]
torch.cuda.memory._record_memory_history(None)
assert torch.cuda.default_generators is torch.npu.default_generators
# torch's own code reads CUDA-only property fields once torch.cuda looks available (Inductor's cache key)
assert torch.cuda.get_device_properties(0).total_memory == torch.npu.get_device_properties(0).total_memory
compiled = torch.compile(lambda a: a * 2 + 1)
assert compiled(torch.ones(3, device="cuda")).tolist() == [3.0, 3.0, 3.0]
transfer_to_npu.disable()
assert torch.Generator is real_generator and torch.Event is real_event and torch.load is real_load
print("OK")
'''


def test_cuda_checkpoints_generators_events_and_raw_allocations(python, tmp_path):
    """torch.load's map_location, torch.Generator/Event("cuda"), the torch.cuda raw-allocation and
    memory-history calls of CUDA scripts (the public behaviours torch_npu's transfer_to_npu tests), and
    torch.compile (was AttributeError: gcnArchName)."""
    r = python(CHECKPOINTS_AND_OBJECTS, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    out = r.stdout.splitlines()
    assert out[:6] == ["load 0 npu:0", "load 1 npu:1", "load 2 npu:1", "load 3 npu:1", "load 4 npu:0", "load 5 cpu"], out
    assert out[6:9] == ["generator npu:0", "generator npu:1", "generator cpu"], out
    assert out[9] == "event npu" and out[-1] == "OK", out


AUTOCAST_STATE = r'''
import torch
originals = {n: getattr(torch, n) for n in ("is_autocast_enabled", "get_autocast_dtype", "set_autocast_enabled",
                                           "set_autocast_dtype", "get_autocast_gpu_dtype", "set_autocast_gpu_dtype")}
import torch.cuda.random
orig_random_seed = torch.cuda.random.manual_seed
from torch_npu.contrib import transfer_to_npu
x = torch.ones(2, 2, device="cuda")
assert not torch.is_autocast_enabled() and not torch.is_autocast_enabled("cuda")
with torch.autocast("cuda", dtype=torch.bfloat16):
    # what model code asks before choosing a dtype (e.g. attention kernels casting to the autocast dtype)
    assert torch.is_autocast_enabled() and torch.is_autocast_enabled("cuda")
    assert torch.is_autocast_enabled(device_type="cuda") and torch.is_autocast_enabled("npu")
    assert torch.get_autocast_dtype("cuda") == torch.bfloat16 == torch.get_autocast_gpu_dtype()
    assert not torch.is_autocast_enabled("cpu")
    f = torch.compile(lambda a: a @ a if torch.is_autocast_enabled() else a + 1, backend="eager")
    assert f(x).dtype == torch.bfloat16 and f(x).tolist() == [[2.0, 2.0], [2.0, 2.0]]
with torch.cuda.amp.autocast():
    assert torch.is_autocast_enabled() and torch.get_autocast_gpu_dtype() == torch.float16
# the setters: the CUDA-only forms and "cuda" set npu's state
torch.set_autocast_enabled(True)
torch.set_autocast_gpu_dtype(torch.bfloat16)
assert torch.is_autocast_enabled("npu") and torch.get_autocast_dtype("npu") == torch.bfloat16
assert (x @ x).dtype == torch.bfloat16
torch.set_autocast_enabled("cuda", False)
torch.set_autocast_dtype("cuda", torch.float16)
assert not torch.is_autocast_enabled("npu") and torch.get_autocast_dtype("npu") == torch.float16
assert (x @ x).dtype == torch.float32
# the RNG functions through their own module (they reached CUDA's C functions)
torch.cuda.random.manual_seed(5)
a = torch.randn(3, device="cuda")
torch.cuda.manual_seed(5)
assert torch.equal(a, torch.randn(3, device="cuda"))
assert torch.equal(torch.cuda.random.get_rng_state(), torch.npu.get_rng_state())
transfer_to_npu.disable()
assert all(getattr(torch, n) is f for n, f in originals.items()), "disable() restores the autocast functions"
assert torch.cuda.random.manual_seed is orig_random_seed
print("OK")
'''


def test_autocast_state_functions_answer_for_npu(python, tmp_path):
    """Inside torch.autocast("cuda") a CUDA script's torch.is_autocast_enabled() / get_autocast_gpu_dtype()
    (breaker's finding: they answered False / float16 for the CUDA state nothing had set); and
    torch.cuda.random's functions (they raised AttributeError: torch._C._cuda_getDevice)."""
    r = python(AUTOCAST_STATE, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    assert r.stdout.strip().endswith("OK")


DCP_SAVE = r'''
import torch
from torch_npu.contrib import transfer_to_npu
import torch.distributed.checkpoint as dcp
dcp.save({"w": torch.arange(4.0, device="cuda")}, checkpoint_id="ckpt")
out = {"w": torch.zeros(4, device="cuda")}
dcp.load(out, checkpoint_id="ckpt")
assert out["w"].tolist() == [0.0, 1.0, 2.0, 3.0], out
print("OK")
'''


@pytest.mark.xfail(strict=True, reason="breaker: dcp.save under transfer_to_npu raises AssertionError('Tensor must be "
                   "on CPU'): DCP's FileSystemWriter asks torch._utils._get_available_device_type(), which says "
                   "'cuda' once torch.cuda.is_available() is True, and then does not copy npu tensors to the host; "
                   "a fix needs torch's private helper patched (not done, by the project's rules)")
def test_dcp_save_under_transfer_to_npu(python, tmp_path):
    r = python(DCP_SAVE, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    assert r.stdout.strip().endswith("OK")


@pytest.mark.timeout(120)
def test_torch_nccl_variables_of_a_cuda_script_apply_to_hccl():
    """TORCH_NCCL_ASYNC_ERROR_HANDLING=0 set by a CUDA script keeps its process alive after a collective
    timeout, as with ProcessGroupNCCL (breaker's finding: the watchdog's default ended it with SIGABRT);
    a TORCH_HCCL_* variable set explicitly wins over its TORCH_NCCL_* twin."""
    _, results = npurun("cuda_nccl_env.py", 2, env={"TORCH_HCCL_DESYNC_DEBUG": "0"}, timeout=100)
    (r0,) = results[0]
    assert r0["error"] and r0["error"].startswith("DistBackendError") and "timeout" in r0["error"], r0
    for rank in (0, 1):
        (r,) = results[rank]
        assert r["env"] == {"TORCH_HCCL_ASYNC_ERROR_HANDLING": "0", "TORCH_HCCL_BLOCKING_WAIT": "1",
                            "TORCH_HCCL_DESYNC_DEBUG": "0"}, r
