"""compile-by-training (../shared/prototypes/compile-by-training.py.txt) loaded as a module at test time.

Its code is not copied into the repository: the prototype is read from the
shared folder and executed into a fresh module, so tests can compare wgtpm
with compile.py's own functions. Tests that need it skip when it is absent.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

PROTOTYPE = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "prototypes"
    / "compile-by-training.py.txt"
)


def load() -> types.ModuleType:
    """The prototype as a module named ``compile_by_training``; skips the test when it is absent."""
    cached = sys.modules.get("compile_by_training")
    if cached is not None:
        return cached
    if not PROTOTYPE.is_file():
        pytest.skip(f"the compile-by-training prototype is not at {PROTOTYPE}")
    text = PROTOTYPE.read_text(encoding="utf-8")
    # The file opens with its name ("compile.py") on a line of its own, before the script.
    text = text[text.index("#!/usr/bin/env python3") :]
    module = types.ModuleType("compile_by_training")
    module.__file__ = str(PROTOTYPE)
    sys.modules["compile_by_training"] = module  # dataclasses look their module up
    try:
        exec(compile(text, str(PROTOTYPE), "exec"), module.__dict__)
    except BaseException:
        del sys.modules["compile_by_training"]
        raise
    return module
