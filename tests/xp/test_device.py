"""xp.Device: CuPy's device context on npus; a.device; copies between npus; mixed-device errors."""
import numpy as np
import pytest
import torch

import npudist.xp as xp


def test_device_context_selects_the_npu_for_new_arrays():
    assert xp.Device() == xp.Device(torch.npu.current_device())
    start = torch.npu.current_device()
    with xp.Device(1) as d:
        assert d.id == 1 and int(d) == 1
        assert xp.Device().id == 1 and torch.npu.current_device() == 1
        a = xp.arange(4)
        assert a.device == xp.Device(1) and a.device.id == 1
        with xp.Device(2):                 # nested
            assert xp.ones(2).device.id == 2
        assert torch.npu.current_device() == 1
    assert torch.npu.current_device() == start
    assert a.device == torch.device("npu", 1) == a.device   # both directions
    assert a.device == "npu:1" and a.device != "npu:0"
    assert a.device.type == "npu" and a.device.index == 1
    assert repr(a.device) == "<NPU Device 1>"
    assert {xp.Device(1), a.device} == {xp.Device(1)}


def test_device_restored_after_an_exception():
    start = torch.npu.current_device()
    with pytest.raises(KeyError), xp.Device(3):
        raise KeyError
    assert torch.npu.current_device() == start


def test_use_and_invalid_ordinal():
    start = torch.npu.current_device()
    try:
        xp.Device(2).use()
        assert torch.npu.current_device() == 2 and xp.zeros(1).device.id == 2
    finally:
        torch.npu.set_device(start)
    with pytest.raises(ValueError, match="invalid device ordinal"), xp.Device(torch.npu.device_count()):
        pass
    with pytest.raises(ValueError, match="npus"):
        xp.Device("cpu")


def test_copies_between_devices():
    a = xp.asarray(np.arange(6.0).reshape(2, 3))
    assert a.device.id == 0
    with xp.Device(1):
        b = a.copy()                       # a copy on the current npu (CuPy)
        c = xp.asarray(a)                  # asarray of another npu's array copies
        d = xp.array(a)
    for x in (b, c, d):
        assert x.device.id == 1
        assert np.array_equal(xp.asnumpy(x), xp.asnumpy(a))
    b[0, 0] = 100
    assert xp.asnumpy(a)[0, 0] == 0
    assert xp.asarray(a) is a              # same device: no copy
    e = a.to_device(xp.Device(2))
    assert e.device.id == 2
    f = xp.zeros(3, device=xp.Device(3))
    assert f.device.id == 3
    assert xp.asarray(b).device.id == 0    # back to the current npu


def test_mixing_devices_raises_as_cupy():
    a = xp.ones(3)
    with xp.Device(1):
        b = xp.ones(3)
    with pytest.raises(ValueError, match=r"resides \(1\) is different from the current device \(0\)"):
        a + b
    with pytest.raises(ValueError, match="Peer access is unavailable"):
        xp.multiply(b, a)
    assert isinstance(xp.DeviceMismatchError("x"), RuntimeError)
    # other routines raise PyTorch's error for two devices (a RuntimeError)
    with pytest.raises(RuntimeError, match="same device"):
        xp.concatenate([a, b])
    with xp.Device(1):
        assert xp.asnumpy(b + xp.asarray(a)).tolist() == [2.0, 2.0, 2.0]


def test_device_properties():
    d = xp.Device(0)
    free, total = d.mem_info
    assert 0 < free <= total
    assert isinstance(d.compute_capability, str)
    d.synchronize()
