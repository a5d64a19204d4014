"""Lint rules ruff cannot express: every ``# noqa`` says why on its own line.

``./run.sh lint`` runs ruff with the configuration in pyproject.toml ([tool.ruff]); a
suppression without a reason hides whether the finding was judged or just silenced, so a
``noqa`` must name its codes and carry a few words of reason after them, e.g.
``import npudist  # noqa: F401  (registers npu when torch's backend autoload is off)``.
"""
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP_DIRS = {".venv", "build", "checkpoints", "node_modules", "__pycache__"}

_NOQA = re.compile(r"#\s*noqa\b(?P<rest>.*)$", re.IGNORECASE)
# codes, then a separator, then a reason with at least one word of three letters
_WITH_REASON = re.compile(r"^:\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*\s+[-(–:]?\s*\(?.*[A-Za-z]{3}")


def python_files(root=REPO):
    """Yields the repository's .py files (paths relative to root), skipping venvs and builds."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".py"):
                yield os.path.relpath(os.path.join(dirpath, name), root)


def noqa_without_reason(text):
    """Line numbers (1-based) of ``noqa`` comments in text that lack codes or a reason."""
    bad = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _NOQA.search(line)
        if m and not _WITH_REASON.match(m.group("rest")):
            bad.append(lineno)
    return bad


def test_the_checker_tells_a_reason_from_none():
    assert noqa_without_reason("import x  # noqa: F401  (registers the device)\n") == []
    assert noqa_without_reason("except Exception:  # noqa: BLE001 - the error is the result\n") == []
    assert noqa_without_reason("import x  # noqa: E402,F401  (after sys.path is set)\n") == []
    assert noqa_without_reason("import x  # noqa: F401\n") == [1]
    assert noqa_without_reason("import x  # noqa\n") == [1]
    assert noqa_without_reason("import x  # NOQA: F401 ()\n") == [1]
    assert noqa_without_reason("a = 1\nimport x  # noqa:F401,E402\n") == [2]


def test_every_noqa_has_a_reason():
    missing = []
    for rel in python_files():
        if rel == os.path.join("tests", "test_lint.py"):  # its examples are the bad cases
            continue
        with open(os.path.join(REPO, rel), encoding="utf-8", errors="replace") as f:
            missing += [f"{rel}:{n}" for n in noqa_without_reason(f.read())]
    assert not missing, (
        "these `noqa` comments give no reason; write why after the codes, e.g. "
        "`# noqa: F401  (registers npu)`, or fix the finding:\n  " + "\n  ".join(missing))
