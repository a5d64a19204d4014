"""The statements Inductor writes into wrapper code for npu (``DeviceOpOverrides``)."""
from torch._inductor.codegen.common import DeviceOpOverrides


class NPUDeviceOpOverrides(DeviceOpOverrides):
    """Device statements for npu wrapper code (the cpu ones, with torch.npu's calls).

    npu kernels take no stream argument: ``get_raw_stream`` returns the
    current stream's id only so generated code that names a stream works.
    """

    def import_get_raw_stream_as(self, name: str) -> str:
        return f"def {name}(device_index):\n    return torch.npu.current_stream(device_index).stream_id\n"

    def set_device(self, device_idx: int) -> str:
        return f"torch.npu.set_device({device_idx})"

    def current_stream(self) -> str:
        return "torch.npu.current_stream()"

    def synchronize(self) -> str:
        return "torch.npu.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.npu.device({device_idx})"

    def cpp_kernel_type(self) -> str:
        return "void*"
