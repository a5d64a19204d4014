"""Prints which of torch_npu's public names work here, as the markdown tables of docs/torch_npu_compat.md.

    python -m npudist.compat.report

A name "works" when the attribute resolves on the live modules (after
``import torch_npu``); otherwise the table shows the reason the
NotAvailableOnThisRuntime error gives.
"""
from __future__ import annotations

import importlib

from npudist.compat import _public_names as names
from npudist.compat.names import NotAvailableOnThisRuntime

MODULES = (
    ("torch_npu.npu", names.TORCH_NPU_NPU_ALL),
    ("torch_npu.npu.amp", names.TORCH_NPU_AMP_ALL),
    ("torch_npu.profiler", names.TORCH_NPU_PROFILER_ALL),
    ("torch_npu.optim", names.TORCH_NPU_OPTIM_ALL),
    ("torch_npu.utils", names.TORCH_NPU_UTILS_ALL),
    ("torch_npu.contrib", names.TORCH_NPU_CONTRIB_ALL),
    ("torch_npu (ops in __all__)", names.TORCH_NPU_ALL_OPS_EXPOSED),
)


def status(module_name: str, public: tuple) -> tuple[list[str], dict[str, str]]:
    """(names that resolve, {name: reason} for those that raise NotAvailableOnThisRuntime)."""
    module = importlib.import_module(module_name.split(" ")[0])
    ok, missing = [], {}
    for name in public:
        try:
            getattr(module, name)
            ok.append(name)
        except NotAvailableOnThisRuntime as err:
            text = str(err)
            missing[name] = text.split(": ", 1)[1].split(". docs/")[0] if "runtime (npudist, simulated npu): " in text \
                else "not implemented"
    return ok, missing


def main() -> None:
    import torch_npu  # noqa: F401  (installs torch_npu's modules, which the report walks)

    for module_name, public in MODULES:
        ok, missing = status(module_name, public)
        print(f"\n### `{module_name}`: {len(ok)} of {len(public)} available\n")
        print("Available: " + ", ".join(f"`{n}`" for n in ok) + "\n")
        reasons = {}
        for name, why in missing.items():
            reasons.setdefault(why, []).append(name)
        for why, group in reasons.items():
            print(f"Not available ({why}): " + ", ".join(f"`{n}`" for n in group) + "\n")


if __name__ == "__main__":
    main()
