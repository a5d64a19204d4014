"""``torch_npu.optim``: the fused optimizers with torch.optim's math.

NpuFusedAdamW, NpuFusedAdam, NpuFusedSGD, NpuFusedRMSprop and NpuFusedAdadelta are
torch.optim.AdamW / Adam / SGD / RMSprop / Adadelta (torch's foreach
implementations run on npu); torch_npu's flattening of parameters into one
buffer is not done. NpuFusedLamb, NpuFusedAdamP, NpuFusedBertAdam,
NpuFusedRMSpropTF and NpuFusedOptimizerBase raise an error naming them.
"""
import torch

from npudist.compat.names import missing as _missing


class NpuFusedAdamW(torch.optim.AdamW):
    """torch.optim.AdamW (torch_npu.optim.NpuFusedAdamW's arguments are AdamW's)."""


class NpuFusedAdam(torch.optim.Adam):
    """torch.optim.Adam."""


class NpuFusedSGD(torch.optim.SGD):
    """torch.optim.SGD."""


class NpuFusedRMSprop(torch.optim.RMSprop):
    """torch.optim.RMSprop."""


class NpuFusedAdadelta(torch.optim.Adadelta):
    """torch.optim.Adadelta."""


def __getattr__(name):
    raise _missing("torch_npu.optim", name)
