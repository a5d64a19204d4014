"""Per rank: the flagship's FSDP2 model with --mp bf16 (MixedPrecisionPolicy(param_dtype=bfloat16,
reduce_dtype=float32)) trains one step; the hccl flight recorder shows what the collectives moved:
all-gathers of bf16 parameters, reduce-scatters of fp32 gradients. The fp32 policy is checked too."""
import torch
from common import TINY, Checker, global_batch, setup
from train_gpt import build_fsdp_model  # examples/ is on sys.path (common)

from npudist.watchdog.flight_recorder import flight_recorder_trace


def collectives(after):
    """(name, input dtypes, output dtypes) of the recorder's entries after record_id `after`."""
    out = []
    for e in flight_recorder_trace()["entries"]:
        if e["record_id"] > after:
            out.append((e["profiling_name"], e["input_dtypes"], e["output_dtypes"]))
    return out


def last_id():
    entries = flight_recorder_trace()["entries"]
    return entries[-1]["record_id"] if entries else -1


def main():
    rank, world, dev = setup()
    check = Checker()
    for mp, gather, reduce in (("bf16", "BFloat16", "Float"), ("fp32", "Float", "Float")):
        model = build_fsdp_model(TINY, dev, mp)
        seen = []
        model.blocks[0].register_forward_pre_hook(lambda m, a: seen.append(m.qkv.weight.dtype))
        start = last_id()
        x = global_batch(0, world)[rank * 2:(rank + 1) * 2].to(dev)
        _, loss = model(x[:, :-1], x[:, 1:])
        loss.backward()
        torch.npu.synchronize()
        colls = collectives(start)
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
    check.finish()


if __name__ == "__main__":
    main()
