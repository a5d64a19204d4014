"""The process groups of a logical capture (docs/plan.md, "Pipeline parallelism").

A capture hands out, through npudist.hccl's capture hook (``npudist.hccl._capture_groups``, called by the
creator npudist registers with ``dist.Backend.register_backend``), one of two groups for every "hccl" group the
script makes:

- torch's ``FakeProcessGroup`` (no peers, collectives return at once) for every group, when one rank is
  captured; and for every group but the pipeline group when several are;
- :class:`PipelineGroup` for the pipeline group of a multi-stage capture: the group whose global ranks are
  exactly the captured ranks (``python -m npudist.plan capture --ranks R0,R1,...``, one process per stage, all
  running at once). It is joined by a real Gloo group over the capture's TCPStore: a collective or send/recv of
  REAL tensors (torch's pipeline warm-up vote, the DYNAMIC shape exchange's ``send_object_list`` /
  ``recv_object_list``) travels for real (copied to cpu for Gloo and back); one of FAKE tensors (activations,
  gradients: what the step trace records) exchanges nothing and completes at once, as on the fake group.

Which ops take real tensors is up to the capture's dispatch mode (npudist.plan.script.CaptureMode): it keeps
npu tensors made inside torch's warm-up vote and metadata exchange real. Real traffic is synchronous (the work
returned is complete): torch's pipelining waits for each of those ops at once anyway. Its timeout is the group's
(``init_process_group(timeout=)``, torch's default otherwise), so a stage whose peer died fails instead of hanging.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import FakeProcessGroup, ProcessGroup, _create_work_from_future
from torch._subclasses.fake_tensor import FakeTensor

__all__ = ["PipelineGroup", "capture_groups", "is_real_group"]

# the global ranks (sorted tuples) of the real groups made in this process
_real_groups: set[tuple[int, ...]] = set()


def _done(result) -> dist.Work:
    fut = torch.futures.Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


def _is_fake(tensors) -> bool:
    return any(isinstance(t, FakeTensor) or t.device.type == "meta" for t in tensors)


class PipelineGroup(ProcessGroup):
    """The capture's pipeline group (module doc): real tensors through ``gloo`` (a ProcessGroupGloo of the same
    ranks, in the same order), fake ones recorded only; ``name``: torch's name of the group (what the trace calls
    it). Supports send, recv, broadcast, allreduce, allgather and barrier with real tensors; of fake tensors also
    ``all_gather_into_tensor``, ``reduce_scatter(_tensor)``, ``all_to_all_single`` and ``reduce``; another
    collective on real tensors raises RuntimeError naming it. Every collective of fake tensors is recorded here
    (torch uses a Python ProcessGroup as the group itself, so its ops bypass the dispatcher where the step recorder
    sees the fake groups')."""

    def __init__(self, rank: int, size: int, gloo: dist.ProcessGroup, ranks: list[int], name: str):
        super().__init__(rank, size)
        self._gloo, self._ranks, self._name = gloo, list(ranks), name

    def getBackendName(self) -> str:  # noqa: N802 - torch's ProcessGroup method name
        return "hccl"

    # torch uses a Python ProcessGroup as the group itself, without backends to hold its name: DeviceMesh reads it
    def getGroupName(self) -> str:  # noqa: N802 - torch's ProcessGroup method name
        return self._name

    def getGroupDesc(self) -> str:  # noqa: N802 - torch's ProcessGroup method name
        return f"npudist.plan pipeline group {self._ranks}"

    def _record(self, name: str, ins, outs, peer: int | None = None) -> None:
        # torch uses a Python ProcessGroup as the group itself: its ops do not reach the dispatcher, where the
        # step recorder sees the other groups' collectives, so it records them here
        from npudist.plan.capture import recording

        rec = recording()
        if rec is not None and not rec.in_collective:  # not when the recorder saw it as a functional collective
            rec.record_collective(name, self._name, self._ranks, list(ins), list(outs), peer)

    def _real(self, tensors, run) -> dist.Work:
        cpu = [t.detach().cpu() for t in tensors]
        run(cpu).wait()
        for t, c in zip(tensors, cpu, strict=True):
            if c.data_ptr() != t.data_ptr():
                t.copy_(c)
        return _done(tensors)

    def send(self, tensors, dst: int, tag: int) -> dist.Work:
        self._record("send", tensors, tensors, dst)
        if _is_fake(tensors):
            return _done(None)
        for t in tensors:
            self._gloo.send([t.detach().cpu()], dst, tag).wait()
        return _done(None)

    def recv(self, tensors, src: int, tag: int) -> dist.Work:
        self._record("recv", (), tensors, src)
        if _is_fake(tensors):
            return _done(tensors)
        return self._real(tensors, lambda cpu: self._gloo.recv(cpu, src, tag))

    def broadcast(self, tensors, opts) -> dist.Work:
        self._record("broadcast", tensors, tensors)
        if _is_fake(tensors):
            return _done(tensors)
        return self._real(tensors, lambda cpu: self._gloo.broadcast(cpu, opts))

    def allreduce(self, tensors, opts) -> dist.Work:
        self._record("all_reduce", tensors, tensors)
        if _is_fake(tensors):
            return _done(tensors)
        return self._real(tensors, lambda cpu: self._gloo.allreduce(cpu, opts))

    def allgather(self, outputs, inputs, opts) -> dist.Work:
        self._record("allgather", inputs, [o for row in outputs for o in row])
        if _is_fake(inputs) or any(_is_fake(o) for o in outputs):
            return _done(outputs)
        outs = [[o.detach().cpu() for o in row] for row in outputs]
        self._gloo.allgather(outs, [t.detach().cpu() for t in inputs], opts).wait()
        for row, crow in zip(outputs, outs, strict=True):
            for o, c in zip(row, crow, strict=True):
                o.copy_(c)
        return _done(outputs)

    def barrier(self, opts) -> dist.Work:
        self._gloo.barrier().wait()
        return _done(None)

    def _fake_only(self, name: str, ins, outs) -> dist.Work:
        # collectives the pipeline's real traffic never uses: recorded for fake tensors (as on a fake group),
        # an error for real ones
        self._record(name, ins, outs)
        if ins and _is_fake(ins) or outs and _is_fake(outs):
            return _done(list(outs))
        raise RuntimeError(f"npudist.plan capture: {name} of real tensors over the pipeline group {self._ranks} is "
                           f"not supported (real traffic between stages: send/recv, broadcast, allreduce, allgather, "
                           f"barrier)")

    def _allgather_base(self, output, input, opts) -> dist.Work:
        return self._fake_only("_allgather_base", [input], [output])

    def _reduce_scatter_base(self, output, input, opts) -> dist.Work:
        return self._fake_only("_reduce_scatter_base", [input], [output])

    def reduce_scatter(self, outputs, input_lists, opts) -> dist.Work:
        return self._fake_only("reduce_scatter", [t for row in input_lists for t in row], outputs)

    def alltoall_base(self, output, input, output_splits, input_splits, opts) -> dist.Work:
        return self._fake_only("alltoall_base", [input], [output])

    def reduce(self, tensors, opts) -> dist.Work:
        return self._fake_only("reduce", tensors, tensors)


def is_real_group(ranks) -> bool:
    """True if a group of these global ranks is a :class:`PipelineGroup` of this process (real traffic)."""
    return tuple(sorted(int(r) for r in ranks)) in _real_groups


def capture_groups(pipeline_ranks: list[int] | None, store_addr: tuple[str, int] | None):
    """The creator for npudist.hccl's capture hook (module doc): ``FakeProcessGroup`` for every group, except a
    group whose global ranks are exactly ``pipeline_ranks`` (a multi-stage capture), which is a
    :class:`PipelineGroup` joined over the TCPStore at ``store_addr`` (host, port: the one the capture's processes
    share). The k-th such group of a process meets the k-th of the others (torch makes groups in the same order
    on every rank)."""
    want = tuple(sorted(pipeline_ranks)) if pipeline_ranks and len(pipeline_ranks) > 1 else None
    made: dict[tuple[int, ...], int] = {}

    def create(o, backend_options):
        ranks = list(o.global_ranks_in_group or range(o.group_size))
        key = tuple(sorted(int(r) for r in ranks))
        if want is None or key != want:
            return FakeProcessGroup._create_internal(o.group_rank, o.group_size, backend_options)
        n = made[key] = made.get(key, 0) + 1
        host, port = store_addr
        store = dist.TCPStore(host, port, is_master=False, timeout=o.timeout, use_libuv=True)
        prefix = dist.PrefixStore(f"npudist_plan_pipeline/{','.join(map(str, key))}/{n}/", store)
        gloo = dist.ProcessGroupGloo(prefix, o.group_rank, o.group_size, o.timeout)
        _real_groups.add(key)
        return PipelineGroup(o.group_rank, o.group_size, gloo, ranks, o.group_id or f"pipeline{n}")

    return create
