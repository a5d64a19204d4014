"""A CANN-shaped environment for libraries that look for one (DeepSpeed, Accelerate, ...).

On a real Ascend machine CANN's ``set_env.sh`` exports ``ASCEND_HOME_PATH`` and its siblings,
and torch_npu sets ``torch.version.cann`` from the version file under it. Libraries read them:
DeepSpeed's NPU op builders and ``ds_report`` index the process environment for
``ASCEND_HOME_PATH`` (KeyError without it) and walk it for ``ascend_*_install.info``; ``accelerate env`` prints
``torch.version.cann``; others parse ``<home>/<arch>-linux/ascend_toolkit_install.info``.

:data:`HOME` is the directory npudist ships for them: ``<arch>-linux/ascend_toolkit_install.info``
(x86_64 and aarch64) with a CANN-style ``version=`` line (:data:`VERSION`) and a note that it is
not CANN; it has no headers, libraries or binaries. :func:`apply` sets the variables below only
where they are unset, so a real CANN environment always wins. ``import torch_npu`` (npudist's
compatibility package) and npurun call it; ``NPUDIST_CANN_ENV=0`` turns it off.

This module imports neither torch nor npudist's extension (npurun uses it).
"""
from __future__ import annotations

import os
import re

from npudist import _env

HOME = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cann_home")
VERSION = "8.3.RC1"
ENV_SWITCH = "NPUDIST_CANN_ENV"
# What the toolkit's set_env.sh exports that point at the toolkit's root, which is where
# libraries look for the version file. (set_env.sh also exports ASCEND_OPP_PATH and
# TOOLCHAIN_HOME, and extends PATH, LD_LIBRARY_PATH and PYTHONPATH, with the toolkit's opp,
# toolkit, bin and lib folders; the shipped home has none of those, so they are left unset.)
VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_AICPU_PATH")
_INSTALL_INFO = re.compile(r"ascend_.*_install\.info")


def environment(home: str = HOME) -> dict[str, str]:
    """The variables :func:`apply` would set, pointing into ``home``."""
    return dict.fromkeys(VARIABLES, home)


def apply(environ=None) -> dict[str, str]:
    """Sets every variable of :func:`environment` that ``environ`` (default ``os.environ``) lacks.

    Returns the ones it set (empty when ``NPUDIST_CANN_ENV=0`` or all were already set).
    """
    environ = os.environ if environ is None else environ
    if not _env.get_bool(ENV_SWITCH, True, environ=environ):
        return {}
    added = {k: v for k, v in environment().items() if not environ.get(k)}
    environ.update(added)
    return added


def version(home: str | None = None) -> str:
    """The CANN version under ``home`` (default ``$ASCEND_HOME_PATH``), as torch_npu reads it.

    The ``version=`` value of the first ``ascend_*_install.info`` file found walking the
    directory; "not known" when there is none (torch_npu's value then).
    """
    home = home if home is not None else _env.get_str("ASCEND_HOME_PATH", "")
    if not home or not os.path.isdir(home):
        return "not known"
    for dirpath, _, filenames in sorted(os.walk(os.path.realpath(home))):
        for name in sorted(filenames):
            if _INSTALL_INFO.fullmatch(name):
                try:
                    with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                        for line in f:
                            if line.startswith("version="):
                                return line.strip().split("=", 1)[1]
                except OSError:
                    continue
    return "not known"
