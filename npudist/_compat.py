"""Build/runtime compatibility check, run before the C++ extension loads.

The extension links against one torch build; loading it into another crashes
with "undefined symbol" at best. So `import npudist` first compares the torch
it was built against (npudist/_build_info.py, written by setup.py) with the one
imported, and raises ImportError naming both and the command to rebuild.
"""
import os

REBUILD_HINT = "pip install --no-build-isolation -e {src}   (or `./run.sh setup` in the npudist source tree)"


class NpudistBuildError(ImportError):
    """The npudist extension is missing or was built for another torch."""


def _rebuild_command(source_dir):
    return REBUILD_HINT.format(src=source_dir or "<npudist source dir>")


def read_build_info(package_dir):
    """Returns the build info dict from ``package_dir/_build_info.py`` without importing npudist.

    Returns None when the file is missing (the extension was never built).
    """
    path = os.path.join(package_dir, "_build_info.py")
    if not os.path.exists(path):
        return None
    info = {}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), {}, info)
    return info


def mismatch_message(info, torch_version, package_dir):
    """Returns an error message if the build does not fit ``torch_version``, else None."""
    src = (info or {}).get("SOURCE_DIR") or os.path.dirname(package_dir)
    if info is None:
        return (
            "npudist's C++ extension has not been built. Build it against the installed torch "
            f"{torch_version}: {_rebuild_command(src)}"
        )
    built = info.get("TORCH_VERSION")
    if built != torch_version:
        return (
            f"npudist's C++ extension was built against torch {built}, but torch {torch_version} is "
            f"imported. Rebuild it against the installed torch: {_rebuild_command(src)}. "
            "COMPATIBILITY.md lists the torch versions this tree builds against."
        )
    return None


def check_build(package_dir, torch_version):
    """Raises NpudistBuildError when the extension cannot be loaded into this torch."""
    message = mismatch_message(read_build_info(package_dir), torch_version, package_dir)
    if message:
        raise NpudistBuildError(message)


def load_extension(package_dir):
    """Imports npudist._C, turning a loader failure into NpudistBuildError with the fix."""
    try:
        from npudist import _C
    except ImportError as err:
        info = read_build_info(package_dir) or {}
        raise NpudistBuildError(
            f"npudist's C++ extension failed to load ({err}). It probably was built against another "
            f"torch than the one installed; rebuild it: {_rebuild_command(info.get('SOURCE_DIR'))}"
        ) from err
    return _C
