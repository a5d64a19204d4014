"""Device count and selection, torch.accelerator, visible-device renumbering and bad input."""
import pytest
import torch


def test_defaults_and_accelerator():
    assert torch.npu.is_available()
    assert torch.npu.device_count() == 8
    assert torch.accelerator.current_accelerator() == torch.device("npu")
    assert torch.accelerator.is_available()
    assert torch.accelerator.device_count() == 8
    assert torch.accelerator.current_device_index() == 0
    with torch.accelerator.device_index(3):
        assert torch.npu.current_device() == 3
        assert torch.empty(1, device="npu").device == torch.device("npu:3")
    assert torch.npu.current_device() == 0
    with torch.npu.device(2):
        assert torch.accelerator.current_device_index() == 2
    torch.accelerator.set_device_index(1)
    assert torch.npu.current_device() == 1
    torch.npu.set_device("npu:0")
    assert torch.npu.current_device() == 0
    props = torch.npu.get_device_properties(0)
    assert props.total_memory > 0 and props.multi_processor_count >= 1
    assert torch.npu.is_initialized()
    assert torch.tensor([1.0]).npu().is_npu


def test_bad_device_indices_are_clear_errors():
    # RuntimeError, as CUDA's "invalid device ordinal" (scripts catch RuntimeError)
    with pytest.raises(RuntimeError, match="npu device index 8 is out of range.*0..7"):
        torch.npu.set_device(8)
    with pytest.raises(RuntimeError, match="out of range"):
        torch.zeros(1, device="npu:9")
    with pytest.raises(RuntimeError, match="out of range"):
        torch.ones(2).to("npu:20")
    with pytest.raises(RuntimeError, match="out of range"):
        torch.accelerator.set_device_index(8)


def test_accelerator_device_capability_lists_every_dtype():
    from torch.testing._internal.common_dtype import get_all_dtypes

    supported = torch.accelerator.get_device_capability("npu:1")["supported_dtypes"]
    assert all(d in supported for d in get_all_dtypes(include_complex32=True, include_qint=True))
    with pytest.raises(RuntimeError, match="out of range"):
        torch.accelerator.get_device_capability("npu:9")


def test_tensors_on_different_devices_in_one_op():
    a, b = torch.ones(3, device="npu:0"), torch.ones(3, device="npu:1")
    with pytest.raises(RuntimeError, match="same device.*npu:0.*npu:1"):
        a + b
    with pytest.raises(RuntimeError, match="same device"):
        torch.cat([a, b])
    with pytest.raises(RuntimeError, match="same device.*cpu"):
        torch.maximum(a, torch.ones(3))
    assert (a + torch.tensor(2.0)).cpu().tolist() == [3.0] * 3  # 0-dim cpu scalars are allowed, as on CUDA


def test_npu_op_never_writes_into_a_cpu_tensor():
    # test_shape_ops.py's test_nonzero: a 0-dim cpu out= used to be resized from npu memory
    # (a cpu tensor over npu storage that could not even be printed); CUDA raises.
    t = torch.tensor([1.0, 0.0, 2.0], device="npu")
    out = torch.empty([], dtype=torch.long)
    with pytest.raises(RuntimeError, match="same device.*npu:0 and cpu.*aten::nonzero"):
        torch.nonzero(t, out=out)
    assert out.device.type == "cpu" and out.shape == () and out.untyped_storage().device.type == "cpu"
    with pytest.raises(RuntimeError, match="same device"):
        torch.add(t, t, out=torch.tensor(0.0))
    with pytest.raises(RuntimeError, match="same device"):
        torch.tensor(0.0).add_(t[0])
    # Reading a 0-dim cpu tensor stays allowed, in-place on the npu tensor too.
    assert t.add_(torch.tensor(1.0)).cpu().tolist() == [2.0, 1.0, 3.0]


def test_no_visible_device(python):
    r = python("""
        import torch
        print(torch.npu.device_count(), torch.npu.is_available())
        try:
            torch.ones(1, device="npu")
        except RuntimeError as e:  # as CUDA's "No CUDA GPUs are available"
            print(e)
    """, env={"ASCEND_RT_VISIBLE_DEVICES": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["0 False", "no npu device is visible (ASCEND_RT_VISIBLE_DEVICES is set but empty)"]


def test_visible_devices_narrow_and_renumber(python):
    r = python("""
        import torch
        print(torch.npu.device_count(), torch.npu.get_device_properties(0).physical_id,
              torch.npu.get_device_properties(1).physical_id)
        torch.zeros(1, device="npu:1")
        try:
            torch.zeros(1, device="npu:2")
        except RuntimeError as e:
            print("ERR", e)
    """, env={"ASCEND_RT_VISIBLE_DEVICES": "5,2", "NPUDIST_DEVICE_COUNT": "6"})
    assert r.returncode == 0, r.stderr
    first, err = r.stdout.splitlines()
    assert first == "2 5 2"
    assert "out of range" in err and "ASCEND_RT_VISIBLE_DEVICES" in err


@pytest.mark.parametrize("env,expected", [
    ({"NPUDIST_DEVICE_COUNT": "zero"}, "NPUDIST_DEVICE_COUNT='zero' is not valid: expected an integer from 1 to 64"),
    ({"NPUDIST_DEVICE_COUNT": "0"}, "NPUDIST_DEVICE_COUNT='0'"),
    ({"NPUDIST_DEVICE_MEMORY": "12 parsecs"}, "NPUDIST_DEVICE_MEMORY='12 parsecs' is not valid: expected bytes"),
    ({"ASCEND_RT_VISIBLE_DEVICES": "0,9"}, "entry '9' is not a device of this host"),
    ({"ASCEND_RT_VISIBLE_DEVICES": "1,1"}, "entry '1' is listed twice"),
    ({"ASCEND_RT_VISIBLE_DEVICES": "a"}, "entry 'a' is not a device id"),
    ({"ASCEND_RT_VISIBLE_DEVICES": "1,"}, "entry '' is not a device id"),
    ({"NPUDIST_DEVICE_MEMORY": "-1"}, "(negative)"),
    ({"NPUDIST_DEVICE_MEMORY": "1MiB"}, "less than 2 MiB"),
    ({"NPUDIST_DEVICE_MEMORY": "9TiB"}, "more than 4 TiB"),
])
def test_invalid_environment_is_a_clear_error(python, env, expected):
    r = python("""
        import torch, warnings
        warnings.simplefilter("ignore")
        print("available", torch.npu.is_available())
        try:
            torch.zeros(1, device="npu")
        except ValueError as e:
            print("ValueError", e)
        try:
            torch.npu.device_count()
        except ValueError as e:
            print("ValueError", e)
    """, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "available False"
    assert len(lines) == 3 and all(expected in line for line in lines[1:]), r.stdout
