"""Quantized npu tensors behave as QuantizedCPU/QuantizedCUDA ones (csrc/core/aten/fallback.cpp, register.cpp).

Found by PyTorch's test_view_ops.py (test_flatten, test_ravel) and test_shape_ops.py (test_flip,
test_flip_per_channel_quantized_error) run on npu: quantize_per_tensor on npu used to return a plain
quint8 tensor without its quantizer, and q.to("npu") raised.
"""
import pytest
import torch


@pytest.fixture
def x():
    return torch.randn(3, 4, generator=torch.Generator().manual_seed(0))


def _same(qn, qc):
    assert qn.device.type == "npu" and qn.is_quantized and qn.dtype == qc.dtype
    assert qn.qscheme() == qc.qscheme()
    assert qn.shape == qc.shape and qn.stride() == qc.stride()
    assert torch.equal(qn.int_repr().cpu(), qc.int_repr())
    assert torch.equal(qn.dequantize().cpu(), qc.dequantize())


def test_quantize_per_tensor_on_npu_matches_cpu(x):
    qc = torch.quantize_per_tensor(x, 0.1, 10, torch.quint8)
    qn = torch.quantize_per_tensor(x.npu(), 0.1, 10, torch.quint8)
    _same(qn, qc)
    assert (qn.q_scale(), qn.q_zero_point()) == (0.1, 10)
    assert qn.untyped_storage().device.type == "npu"  # npu memory, counted by the npu allocator


def test_quantize_per_channel_on_npu_matches_cpu(x):
    scales, zps = torch.tensor([0.1, 0.2, 0.3], dtype=torch.double), torch.tensor([1, 2, 3])
    qc = torch.quantize_per_channel(x, scales, zps, 0, torch.qint8)
    qn = torch.quantize_per_channel(x.npu(), scales.npu(), zps.npu(), 0, torch.qint8)
    _same(qn, qc)
    assert qn.q_per_channel_axis() == 0
    assert torch.equal(qn.q_per_channel_scales().cpu(), qc.q_per_channel_scales())


def test_quantized_copies_between_cpu_and_npu(x):
    qc = torch.quantize_per_tensor(x, 0.05, 3, torch.qint8)
    qn = qc.to("npu")
    _same(qn, qc)
    back = qn.cpu()
    assert back.device.type == "cpu" and back.is_quantized
    assert torch.equal(back.int_repr(), qc.int_repr()) and back.q_scale() == qc.q_scale()


def test_quantized_views_and_clones_match_cpu(x):
    qc = torch.quantize_per_tensor(x, 0.1, 10, torch.quint8)
    qn = qc.to("npu")
    for f in (lambda q: q.flip(0), lambda q: q.flatten(), lambda q: q.ravel(), lambda q: q.clone(),
              lambda q: q.t().contiguous(), lambda q: q.view(12), lambda q: q.unsqueeze(1),
              lambda q: torch.cat([q, q])):
        _same(f(qn), f(qc))
    v = qn.view(12)
    assert v.untyped_storage().data_ptr() == qn.untyped_storage().data_ptr()  # a view, not a copy
    e = torch._empty_affine_quantized([5, 5], scale=2.0, zero_point=3, dtype=torch.qint8, device="npu")
    assert e.device.type == "npu" and e.is_quantized and (e.q_scale(), e.q_zero_point()) == (2.0, 3)


def test_quantized_errors_match_cpu(x):
    # test_shape_ops.py test_flip_per_channel_quantized_error: the QuantizedCPU kernel's own error.
    qc = torch.quantize_per_channel(x, torch.tensor([0.1, 0.2, 0.3], dtype=torch.double), torch.tensor([1, 2, 3]), 0,
                                    torch.qint8)
    with pytest.raises(RuntimeError) as on_cpu:
        qc.flip(0)
    with pytest.raises(RuntimeError) as on_npu:
        qc.to("npu").flip(0)
    assert str(on_npu.value).splitlines()[0] == str(on_cpu.value).splitlines()[0]
