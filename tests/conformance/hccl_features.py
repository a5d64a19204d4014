"""Declares npudist's ``hccl`` to PyTorch's distributed test suite.

Imported by ``c10d_suite.py`` *before*
``torch.testing._internal.distributed.distributed_test``: that module's
decorators read ``DistTestCases`` when it is imported, and the ranks
MultiProcessTestCase spawns re-import the suite file (not conftest), so the
registration must live in a module the suite file imports itself.

What it does, and nothing else (torch is never edited):

- adds "hccl" to ``DistTestCases.backend_feature["plugin"]`` (the entry the
  suite provides for out-of-tree backends; ``require_backend_is_available``
  accepts plugins), ``["ddp"]`` and ``["subgroup"]``: hccl implements DDP's
  collectives and sub-groups on cpu tensors; and to ``["gpu"]``, the set of
  backends that drive an accelerator (hccl drives the npu; gloo is in it too):
  the tests it gates run on cpu tensors unless BACKEND is "nccl", and those
  that need CUDA devices skip at run time (``skip_if_lt_x_gpu``) for every
  backend alike;
- checks that the suite cannot read "hccl" as Intel Gaudi's backend. In
  ``common_distributed`` that meaning is tied to ``TEST_HPU`` (``torch.hpu``
  available): ``backend_feature["hpu"] = {"hccl"}``,
  ``requires_accelerator_dist_backend(["hccl"])`` and the "hpu" branches of
  ``skip_if_lt_x_gpu``/``init_multigpu_helper``/``skip_if_no_gpu``. All of them
  are inert when ``TEST_HPU`` is False, which is always the case with npudist
  (it provides ``torch.npu``, never ``torch.hpu``); ``check_not_gaudi`` raises if
  that ever changes, instead of letting Gaudi-only paths run against us.
  ``distributed_test.py`` itself never branches on ``BACKEND == "hccl"``.

Feature sets hccl is *not* added to: "cuda" (DDP communication hooks on
CUDA devices; every such test also needs CUDA devices) and
``skip_collective`` (hccl implements every collective listed there).
"""
from __future__ import annotations

import torch  # noqa: F401  (autoload registers npudist's hccl backend)
import torch.distributed as dist
from torch.testing._internal import common_distributed, common_utils

import npudist.hccl  # noqa: F401  (registration, also with TORCH_DEVICE_BACKEND_AUTOLOAD=0)

FEATURE_SETS = ("plugin", "ddp", "subgroup", "gpu")


def check_not_gaudi() -> None:
    """Raises RuntimeError if the suite could take "hccl" to mean Intel Gaudi's backend."""
    if common_utils.TEST_HPU or common_distributed.TEST_HPU:
        raise RuntimeError("torch.hpu is available in this process: PyTorch's distributed test suite would treat "
                           "'hccl' as Intel Gaudi's backend. Run the conformance suite without habana_frameworks.")
    if "hccl" in common_distributed.DistTestCases.backend_feature.get("hpu", set()):
        raise RuntimeError("DistTestCases.backend_feature['hpu'] lists 'hccl' (Intel Gaudi); refusing to run.")
    if "HCCL" not in dist.Backend._plugins:
        raise RuntimeError("the hccl backend is not registered with torch.distributed (import npudist first)")


def register() -> None:
    """Adds hccl to the suite's plugin, ddp, subgroup and gpu feature sets (idempotent).

    The suite puts cpu tensors through its BACKEND group, and the only name it knows hccl by is
    "hccl" (its tables are keyed by it), while npudist registers hccl for npu only, as torch_npu
    does. Here, for the suite only, "hccl" groups also take cpu tensors: the capability entry
    register_backend wrote lists cpu too, which is what naming "cpu:hccl,npu:hccl" gives a user.
    """
    check_not_gaudi()
    for name in FEATURE_SETS:
        common_distributed.DistTestCases.backend_feature[name].add("hccl")
    capability = dist.Backend.backend_capability["hccl"]
    if "cpu" not in capability:
        capability.append("cpu")


register()
