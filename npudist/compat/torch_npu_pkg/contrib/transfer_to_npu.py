"""``from torch_npu.contrib import transfer_to_npu``: a script written for CUDA runs on npu.

Importing this module turns the redirection on, as torch_npu's does; it is npudist's
opt-in, reversible layer over public torch API (npudist.compat.transfer, which lists
what is redirected). ``disable()`` turns it off again.
"""
from npudist.compat.transfer import disable, enable, is_enabled  # noqa: F401  (torch_npu.contrib.transfer_to_npu's names)

enable()
