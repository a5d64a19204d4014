"""The Array API namespace behind ``x.__array_namespace__()``, held by the core by registration.

The namespace is npudist.xp itself with the standard's signatures (npudist.xp._array_api builds
it from the finished package), so the core cannot import it; npudist.xp's ``__init__`` builds it
once, at the end of its import, and calls :func:`register`. Importing any part of npudist.xp runs
that ``__init__`` first, so a method call always finds it."""

API_VERSION = "2024.12"
"""The Array API standard version npudist.xp implements."""

API_VERSIONS = ("2021.12", "2022.12", "2023.12", API_VERSION)
"""The versions ``__array_namespace__(api_version=...)`` accepts (the standard's, up to API_VERSION)."""

_NS = None


def register(ns):
    """Records ns (a module) as the Array API namespace; RuntimeError for a second, different one."""
    global _NS
    if _NS is not None and _NS is not ns:
        raise RuntimeError("npudist.xp._core._namespace.register: a namespace is registered already")
    _NS = ns


def check_version(api_version):
    """ValueError unless api_version is None or one of API_VERSIONS."""
    if api_version is not None and api_version not in API_VERSIONS:
        raise ValueError(f"npudist.xp implements the Array API {API_VERSION} (and earlier), not {api_version!r}")


def namespace(api_version=None):
    """The registered namespace, for ``api_version`` None or one of API_VERSIONS (ValueError for
    another; RuntimeError if npudist.xp's import has not registered it, which cannot happen once
    ``import npudist.xp`` finished)."""
    check_version(api_version)
    if _NS is None:
        raise RuntimeError("npudist.xp's Array API namespace is not registered yet: finish `import npudist.xp` first")
    return _NS
