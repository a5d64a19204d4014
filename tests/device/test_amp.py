"""torch.autocast("npu") op policy and torch.amp.GradScaler("npu")."""
import pytest
import torch
import torch.nn.functional as F


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_dtypes_per_op_class(dtype):
    assert dtype in torch.npu.get_amp_supported_dtype()
    a = torch.randn(8, 8, device="npu")
    w = torch.randn(4, 3, 3, 3, device="npu")
    img = torch.randn(2, 3, 8, 8, device="npu")
    target = torch.randint(0, 8, (8,), device="npu")
    with torch.autocast("npu", dtype=dtype):
        assert torch.mm(a, a).dtype == dtype
        assert (a @ a).dtype == dtype
        assert F.linear(a, a).dtype == dtype
        assert F.conv2d(img, w).dtype == dtype
        assert torch.softmax(a, 0).dtype == torch.float32
        assert F.layer_norm(a.to(dtype), (8,)).dtype == torch.float32
        assert F.cross_entropy(a.to(dtype), target).dtype == torch.float32
        assert F.mse_loss(a.to(dtype), a.to(dtype)).dtype == torch.float32
        assert torch.cat([a, a.to(dtype)]).dtype == torch.float32  # promote
        assert (a + a).dtype == torch.float32  # no policy: unchanged
    assert torch.mm(a, a).dtype == torch.float32


def test_grad_scaler_skips_step_on_inf_and_backs_off():
    scaler = torch.amp.GradScaler("npu", init_scale=2.0**10)
    w = torch.nn.Parameter(torch.ones(3, device="npu"))
    opt = torch.optim.SGD([w], lr=0.1)
    loss = (w * torch.tensor([1.0, float("inf"), 1.0], device="npu")).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert torch.equal(w.detach().cpu(), torch.ones(3))  # step skipped
    assert scaler.get_scale() == 2.0**9
    opt.zero_grad()
    with torch.autocast("npu", dtype=torch.float16):
        loss = (w * 2).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    torch.testing.assert_close(w.detach().cpu(), torch.full((3,), 0.8))
