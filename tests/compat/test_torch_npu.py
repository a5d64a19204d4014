"""``import torch_npu`` where no real torch_npu is installed.

Each check runs in its own process (the import machinery is process state); the ones about a
script's first import start a fresh interpreter, the others fork from the warm test zygote.
"""
import os

import pytest

from ._ranks import npurun


def _ok(r):
    assert r.returncode == 0, f"stdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-5000:]}"
    return r.stdout


def test_import_torch_npu_as_a_scripts_first_import(python, tmp_path):
    # The .pth file installs the finder at interpreter start; nothing else is imported first.
    out = _ok(python("""
        import torch_npu
        import sys, torch
        print(torch_npu.__file__.endswith("torch_npu_pkg/__init__.py"), torch_npu.npu is torch.npu,
              sys.modules["torch_npu.npu"] is torch.npu, torch_npu.__version__.startswith(torch.__version__[:4]))
        x = torch.randn(2, 4).npu()
        print(x.device, torch_npu.npu.device_count() == torch.npu.device_count())
        # the ops are registered by the import (torch.ops.npu works directly); DTensor is not imported
        print("torch.distributed.tensor" in sys.modules, hasattr(torch.ops.npu, "npu_grouped_matmul"),
              hasattr(torch.ops.npu, "npu_rms_norm"), torch_npu.npu_rms_norm is torch.ops.npu.npu_rms_norm)
    """, cwd=str(tmp_path), fresh=True))
    assert out.split() == ["True", "True", "True", "True", "npu:0", "True", "False", "True", "True", "True"]


def test_import_torch_npu_without_torch_autoload(python, tmp_path):
    out = _ok(python("""
        import torch_npu, torch
        print(torch.randn(1, device="npu").device, torch_npu.npu.current_device())
    """, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, cwd=str(tmp_path), fresh=True))
    assert out.split() == ["npu:0", "0"]


STANDIN = "STANDIN = True\n"


def test_a_real_torch_npu_wins(python, tmp_path):
    # a stand-in torch_npu package earlier on sys.path is the one imported (the path finder answers first)
    pkg = tmp_path / "site" / "torch_npu"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(STANDIN)
    out = _ok(python("""
        import torch_npu
        print(getattr(torch_npu, "STANDIN", False), torch_npu.__file__)
    """, env={"PYTHONPATH": str(tmp_path / "site")}, cwd=str(tmp_path)))
    assert out.split()[0] == "True" and str(pkg) in out
    # ... also after `import npudist` (which installs the finder again), and when the stand-in comes
    # from a finder installed after ours (as another editable install's would be)
    out = _ok(python(f"""
        import importlib.util, sys
        import npudist
        class Late:
            @staticmethod
            def find_spec(name, path=None, target=None):
                if name == "torch_npu":
                    return importlib.util.spec_from_file_location(
                        "torch_npu", {str(pkg / "__init__.py")!r}, submodule_search_locations=[{str(pkg)!r}])
        sys.meta_path.append(Late)
        import torch_npu
        print(getattr(torch_npu, "STANDIN", False))
    """, cwd=str(tmp_path)))
    assert out.split() == ["True"]
    # and nothing of ours lands where a real torch_npu goes
    out = _ok(python("""
        import sysconfig, os
        print(os.path.exists(os.path.join(sysconfig.get_path("purelib"), "torch_npu")))
    """))
    assert out.split() == ["False"]


def test_the_compat_layer_can_be_turned_off(python, tmp_path):
    r = python("import torch_npu", env={"NPUDIST_TORCH_NPU_COMPAT": "0"}, cwd=str(tmp_path))
    assert r.returncode != 0 and "No module named 'torch_npu'" in r.stderr


def test_unsupported_names_raise_errors_naming_them(python, tmp_path):
    out = _ok(python("""
        import torch, torch_npu
        import torch_npu.contrib, torch_npu.utils, torch_npu.optim
        from npudist.compat.names import NotAvailableOnThisRuntime
        cases = [(torch_npu, "npu_lstm", "torch_npu.npu_lstm"),
                 (torch_npu, "npu_mla_prolog", "torch_npu.npu_mla_prolog"),
                 (torch_npu.npu, "stop_device", "torch_npu.npu.stop_device"),
                 (torch.npu, "NPUPluggableAllocator", "torch_npu.npu.NPUPluggableAllocator"),
                 (torch_npu.contrib, "ROIAlign", "torch_npu.contrib.ROIAlign"),
                 (torch_npu.utils, "get_cann_version", "torch_npu.utils.get_cann_version"),
                 (torch_npu.optim, "NpuFusedLamb", "torch_npu.optim.NpuFusedLamb")]
        for module, name, shown in cases:
            try:
                getattr(module, name)
            except NotImplementedError as err:
                assert isinstance(err, AttributeError) and isinstance(err, NotAvailableOnThisRuntime)
                assert shown in str(err) and "not available on this runtime" in str(err), str(err)
            else:
                raise AssertionError(f"{shown} did not raise")
            assert not hasattr(module, name)
        try:
            torch_npu.no_such_name
        except NotImplementedError:
            raise AssertionError("a name torch_npu does not have either must be a plain AttributeError")
        except AttributeError as err:
            assert "no_such_name" in str(err)
        try:
            torch_npu.npu_grouped_matmul([torch.ones(2, 2, device="npu")], [torch.ones(2, 2, device="npu")],
                                         scale=[torch.ones(2, device="npu")])
        except NotImplementedError as err:
            assert "scale" in str(err) and "npu_grouped_matmul" in str(err), str(err)
        print("OK")
    """, cwd=str(tmp_path)))
    assert "OK" in out


