"""Views alias their base on npu; copies between cpu and npu and across npus are exact."""
import pytest
import torch


def test_views_alias_their_base():
    base = torch.arange(24, dtype=torch.float32, device="npu")
    views = {
        "view": base.view(4, 6),
        "reshape": base.reshape(2, 12),
        "as_strided": base.as_strided((3, 3), (4, 1), 2),
        "unfold": base.unfold(0, 4, 2),
        "transpose": base.view(4, 6).t(),
        "select": base.view(4, 6)[1],
        "slice": base[3:20:2],
        "expand": base[:1].expand(5),
        "diagonal": base.view(4, 6).diagonal(),
        "pairs": base.view(12, 2),
    }
    for name, v in views.items():
        assert v._is_view(), name
        assert v.untyped_storage().data_ptr() == base.untyped_storage().data_ptr(), name
    # writes through a view reach the base
    views["slice"].fill_(-1)
    assert base[3].item() == -1 and base[4].item() == 4
    views["unfold"][1, 0] = 100  # element 2 of base
    assert base[2].item() == 100
    c = torch.view_as_complex(views["pairs"])
    c[0] = 7 + 8j
    assert base[0].item() == 7 and base[1].item() == 8
    r = torch.view_as_real(c)
    r[1, 1] = 42
    assert base[3].item() == 42


def test_inplace_through_view_and_overlap_checks():
    x = torch.zeros(4, 4, device="npu")
    x[:, 1].add_(torch.ones(4, device="npu"))
    assert x.sum().item() == 4 and x[:, 1].eq(1).all().item()
    # Overlap checks see through the zero-copy fallback exactly as on cpu.
    y = torch.arange(8.0, device="npu")
    with pytest.raises(RuntimeError, match="input tensor and the written-to tensor refer to a single memory"):
        y[1:].add_(y[:-1])
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        y.as_strided((7,), (0,)).add_(1)


def test_copies_roundtrip_dtypes_and_strides():
    cpu = torch.randn(5, 7, dtype=torch.float64)
    npu = cpu.npu()
    assert npu.device == torch.device("npu:0")
    assert torch.equal(npu.cpu(), cpu)
    assert torch.equal(npu.t().contiguous().cpu(), cpu.t().contiguous())
    assert torch.equal(npu.to(torch.float16).cpu(), cpu.to(torch.float16))
    other = npu.to("npu:1")
    assert other.device == torch.device("npu:1") and torch.equal(other.cpu(), cpu)
    dst = torch.empty(7, 5, device="npu")
    dst.copy_(cpu.t())  # cpu -> npu, strided, cast
    assert torch.equal(dst.cpu(), cpu.t().float())
    z = torch.randn(3, dtype=torch.complex64)
    assert torch.equal(z.npu().conj().cpu(), z.conj())
    assert torch.equal(z.npu().conj().neg().resolve_neg().resolve_conj().cpu(), -z.conj())


def test_scalars_resize_and_storage_resize():
    t = torch.tensor([3.5], device="npu")
    assert t.item() == 3.5
    t.resize_(10)
    assert t.shape == (10,) and t[0].item() == 3.5
    s = torch.ones(1000, device="npu").untyped_storage()
    s.resize_(0)  # as FSDP2 frees unsharded parameters
    assert s.size() == 0
    s.resize_(4000)
    assert s.size() == 4000 and s.device.type == "npu"
    u = torch.empty(0, device="npu")
    u.set_(torch.arange(6.0, device="npu").untyped_storage(), 2, (2, 2), (2, 1))
    assert u.cpu().tolist() == [[2.0, 3.0], [4.0, 5.0]]


def test_out_variant_resizes_npu_output():
    out = torch.empty(0, device="npu")
    torch.add(torch.ones(3, device="npu"), 1, out=out)
    assert out.shape == (3,) and out.device.type == "npu" and out.cpu().tolist() == [2.0, 2.0, 2.0]


def test_zero_tensor_gradients_and_conv():
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    xn = x.detach().npu().requires_grad_()
    wn = w.detach().npu().requires_grad_()
    out_cpu = torch.nn.functional.conv2d(x, w, padding=1)
    out_npu = torch.nn.functional.conv2d(xn, wn, padding=1)
    torch.testing.assert_close(out_npu.cpu(), out_cpu)
    out_cpu.square().sum().backward()
    out_npu.square().sum().backward()
    torch.testing.assert_close(xn.grad.cpu(), x.grad)
    torch.testing.assert_close(wn.grad.cpu(), w.grad)
    s = torch.randn(5, device="npu", requires_grad=True)
    (g,) = torch.autograd.grad(torch.sgn(s).sum(), s)  # sgn's backward uses an efficient zero tensor
    assert g.device.type == "npu" and g.abs().sum().item() == 0
