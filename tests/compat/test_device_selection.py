"""Lazy init and device selection behave as torch.cuda's: one test per entry point.

The expected values are CUDA's behaviour in torch 2.13 (torch/cuda/__init__.py,
torch/cuda/random.py, torch/cuda/memory.py; DeviceMesh._setup_world_group_and_device;
FSDP2's _init_default_fully_shard_mesh / _get_device_from_mesh):

- is_initialized() turns True on the first Python-level use only: tensor
  creation, set_device, current_device, torch.accelerator.set_device_index /
  current_device_index; never on device_count / is_available / the
  torch.accelerator queries / seeding (queued) / memory statistics.
- C++ touching the device (init_process_group(device_id=...)) does not flip it.
- DeviceMesh sets the current device from LOCAL_RANK only while it is False;
  FSDP2's default mesh then uses that device; a user's set_device wins.
"""
import pytest

from ._ranks import npurun

NOT_INIT = """
import torch, torch.distributed as dist
def state(): return (torch.npu.is_initialized(), torch.npu._initialized)
assert state() == (False, False), state()
steps = {
  "device_count": lambda: torch.npu.device_count(),
  "is_available": lambda: torch.npu.is_available(),
  "accelerator queries": lambda: (torch.accelerator.is_available(), torch.accelerator.device_count(),
                                  torch.accelerator.current_accelerator()),
  "accelerator.device_index(1) not entered": lambda: torch.accelerator.device_index(1),
  "torch.manual_seed": lambda: torch.manual_seed(5),
  "npu.manual_seed / manual_seed_all / seed / seed_all": lambda: (torch.npu.manual_seed(1), torch.npu.manual_seed_all(2),
                                                                  torch.npu.seed(), torch.npu.seed_all()),
  "set_rng_state": lambda: torch.npu.set_rng_state(torch.zeros(16, dtype=torch.uint8)),
  "memory statistics": lambda: (torch.npu.memory_allocated(), torch.npu.max_memory_allocated(),
                                torch.npu.memory_reserved(), torch.npu.max_memory_reserved(),
                                torch.npu.memory_stats(), torch.npu.empty_cache()),
  "Event()": lambda: torch.npu.Event(),
  "set_device(-1)": lambda: torch.npu.set_device(-1),
  "get_amp_supported_dtype": lambda: torch.npu.get_amp_supported_dtype(),
  "default backend": lambda: dist.get_default_backend_for_device("npu"),
}
for name, step in steps.items():
    step()
    assert state() == (False, False), f"{name} initialised npu"
assert torch.npu.memory_stats() == {} and torch.npu.memory_allocated() == 0
print("OK")
"""


def test_queries_seeding_and_statistics_do_not_initialise(python):
    r = python(NOT_INIT)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]


@pytest.mark.parametrize("stmt", [
    'torch.empty(3, device="npu:1")',
    'torch.nn.Linear(2, 2, device="meta").to_empty(device="npu:1")',
    'torch.zeros(2).npu(1)',
    'torch.accelerator.current_device_index()',
])
def test_tensor_creation_initialises_without_changing_the_device(python, stmt):
    # On CUDA a tensor on cuda:1 initialises CUDA but the current device stays 0 (a device guard).
    r = python(f"""
        import torch
        {stmt}
        print(torch.npu.is_initialized(), torch.npu._initialized, torch.npu.current_device())
    """)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["True", "True", "0"]


def test_set_device_initialises_and_selects(python):
    r = python("""
        import torch
        torch.npu.set_device(1)
        a = (torch.npu.is_initialized(), torch.npu.current_device(), torch.accelerator.current_device_index())
        torch.accelerator.set_device_index(2)
        b = (torch.npu.current_device(), torch.empty(1, device="npu").device.index)
        with torch.accelerator.device_index(3):
            c = torch.npu.current_device()
        print(a, b, c, torch.npu.current_device())
    """)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "(True, 1, 1) (2, 2) 3 2"


def test_accelerator_set_device_index_initialises(python):
    r = python("""
        import torch
        torch.accelerator.set_device_index(1)
        print(torch.npu.is_initialized(), torch.npu.current_device())
    """)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["True", "1"]


def test_seeds_queued_before_init_apply_at_init(python):
    # torch.cuda queues seeding until init; the latest manual_seed / manual_seed_all win, in call order.
    r = python("""
        import torch
        torch.manual_seed(123)
        torch.npu.set_device(1)
        a = torch.randn(5, device="npu")
        torch.manual_seed(123)
        b = torch.randn(5, device="npu")
        assert torch.equal(a.cpu(), b.cpu()), (a, b)
        print("OK")
    """)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]
    r = python("""
        import torch
        torch.npu.manual_seed(7)
        torch.npu.manual_seed_all(11)   # later: wins on every device
        torch.npu.manual_seed(13)       # later still: wins on the current device
        torch.empty(1, device="npu")
        print(torch.npu.initial_seed(), torch.npu.default_generators[1].initial_seed())
    """)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["13", "11"]


def test_a_queued_call_that_fails_reports_where_it_was_made(python):
    r = python("""
        import torch
        torch.npu.set_rng_state(torch.zeros(3, dtype=torch.uint8))  # wrong size: fails only when applied
        for attempt in range(2):  # as torch.cuda: the queued call stays and fails again at the next attempt
            try:
                torch.empty(1, device="npu")
            except torch.npu.DeferredNpuCallError as err:
                print("DEFERRED", "set_rng_state" in str(err), torch.npu.is_initialized())
    """)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["DEFERRED", "True", "False"] * 2


@pytest.mark.timeout(400)
def test_init_process_group_device_id_then_init_device_mesh():
    _, results = npurun("device_id_then_mesh.py", 2)
    for rank in (0, 1):
        (r,) = results[rank]
        assert r["backend"] == "hccl" and r["bound"] == f"npu:{rank}"
        assert r["after_pg"] is False, "init_process_group(device_id=...) must not initialise torch.npu"
        assert r["cpp_current_after_pg"] == 0
        assert r["after_mesh"] is True and r["current_after_mesh"] == rank, r
        assert r["x_device"] == f"npu:{rank}" and r["all_reduce"] == [3.0] * 4
        assert r["dtensor_device"] == f"npu:{rank}" and r["dtensor_local"] == [4.0 * rank + i for i in range(4)]


@pytest.mark.timeout(400)
def test_fully_shard_default_mesh_takes_the_device_from_local_rank():
    # The failure: rank 1 died in backward ("attempting to assign a gradient located on device ...").
    _, results = npurun("fsdp2_default_mesh.py", 2)
    (r0,), (r1,) = results[0], results[1]
    for rank, r in ((0, r0), (1, r1)):
        assert r["init_before_shard"] is False
        assert r["current_after_shard"] == rank
        assert r["param_devices"] == [f"npu:{rank}"] and r["grad_devices"] == [f"npu:{rank}"]
        assert r["mesh_devices"] == ["npu"]
    assert r0["losses"] == r1["losses"]
    assert r0["max_diff_vs_unsharded"] < 1e-4, r0


@pytest.mark.timeout(400)
def test_users_set_device_wins_and_ddp_uses_device_ids():
    _, results = npurun("ddp_device_ids.py", 2)
    for rank in (0, 1):
        (r,) = results[rank]
        assert r["current_after_mesh"] == r["chosen"] == (rank + 1) % 2, r
        assert r["out_device"] == r["param_device"] == r["grad_device"] == f"npu:{rank}"
        assert r["max_grad_diff"] < 1e-6
        assert r["current_after_ddp"] == r["chosen"]
