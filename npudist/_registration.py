"""Registers the npu device with PyTorch, once per process (idempotent).

Order (docs/architecture.md, "Registration order"): the extension is loaded already (it registered the
guard, hooks, allocator and kernels); rename PrivateUse1 to "npu"; register
``torch.npu``; generate the ``Tensor.npu()`` / storage methods.
"""
import torch

_registered = False


def register():
    global _registered
    if _registered:
        return
    name = torch._C._get_privateuse1_backend_name()
    if name != "npu":
        if name != "privateuseone":
            raise RuntimeError(
                f"PrivateUse1 is already registered as '{name}' by another extension in this process; "
                "npudist needs it as 'npu'. Import only one out-of-tree device backend."
            )
        torch.utils.rename_privateuse1_backend("npu")
    import npudist.device as device_module
    from npudist import _C

    # Ops with a dedicated CPU kernel run it on npu too (see cpu_kernel_routing.h).
    _C._route_cpu_kernel_ops()
    # `param.data = t` across cpu and npu (FSDP2 fully_shard of a cpu module, see the module)
    from npudist.device import _set_data

    _set_data.register()
    # An autograd device thread may still release a backward's state at exit (torch race, see module).
    from npudist.device import _exit

    _exit.install()
    # A non-capturable optimizer step during npu graph capture fails (torch checks only cuda/xpu).
    from npudist.graph import capture as _graph_capture

    _graph_capture.install_optimizer_check()
    # npu tensors through torch.multiprocessing (torch's reductions cover cuda only; see the module).
    from npudist.device import ipc as _ipc

    _ipc.register()

    if getattr(torch, "npu", None) is not device_module:
        torch._register_device_module("npu", device_module)
    if not hasattr(torch.Tensor, "npu"):
        torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True)
    _registered = True
