"""No file in ``wgtpm/`` over :data:`MAX_FILE_LINES` lines, no class over
:data:`MAX_CLASS_LINES` (issue 30: one concept a module, a class with one role).

A file or class already over its limit is named in :data:`LONG_FILES` or
:data:`LONG_CLASSES` until it is split; the test fails on one over the limit and
not listed, and on a listed one that is no longer over it (remove it then), so the
lists only shrink. A class is counted from its ``class`` line to its last line.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "wgtpm"
MAX_FILE_LINES = 800
MAX_CLASS_LINES = 300

#: Files over the limit today, each to be split (paths relative to ``wgtpm/``).
LONG_FILES: frozenset[str] = frozenset()
#: Classes over the limit today, as ``path::Class``.
LONG_CLASSES: frozenset[str] = frozenset()
#: Classes with one role that may be long (issue 30: "a parser may be long"): the
#: WeightLang parser is one recursive-descent method per grammar rule and nothing else.
PARSERS = frozenset({"weightlang/_parser.py::Parser"})


def _sizes(root: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Lines of each ``.py`` file under ``root``, and of each class in them (nested ones
    too, named by their path), keyed as in :data:`LONG_FILES` and :data:`LONG_CLASSES`."""
    files: dict[str, int] = {}
    classes: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        files[rel] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                end = node.end_lineno or node.lineno
                classes[f"{rel}::{node.name}"] = end - node.lineno + 1
    return files, classes


def _over(
    sizes: dict[str, int], limit: int, allowed: frozenset[str]
) -> tuple[list[str], list[str]]:
    """What is over ``limit`` and not allowed, and what is allowed but no longer over it."""
    new = [f"{k}: {n} lines" for k, n in sorted(sizes.items()) if n > limit and k not in allowed]
    gone = sorted(k for k in allowed if sizes.get(k, 0) <= limit)
    return new, gone


def test_no_file_over_the_limit() -> None:
    files, _ = _sizes(ROOT)
    new, gone = _over(files, MAX_FILE_LINES, LONG_FILES)
    assert not new, f"files over {MAX_FILE_LINES} lines (split them by concept):\n" + "\n".join(new)
    assert not gone, f"no longer over {MAX_FILE_LINES} lines, remove from LONG_FILES: {gone}"


def test_no_class_over_the_limit() -> None:
    _, classes = _sizes(ROOT)
    classes = {k: n for k, n in classes.items() if k not in PARSERS}
    new, gone = _over(classes, MAX_CLASS_LINES, LONG_CLASSES)
    assert not new, f"classes over {MAX_CLASS_LINES} lines (split them by role):\n" + "\n".join(new)
    assert not gone, f"no longer over {MAX_CLASS_LINES} lines, remove from LONG_CLASSES: {gone}"


def test_the_sizes_are_counted(tmp_path: Path) -> None:
    """The counter sees a long file, a long class, and a class nested in another."""
    body = "\n".join(f"    x{i} = {i}" for i in range(4))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        f"class A:\n{body}\n\n    class B:\n        y = 1\n", encoding="utf-8"
    )
    files, classes = _sizes(tmp_path)
    assert files == {"pkg/m.py": 8}
    assert classes == {"pkg/m.py::A": 8, "pkg/m.py::B": 2}
    assert _over(classes, 5, frozenset({"pkg/m.py::B"})) == (
        ["pkg/m.py::A: 8 lines"],
        ["pkg/m.py::B"],
    )
