"""Ops routed to the CPU kernels on npu memory (csrc/core/aten/cpu_kernel_routing.cpp) behave as on cpu."""
import pytest
import torch


@pytest.mark.parametrize("dtype", [torch.int16, torch.int64, torch.float32], ids=str)
def test_mode_out_matches_cpu(dtype):
    # test_reductions.py test_mode / test_dim_reduction: torch.mode(..., out=) is a composite kernel
    # that rejected npu ("mode only supports CPU, CUDA and XPU device type, got: npu").
    x = torch.randint(0, 3, (4, 7), generator=torch.Generator().manual_seed(0)).to(dtype)
    vc, ic = torch.empty(0, dtype=dtype), torch.empty(0, dtype=torch.long)
    torch.mode(x, 1, out=(vc, ic))
    vn, in_ = torch.empty(0, dtype=dtype, device="npu"), torch.empty(0, dtype=torch.long, device="npu")
    ret = torch.mode(x.npu(), 1, out=(vn, in_))
    assert ret.values is vn and ret.indices is in_
    assert vn.device.type == "npu" and torch.equal(vn.cpu(), vc) and torch.equal(in_.cpu(), ic)
    with pytest.raises(RuntimeError, match="same device"):  # a cpu out= beside an npu input, as on CUDA
        torch.mode(x.npu(), 1, out=(torch.empty(0, dtype=dtype), torch.empty(0, dtype=torch.long)))
