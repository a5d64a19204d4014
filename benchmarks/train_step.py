"""FSDP2 training step of the flagship GPT: npu + hccl vs cpu + Gloo, same code, same run.

For each world size (default 2 and 4) npurun starts that many ranks. Each rank builds the
flagship model (examples/train_gpt.py: GPTConfig defaults, fp32, fully_shard per block and at
the root, explicit prefetch, AdamW, clip_grad_norm_) twice: on npu over the hccl default group,
and on cpu over a Gloo group of the same ranks (DeviceMesh.from_group). For each point
(batch, seq) it times --steps training steps of one, then of the other, --reps times
interleaved, and reports per side the median and best step time, tokens/s of the job, and
the ratio cpu+gloo / npu+hccl (median, best). Points: (1, 64) is communication-bound; (8, 64)
is the flagship's own batch and sequence.

Where the time goes (--profile, default on): on each side, the same model without FSDP on one
rank (forward + backward + AdamW, no collectives: compute) and the FSDP step's collectives
alone (the all-gathers and reduce-scatters FSDP2 issues for this model's parameters, timed
with the same sizes: comm); step - compute - comm is FSDP's Python and copy overhead.

    ./run.sh bench train_step [--ranks 2 4] [--reps 5] [--steps 5] [--points 1x64 8x64]
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def rank_main(args):
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

    sys.path.insert(0, HERE)
    from _ranks import init_npu_rank

    npu = init_npu_rank()
    from train_gpt import GPT, GPTConfig, build_fsdp_model

    rank, world = dist.get_rank(), dist.get_world_size()
    # Gloo for cpu tensors; naming npu too is what new_group needs when the default group is
    # bound to an npu (npudist.fsdp.checkpoint_process_group explains)
    gloo = dist.new_group(backend="cpu:gloo,npu:hccl")
    cpu_mesh = DeviceMesh.from_group(gloo, "cpu")
    npu_mesh = init_device_mesh("npu", (world,))
    cfg = GPTConfig()

    def make(side):
        dev = npu if side == "npu" else torch.device("cpu")
        model = build_fsdp_model(cfg, dev, "fp32", mesh=npu_mesh if side == "npu" else cpu_mesh)
        return model, torch.optim.AdamW(model.parameters(), lr=1e-3), dev

    sides = {s: make(s) for s in ("npu", "cpu")}

    def sync(dev):
        if dev.type == "npu":
            torch.npu.synchronize()

    def time_steps(model, opt, dev, b, t, steps):
        g = torch.Generator().manual_seed(rank)
        x = torch.randint(0, 256, (b, t + 1), generator=g).to(dev)
        sync(dev)
        t0 = time.perf_counter()
        for _ in range(steps):
            _, loss = model(x[:, :-1], x[:, 1:])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
        loss.item()
        sync(dev)
        return (time.perf_counter() - t0) / steps

    def compute_only(dev, b, t, steps):
        torch.manual_seed(0)
        m = GPT(cfg).to(dev)
        o = torch.optim.AdamW(m.parameters(), lr=1e-3)
        return time_steps(m, o, dev, b, t, steps)

    def comm_only(side, steps):
        """FSDP2's collectives for this model, alone: per block (and the root) one all-gather of
        the flat shard in forward, one in backward (reshard_after_forward), one reduce-scatter."""
        model = sides[side][0]
        dev = sides[side][2]
        group = dist.group.WORLD if side == "npu" else gloo
        sizes = []
        for mod in [*model.blocks, model]:
            own = [p for n, p in mod.named_parameters(recurse=True)
                   if mod is not model or not n.startswith("blocks.")]
            sizes.append(sum(p.to_local().numel() for p in own))
        bufs = [(torch.zeros(s, device=dev), torch.zeros(s * world, device=dev)) for s in sizes]
        sync(dev)
        t0 = time.perf_counter()
        for _ in range(steps):
            for shard, full in bufs:
                dist.all_gather_into_tensor(full, shard, group=group)
            for shard, full in reversed(bufs):
                dist.all_gather_into_tensor(full, shard, group=group)
                dist.reduce_scatter_tensor(shard, full, op=dist.ReduceOp.AVG, group=group)
        sync(dev)
        return (time.perf_counter() - t0) / steps

    out = {"world": world, "params": sum(p.numel() for p in GPT(cfg).parameters()), "points": []}
    for b, t in args.points:
        for m, o, d in sides.values():  # warm-up
            time_steps(m, o, d, b, t, 2)
        times = {"npu": [], "cpu": [], **({"npu_staged": []} if args.zero_copy_compare else {})}
        for _ in range(args.reps):
            for s, (m, o, d) in sides.items():
                dist.barrier()
                times[s].append(time_steps(m, o, d, b, t, args.steps))
            if args.zero_copy_compare:  # the npu model again, hccl's zero-copy off on every rank
                from npudist import _C

                dist.barrier()
                _C._hccl_set_zero_copy(False)
                try:
                    times["npu_staged"].append(time_steps(*sides["npu"], b, t, args.steps))
                finally:
                    _C._hccl_set_zero_copy(True)
        pt = {"batch": b, "seq": t, "tokens_per_step": b * t * world, "times": times}
        if args.profile:
            pt["compute"] = {s: min(compute_only(sides[s][2], b, t, args.steps) for _ in range(2)) for s in sides}
            dist.barrier()
            pt["comm"] = {s: min(comm_only(s, args.steps) for _ in range(2)) for s in sides}
        out["points"].append(pt)
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump(out, f)
    dist.destroy_process_group()


def launch(world, args, out):
    from npudist.testing.multiproc import inherited
    from npudist.testing.npurun import run_npurun

    cmd = ["--nproc", world, os.path.abspath(__file__), "--worker", "--out", out, "--reps", args.reps,
           "--steps", args.steps, "--points", *[f"{b}x{t}" for b, t in args.points]]
    cmd += [] if args.profile else ["--no-profile"]
    cmd += ["--zero-copy-compare"] if args.zero_copy_compare else []
    r = run_npurun(cmd, env=inherited("HCCL_", "NPUDIST_"), timeout=None)
    if r.returncode != 0:
        sys.exit(f"benchmark ranks failed ({world} ranks):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    with open(out) as f:
        return json.load(f)


def point(s):
    b, t = s.lower().split("x")
    return int(b), int(t)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    p.add_argument("--reps", type=int, default=5, help="interleaved repetitions per side and point")
    p.add_argument("--steps", type=int, default=5, help="training steps per repetition")
    p.add_argument("--points", type=point, nargs="+", default=[(1, 64), (8, 64)], help="BATCHxSEQ per rank")
    p.add_argument("--no-profile", dest="profile", action="store_false")
    p.add_argument("--zero-copy-compare", action="store_true",
                   help="also time the npu side with hccl's zero-copy collectives off, interleaved")
    p.add_argument("--json", default=os.path.join(HERE, "results", "train_step.json"))
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return rank_main(args)
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    results = []
    print(f"FSDP2 training step of the flagship GPT (fp32), npu+hccl vs cpu+gloo, {args.reps} interleaved reps "
          f"of {args.steps} steps; times in ms per step")
    hdr = (f"{'ranks':>5} {'batch x seq':>11} | {'npu+hccl med':>12} {'best':>7} {'tok/s':>7} | "
           f"{'cpu+gloo med':>12} {'best':>7} {'tok/s':>7} | {'ratio med':>9} {'best':>6}")
    print(hdr)
    print("-" * len(hdr))
    for world in args.ranks:
        res = launch(world, args, args.json + f".{world}.tmp")
        os.remove(args.json + f".{world}.tmp")
        for pt in res["points"]:
            n, c = pt["times"]["npu"], pt["times"]["cpu"]
            pt["npu_median_s"], pt["npu_best_s"] = statistics.median(n), min(n)
            pt["cpu_median_s"], pt["cpu_best_s"] = statistics.median(c), min(c)
            pt["ratio_median"] = pt["cpu_median_s"] / pt["npu_median_s"]
            pt["ratio_best"] = pt["cpu_best_s"] / pt["npu_best_s"]
            tok = pt["tokens_per_step"]
            print(f"{world:>5} {pt['batch']:>5} x {pt['seq']:<3} | {pt['npu_median_s'] * 1e3:>12.1f} "
                  f"{pt['npu_best_s'] * 1e3:>7.1f} {tok / pt['npu_median_s']:>7.0f} | "
                  f"{pt['cpu_median_s'] * 1e3:>12.1f} {pt['cpu_best_s'] * 1e3:>7.1f} {tok / pt['cpu_median_s']:>7.0f} | "
                  f"{pt['ratio_median']:>9.2f} {pt['ratio_best']:>6.2f}")
        results.append(res)
    staged = [(res["world"], pt) for res in results for pt in res["points"] if "npu_staged" in pt["times"]]
    if staged:
        print("\nnpu+hccl with zero-copy collectives (default) vs staged (zero-copy off), ms per step")
        print(f"{'ranks':>5} {'batch x seq':>11} | {'zero-copy med':>13} {'best':>7} | {'staged med':>10} {'best':>7} | "
              f"{'staged/zc med':>13} {'best':>6}")
        for world, pt in staged:
            zc, st = pt["times"]["npu"], pt["times"]["npu_staged"]
            pt["staged_over_zero_copy_median"] = statistics.median(st) / statistics.median(zc)
            pt["staged_over_zero_copy_best"] = min(st) / min(zc)
            print(f"{world:>5} {pt['batch']:>5} x {pt['seq']:<3} | {statistics.median(zc) * 1e3:>13.1f} "
                  f"{min(zc) * 1e3:>7.1f} | {statistics.median(st) * 1e3:>10.1f} {min(st) * 1e3:>7.1f} | "
                  f"{pt['staged_over_zero_copy_median']:>13.2f} {pt['staged_over_zero_copy_best']:>6.2f}")
    if args.profile:
        print("\nwhere a step's time goes (ms, best of 2; overhead = step median - compute - comm)")
        print(f"{'ranks':>5} {'batch x seq':>11} | {'side':>8} {'step':>7} {'compute':>8} {'comm':>7} {'overhead':>9}")
        for res in results:
            for pt in res["points"]:
                for s, label in (("npu", "npu+hccl"), ("cpu", "cpu+gloo")):
                    step = pt[f"{s}_median_s"]
                    comp, comm = pt["compute"][s], pt["comm"][s]
                    print(f"{res['world']:>5} {pt['batch']:>5} x {pt['seq']:<3} | {label:>8} {step * 1e3:>7.1f} "
                          f"{comp * 1e3:>8.1f} {comm * 1e3:>7.1f} {(step - comp - comm) * 1e3:>9.1f}")
    with open(args.json, "w") as f:
        json.dump({"command": " ".join(sys.argv), "reps": args.reps, "steps": args.steps, "results": results}, f,
                  indent=1)
    print(f"\nJSON: {args.json}")


if __name__ == "__main__":
    main()
