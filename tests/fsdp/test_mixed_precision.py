"""The flagship's --mp bf16 is really bf16: FSDP2's all-gathers move bf16 parameters and its
reduce-scatters fp32 gradients (read from the hccl flight recorder), forward sees bf16 weights.
The fp32 policy is checked too."""
import pytest
import torch
import torch.distributed as dist

from npudist.testing.multiproc import run_on_ranks
from npudist.watchdog.flight_recorder import flight_recorder_trace
from tests.fsdp.tiny_gpt import TINY, Checker, build_fsdp_model, global_batch


def _collectives(after):
    """(name, input dtypes, output dtypes) of the recorder's entries after record_id `after`."""
    out = []
    for e in flight_recorder_trace()["entries"]:
        if e["record_id"] > after:
            out.append((e["profiling_name"], e["input_dtypes"], e["output_dtypes"]))
    return out


def _last_id():
    entries = flight_recorder_trace()["entries"]
    return entries[-1]["record_id"] if entries else -1


def mp_dtypes_on_rank():
    """Per rank (the hccl group is up): the flagship's FSDP2 model with --mp bf16
    (MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)) and with fp32 trains one
    step; one Checker summary of what the collectives moved."""
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("npu", torch.npu.current_device())
    check = Checker()
    for mp, gather, reduce in (("bf16", "BFloat16", "Float"), ("fp32", "Float", "Float")):
        model = build_fsdp_model(TINY, dev, mp)
        seen = []
        model.blocks[0].register_forward_pre_hook(lambda m, a, seen=seen: seen.append(m.qkv.weight.dtype))
        start = _last_id()
        x = global_batch(0, world)[rank * 2:(rank + 1) * 2].to(dev)
        _, loss = model(x[:, :-1], x[:, 1:])
        loss.backward()
        torch.npu.synchronize()
        colls = _collectives(start)
        gathers = [c for c in colls if "all_gather" in c[0] or "allgather" in c[0]]
        scatters = [c for c in colls if "reduce_scatter" in c[0]]
        check.true(len(gathers) >= 2 * (TINY.n_layer + 1) - 1, f"{mp}: FSDP2 all-gathered", str(colls))
        check.true(len(scatters) >= TINY.n_layer + 1, f"{mp}: FSDP2 reduce-scattered", str(colls))
        check.true(all(c[1] == [gather] and c[2] == [gather] for c in gathers), f"{mp}: all-gathers move {gather}",
                   str(gathers))
        check.true(all(c[1] == [reduce] for c in scatters), f"{mp}: reduce-scatters move {reduce}", str(scatters))
        want = torch.bfloat16 if mp == "bf16" else torch.float32
        check.true(seen == [want], f"{mp}: unsharded parameters in forward are {want}", str(seen))
        check.true(loss.dtype == torch.float32 and bool(torch.isfinite(loss)), f"{mp}: loss finite fp32", str(loss))
        grads = {p.grad.dtype for p in model.parameters()}
        check.true(grads == {torch.float32}, f"{mp}: sharded gradients are fp32", str(grads))
    check.report()


@pytest.mark.timeout(240)
def test_fsdp2_bf16_policy_moves_bf16():
    r = run_on_ranks(mp_dtypes_on_rank, 2, timeout=200).check()
    for rank in range(2):
        res = r.summary(rank)
        assert res["failures"] == [], "\n".join(res["failures"])
        assert res["checks"] >= 14, res