def test_torch_npu_npu_names_scripts_call(python, tmp_path):
    out = _ok(python("""
        import warnings, torch, torch_npu
        from torch_npu.npu import amp
        npu = torch_npu.npu
        npu.set_compile_mode(jit_compile=False); npu.set_option({"ACL_OP_COMPILER_CACHE_MODE": "enable"})
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            npu.config.allow_internal_format = True
        assert npu.config.allow_internal_format is True and w, "setting it is accepted, with a warning"
        with amp.autocast(dtype=torch.bfloat16):
            y = torch.ones(2, 2, device="npu") @ torch.ones(2, 2, device="npu")
        scaler = amp.GradScaler()
        rid = npu.mstx.range_start("step"); npu.mstx.range_end(rid)
        print(y.dtype, type(scaler).__name__, npu.get_soc_version(), npu.is_bf16_supported(), npu.is_jit_compile_false(),
              npu.synchronize() is None, npu.memory_allocated() > 0, npu.get_device_name(0) == torch.npu.get_device_name(0))
    """, env={"NPUDIST_SOC_VERSION": "223"}, cwd=str(tmp_path)))
    assert out.split() == ["torch.bfloat16", "GradScaler", "223", "True", "True", "True", "True", "True"]


OPS = r'''
import torch, torch_npu
torch.manual_seed(0)
dev = "npu"

# npu_grouped_matmul: m-axis groups from cumulative ends (Tensor and list) and from counts, split_item 0 and 3
x = torch.randn(9, 4, device=dev); w = torch.randn(3, 4, 5, device=dev); b = torch.randn(3, 5, device=dev)
ends = [2, 6, 8]
ref = []
start = 0
for g, end in enumerate(ends):
    ref.append(x[start:end] @ w[g] + b[g]); start = end
cat_ref = torch.cat(ref + [torch.zeros(1, 5, device=dev)])
out = torch_npu.npu_grouped_matmul([x], [w], bias=[b], group_list=torch.tensor(ends), group_type=0, split_item=3)
assert len(out) == 1 and torch.allclose(out[0], cat_ref, atol=1e-5)
out = torch_npu.npu_grouped_matmul([x], list(w.unbind(0)), bias=list(b.unbind(0)), group_list=ends, split_item=0)
assert len(out) == 3 and all(torch.allclose(o, r, atol=1e-5) for o, r in zip(out, ref))
out = torch_npu.npu_grouped_matmul([x], [w], bias=[b], group_list=torch.tensor([2, 4, 2]), group_list_type=1,
                                   group_type=0, split_item=2)
assert torch.allclose(out[0], cat_ref, atol=1e-5)
pair = torch_npu.npu_grouped_matmul([x[:3], x[3:]], [w[0], w[1]])      # no grouping: pairwise
assert torch.allclose(pair[0], x[:3] @ w[0], atol=1e-5) and torch.allclose(pair[1], x[3:] @ w[1], atol=1e-5)
xd = x.double().requires_grad_(); wd = w.double().requires_grad_()
assert torch.autograd.gradcheck(lambda a, c: torch_npu.npu_grouped_matmul([a], [c], group_list=torch.tensor(ends),
                                group_type=0, split_item=3)[0], (xd, wd))

# npu_moe_gating_top_k_softmax
logits = torch.randn(5, 6, device=dev)
y, idx, row = torch_npu.npu_moe_gating_top_k_softmax(logits, None, k=2)
sm = torch.softmax(logits, -1)
for i in range(5):
    top = sorted(range(6), key=lambda e: -float(sm[i, e]))[:2]
    assert [int(v) for v in idx[i]] == top and torch.allclose(y[i], sm[i, top])
    assert [int(v) for v in row[i]] == [i, 5 + i]
assert idx.dtype == torch.int32 and row.dtype == torch.int32

# npu_moe_token_permute / unpermute: tokens grouped by expert (stable), sorted_indices[src slot] = its row
tokens = torch.randn(6, 3, device=dev)
experts = torch.tensor([[1, 0], [2, 1], [0, 2], [1, 1], [2, 0], [0, 1]], device=dev)
permuted, sorted_idx = torch_npu.npu_moe_token_permute(tokens, experts)
slots = sorted(range(12), key=lambda s: (int(experts.reshape(-1)[s]), s))
for r, s in enumerate(slots):
    assert torch.equal(permuted[r], tokens[s // 2]) and int(sorted_idx[s]) == r
assert sorted_idx.dtype == torch.int32
probs = torch.rand(6, 2, device=dev)
un = torch_npu.npu_moe_token_unpermute(permuted * 2, sorted_idx, probs=probs)
assert torch.allclose(un, 2 * tokens * probs.sum(1, keepdim=True), atol=1e-5)
dropped, dropped_idx = torch_npu.npu_moe_token_permute(tokens, experts, num_out_tokens=7)
assert dropped.shape[0] == 7
kept = torch_npu.npu_moe_token_unpermute(dropped, dropped_idx, probs=torch.ones(6, 2, device=dev))
for t in range(6):
    expect = sum((tokens[t] for k in range(2) if int(dropped_idx[2 * t + k]) < 7), torch.zeros(3, device=dev))
    assert torch.allclose(kept[t], expect, atol=1e-6)
t1, i1 = torch_npu.npu_moe_token_permute(tokens, experts[:, 0])
assert torch.equal(torch_npu.npu_moe_token_unpermute(t1, i1), tokens)
td = tokens.double().requires_grad_(); pd = probs.double().requires_grad_()
assert torch.autograd.gradcheck(lambda a, p: torch_npu.npu_moe_token_unpermute(
    torch_npu.npu_moe_token_permute(a, experts)[0], sorted_idx, probs=p), (td, pd))

# npu_moe_init_routing / npu_moe_finalize_routing (the documented reference computations, as loops)
n, k = 4, 2
xr = torch.randn(n, 3, device=dev)
row_idx = torch.arange(n * k, device=dev, dtype=torch.int32).reshape(k, n).t().contiguous()
eidx = torch.tensor([[2, 0], [1, 2], [0, 0], [1, 3]], device=dev, dtype=torch.int32)
ex, erow, eexp = torch_npu.npu_moe_init_routing(xr, row_idx, eidx, active_num=n)
order = sorted(range(n * k), key=lambda s: (int(eidx.reshape(-1)[s]), s))
dst_to_src = [int(row_idx.reshape(-1)[s]) for s in order]
assert [int(v) for v in eexp] == sorted(int(v) for v in eidx.reshape(-1))
for dst, src in enumerate(dst_to_src):
    assert int(erow[src]) == dst and torch.equal(ex[dst], xr[src % n])
scales = torch.rand(n, k, device=dev); bias = torch.randn(4, 3, device=dev); skip = torch.randn(n, 3, device=dev)
fin = torch_npu.npu_moe_finalize_routing(ex, skip, None, bias, scales, erow, eidx)
for i in range(n):
    expect = skip[i].clone()
    for kk in range(k):
        expect += scales[i, kk] * (ex[int(erow[kk * n + i])] + bias[int(eidx[i, kk])])
    assert torch.allclose(fin[i], expect, atol=1e-5)

# npu_apply_adam_w(out=(var, m, v)) follows torch.optim.AdamW step by step (beta powers before the step)
p = torch.randn(10, device=dev); ref_p = torch.nn.Parameter(p.clone()); m = torch.zeros_like(p); v = torch.zeros_like(p)
opt = torch.optim.AdamW([ref_p], lr=0.01, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
for step in range(1, 4):
    g = torch.randn(10, device=dev); ref_p.grad = g.clone(); opt.step()
    torch_npu.npu_apply_adam_w(0.9 ** (step - 1), 0.99 ** (step - 1), 0.01, 0.1, 0.9, 0.99, 1e-8, g, None, False,
                               False, out=(p, m, v))
    assert torch.allclose(p, ref_p.detach(), atol=1e-6), step

# npu_format_cast: one storage format (ND) on the simulated npu
assert torch_npu.npu_format_cast(x, 29) is x and torch_npu.get_npu_format(x) == 2
print("OK")
'''


def test_ops_match_their_reference_computations(python, tmp_path):
    assert "OK" in _ok(python(OPS, cwd=str(tmp_path), timeout=240))


@pytest.mark.timeout(500)
def test_torch_npu_style_script_on_1_and_2_ranks(tmp_path):
    runs = {}
    for n in (1, 2):
        prof = tmp_path / f"prof{n}"
        prof.mkdir()
        _, results = npurun("torch_npu_style.py", n, args=[prof])
        runs[n] = results
        traces = sorted(os.listdir(prof))
        assert len(traces) == n and all(f"_rank{r}." in t for r, t in enumerate(traces)), traces
        for rank in range(n):
            (r,) = results[rank]
            assert r["device"] == f"npu:{rank}" and r["npu_is_torch_npu"] and r["mem"] and r["soc"] == 220
            assert r["grads_flow"] == [True] * 3, "every parameter gets a gradient through the fused ops"
    # same data on every rank and averaged gradients: 2 ranks train exactly as 1
    for rank in range(2):
        assert runs[2][rank][0]["losses"] == pytest.approx(runs[1][0][0]["losses"], rel=1e-5)
