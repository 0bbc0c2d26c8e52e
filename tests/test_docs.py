"""SECURITY.md states only what tests show: every test it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# `file.py::test_a`, `::test_b` (same file as the reference before it), or `dir/file.py`
_REF = re.compile(r"`((?:[\w/]+\.py)?)(?:::(test_\w+))?`")


def _references(text: str) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    last = ""
    for m in _REF.finditer(text):
        file, test = m.group(1), m.group(2)
        if not file and not test:
            continue
        if file:
            last = file
        out.append((last, test))
    return out


def test_security_md_names_only_tests_that_exist() -> None:
    refs = _references((ROOT / "SECURITY.md").read_text(encoding="utf-8"))
    assert len(refs) > 30
    missing = []
    for file, test in refs:
        path = ROOT / "tests" / file
        if not path.is_file():
            missing.append(file)
        elif test and not re.search(rf"^def {test}\(", path.read_text(), re.M):
            missing.append(f"{file}::{test}")
    assert not missing, f"SECURITY.md names tests that do not exist: {missing}"
