"""The one reader of environment variables in npudist's Python code (docs/env_vars.md).

Every variable npudist or npurun reads goes through these functions, so every variable parses
the same way as in the C++ extension (``csrc/util/env.h``, its mirror): unset or empty means
the default; anything else must be a valid value, or the read raises :class:`EnvError` (a
``ValueError``) naming the variable, the value given and the values allowed. Nothing is ignored
with a warning.

Booleans accept ``1``/``0``, ``true``/``false``, ``yes``/``no``, ``on``/``off`` in any case.

This module itself imports only the standard library.
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping

TRUE_VALUES = ("1", "true", "yes", "on")
FALSE_VALUES = ("0", "false", "no", "off")


class EnvError(ValueError):
    """An environment variable holds a value that is not allowed."""


def invalid_message(name: str, value: str, expected: str) -> str:
    """``NAME='value' is not valid: expected <expected> (or unset it for the default)``."""
    return f"{name}={value!r} is not valid: expected {expected} (or unset it for the default)"


def raw(name: str, keep_empty: bool = False, environ: Mapping[str, str] | None = None) -> str | None:
    """The value as set; ``None`` when unset, and when empty unless ``keep_empty``."""
    v = (os.environ if environ is None else environ).get(name)
    if v is None or (v == "" and not keep_empty):
        return None
    return v


def get_str(name: str, default: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The value as set, or ``default`` when unset or empty."""
    v = raw(name, environ=environ)
    return default if v is None else v


def get_bool(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    """``True`` for 1/true/yes/on, ``False`` for 0/false/no/off (any case); else :class:`EnvError`."""
    v = raw(name, environ=environ)
    if v is None:
        return default
    s = v.strip().lower()
    if s in TRUE_VALUES:
        return True
    if s in FALSE_VALUES:
        return False
    raise EnvError(invalid_message(name, v, "one of 1, 0, true, false, yes, no, on, off"))


def get_int(name: str, default: int | None, lo: int | None = None, hi: int | None = None,
            environ: Mapping[str, str] | None = None) -> int | None:
    """A whole decimal number within ``[lo, hi]`` (bounds optional); else :class:`EnvError`."""
    v = raw(name, environ=environ)
    if v is None:
        return default
    try:
        x = int(v.strip(), 10)
    except ValueError:
        x = None
    if x is None or (lo is not None and x < lo) or (hi is not None and x > hi):
        raise EnvError(invalid_message(name, v, _range("an integer", lo, hi)))
    return x


def get_float(name: str, default: float | None, lo: float | None = None, hi: float | None = None,
              environ: Mapping[str, str] | None = None) -> float | None:
    """A finite number within ``[lo, hi]`` (bounds optional); else :class:`EnvError`."""
    v = raw(name, environ=environ)
    if v is None:
        return default
    try:
        x = float(v.strip())
    except ValueError:
        x = None
    if x is None or not math.isfinite(x) or (lo is not None and x < lo) or (hi is not None and x > hi):
        raise EnvError(invalid_message(name, v, _range("a number", lo, hi)))
    return x


def get_choice(name: str, default: str | None, allowed: Iterable[str],
               environ: Mapping[str, str] | None = None) -> str | None:
    """One of ``allowed`` (exact, case-sensitive); else :class:`EnvError`."""
    allowed = list(allowed)
    v = raw(name, environ=environ)
    if v is None:
        return default
    if v not in allowed:
        raise EnvError(invalid_message(name, v, "one of " + ", ".join(allowed)))
    return v


def _range(what: str, lo, hi) -> str:
    if lo is not None and hi is not None:
        return f"{what} from {lo} to {hi}"
    if lo is not None:
        return f"{what} of at least {lo}"
    if hi is not None:
        return f"{what} of at most {hi}"
    return what
