"""npu RNG: reproducible, per-device independent, state save/restore, DTensor-compatible state."""
import pytest
import torch


def test_manual_seed_reproduces_every_random_op():
    def draw():
        return [
            torch.rand(5, device="npu"),
            torch.randn(5, device="npu"),
            torch.randint(0, 100, (5,), device="npu"),
            torch.randperm(10, device="npu"),
            torch.multinomial(torch.ones(6, device="npu"), 3),
            torch.bernoulli(torch.full((6,), 0.5, device="npu")),
            torch.empty(5, device="npu").exponential_(),
            torch.empty(5, device="npu").uniform_(-2, 2),
            torch.normal(torch.zeros(4, device="npu"), 1.0),
            torch.nn.functional.dropout(torch.ones(16, device="npu"), 0.5),
        ]

    torch.manual_seed(123)
    first = draw()
    torch.manual_seed(123)
    second = draw()
    for a, b in zip(first, second):
        assert a.device.type == "npu"
        assert torch.equal(a.cpu(), b.cpu())
    torch.manual_seed(124)
    assert not torch.equal(draw()[0].cpu(), first[0].cpu())


def test_state_is_philox_shaped_and_restorable():
    torch.npu.manual_seed(7)
    state = torch.npu.get_rng_state()
    assert state.dtype == torch.uint8 and state.shape == (16,)
    seed, offset = state[:8].view(torch.int64).item(), state[8:].view(torch.int64).item()
    assert (seed, offset) == (7, 0)
    a = torch.rand(10, device="npu")
    after = torch.npu.get_rng_state()
    assert after[8:].view(torch.int64).item() == 12  # 10 values, counters advance in fours
    torch.npu.set_rng_state(state)
    assert torch.equal(torch.rand(10, device="npu").cpu(), a.cpu())
    # Setting only the offset selects another reproducible stream (what DTensor's tracker does).
    shifted = state.clone()
    shifted[8:] = torch.tensor([1000], dtype=torch.int64).view(torch.uint8)
    torch.npu.set_rng_state(shifted)
    b = torch.rand(10, device="npu")
    torch.npu.set_rng_state(shifted)
    assert torch.equal(torch.rand(10, device="npu").cpu(), b.cpu()) and not torch.equal(b.cpu(), a.cpu())
    with pytest.raises(RuntimeError, match="16 bytes"):
        torch.npu.set_rng_state(torch.zeros(5000, dtype=torch.uint8))


def test_devices_have_independent_generators():
    torch.npu.manual_seed_all(3)
    s1 = torch.npu.get_rng_state(1)
    torch.rand(100, device="npu:0")
    assert torch.equal(torch.npu.get_rng_state(1), s1)  # drawing on npu:0 leaves npu:1 alone
    torch.npu.manual_seed_all(3)
    with torch.npu.device(1):
        torch.npu.manual_seed(99)
        assert torch.npu.initial_seed() == 99
    assert torch.npu.initial_seed() == 3
    states = torch.npu.get_rng_state_all()
    assert len(states) == torch.npu.device_count()
    torch.npu.set_rng_state_all(states)


def test_explicit_generators():
    g = torch.Generator(device="npu")
    g.manual_seed(5)
    a = torch.rand(4, device="npu", generator=g)
    g.manual_seed(5)
    assert torch.equal(torch.rand(4, device="npu", generator=g).cpu(), a.cpu())
    with pytest.raises(RuntimeError, match="Expected a 'npu' device type for generator"):
        torch.rand(3, device="npu", generator=torch.Generator())


def test_dropout_matches_cpu_semantics():
    torch.manual_seed(0)
    x = torch.randn(1000, device="npu")
    out, mask = torch.ops.aten.native_dropout(x, 0.3, True)
    assert mask.dtype == torch.bool
    kept = mask.float().mean().item()
    assert 0.6 < kept < 0.8
    torch.testing.assert_close(out.cpu(), (x.cpu() * mask.cpu()) / 0.7)
    out, mask = torch.ops.aten.native_dropout(x, 0.3, False)
    assert torch.equal(out.cpu(), x.cpu()) and mask.all()


def test_generator_device_checks_and_state_types():
    g = torch.Generator("npu")
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'npu'"):
        torch.rand(3, generator=g)
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator"):
        torch.multinomial(torch.ones(4), 2, generator=g)
    with pytest.raises(TypeError, match="ByteTensor"):
        torch.npu.set_rng_state(torch.full((16,), 3.0))
    with pytest.raises(TypeError, match="cpu tensor"):
        torch.npu.set_rng_state(torch.npu.get_rng_state().npu())
    assert len(torch.npu.default_generators) == torch.npu.device_count()
    assert torch.npu.default_generators[1].device == torch.device("npu:1")


def test_checkpoint_recomputes_the_same_dropout_mask():
    torch.ones(1, device="npu")
    assert torch.npu.is_initialized() and torch.npu._initialized
    lin = torch.nn.Linear(16, 16).to("npu")

    def block(x):
        return torch.nn.functional.dropout(lin(x), 0.5, training=True)

    for reentrant in (False, True):
        torch.manual_seed(0)
        x = torch.randn(8, 16, device="npu", requires_grad=True)
        torch.manual_seed(1)
        block(x).sum().backward()
        plain = x.grad.clone()
        x.grad = None
        torch.manual_seed(1)
        torch.utils.checkpoint.checkpoint(block, x, use_reentrant=reentrant).sum().backward()
        assert torch.equal(x.grad.cpu(), plain.cpu()), f"use_reentrant={reentrant}"
