"""The WeightLang 0.1.0 prototype (``weightc``), run from ../shared/prototypes for cross-checks.

The prototype's code is not part of this repository: :func:`load` extracts
its ``artifact.py``, ``compiler.py`` and ``cli.py`` from the published diff
(``../shared/prototypes/weightlang-0.1.0-partial.diff.txt``) into a
temporary package, beside two stand-ins for the modules the diff lacks:
``syntax`` (``WgtError`` and plain program objects, built here in Python
rather than parsed) and ``packages`` (no module imports). Tests skip when the
prototype is not there.

The golden artifacts under ``tests/testdata/weightlang/prototype/`` were
written by the prototype's own compiler through this module::

    PYTHONPATH=. python -m tests.weightlang.prototype tests/testdata/weightlang/prototype
"""

from __future__ import annotations

import importlib
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DIFF = ROOT.parent / "shared" / "prototypes" / "weightlang-0.1.0-partial.diff.txt"
GOLDEN = ROOT / "tests" / "testdata" / "weightlang" / "prototype"

# Stand-in for the prototype's syntax.py: what compiler.py and artifact.py use of it.
_SYNTAX = """
from __future__ import annotations
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class WgtError(Exception):
    def __init__(self, message: str, line: int | None = None, path: str | None = None) -> None:
        self.message, self.line, self.path = message, line, path
        where = f"{path}:{line}: " if path and line else f"{path}: " if path else ""
        super().__init__(where + message)


@dataclass
class Tensor:
    name: str
    shape: list[int]


@dataclass
class Layer:
    name: str
    op: str
    args: dict[str, Any]
    line: int = 0


@dataclass
class Dataset:
    inputs: list[list[float]]
    targets: list[list[float]]


@dataclass
class Train:
    data: str
    loss: str
    optimizer: str
    lr: float
    epochs: int
    line: int = 0


@dataclass
class Import:
    target: str
    source: str
    source_layer: str
    freeze: bool = False
    sha256: str | None = None
    line: int = 0


@dataclass
class Program:
    version: str
    model: str
    seed: int
    input: Tensor
    output: Tensor
    layers: list[Layer]
    datasets: dict[str, Dataset] = field(default_factory=dict)
    train: Train | None = None
    imports: list[Import] = field(default_factory=list)
    path: str | None = None

    def layer(self, name: str) -> Layer | None:
        return next((layer for layer in self.layers if layer.name == name), None)


PROGRAMS: dict[str, Program] = {}


def parse_file(path: str | Path) -> Program:
    return PROGRAMS[str(Path(path).resolve())]


def parse(text: str, path: str | None = None) -> Program:
    raise WgtError("the stand-in syntax module parses nothing; register a Program")
"""

_PACKAGES = """
MOD_FILE, SUM_FILE = "wgt.mod", "wgt.sum"


def is_module_import(source: str) -> bool:
    return False


def resolve_module_import(source: str, base: object) -> object:
    raise AssertionError("module imports are not part of the stand-in")
"""


def available() -> bool:
    return DIFF.is_file()


def _files(diff: str) -> dict[str, str]:
    """The added files of the diff: ``{"artifact.py": text, ...}``."""
    files: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in diff.splitlines():
        head = re.fullmatch(r"weightlang/(\w+\.py)", line)
        if head:
            current = files.setdefault(head.group(1), [])
        elif current is not None and line.startswith("+"):
            current.append(line[1:])
    return {name: "\n".join(lines) + "\n" for name, lines in files.items()}


def load(workdir: Path) -> ModuleType:
    """Extract the prototype into ``workdir`` as the package ``weightc_proto``; import it."""
    pkg = workdir / "weightc_proto"
    pkg.mkdir(parents=True, exist_ok=True)
    for name, text in _files(DIFF.read_text(encoding="utf-8")).items():
        (pkg / name).write_text(text, encoding="utf-8")
    (pkg / "syntax.py").write_text(_SYNTAX, encoding="utf-8")
    (pkg / "packages.py").write_text(_PACKAGES, encoding="utf-8")
    for name in [m for m in sys.modules if m == "weightc_proto" or m.startswith("weightc_proto.")]:
        del sys.modules[name]
    sys.path.insert(0, str(workdir))
    try:
        proto = importlib.import_module("weightc_proto")
        for sub in ("artifact", "compiler", "cli", "syntax"):
            importlib.import_module(f"weightc_proto.{sub}")
    finally:
        sys.path.remove(str(workdir))
    return proto


# --- the golden artifacts ------------------------------------------------------

XOR_ROWS = ([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], [[0.0], [1.0], [1.0], [0.0]])

XOR_WGT = """\
// XOR, the smallest problem a linear model cannot solve.
wgt 0.1
model xor
seed 0

input x: f32[2]
output y: f32[1]

layer h1 = linear(in=2, out=8)
layer a1 = tanh
layer out = linear(in=8, out=1)
layer p = sigmoid

data xor {
  [0, 0] -> [0]
  [0, 1] -> [1]
  [1, 0] -> [1]
  [1, 1] -> [0]
}

train data=xor loss=bce optimizer=adam lr=0.05 epochs=500
"""

CLASSIFIER_WGT = """\
// Reuses xor's trained hidden layer, pinned and frozen; trains a new head.
wgt 0.1
model classifier
seed 1

input x: f32[2]
output y: f32[1]

layer h1 = linear(in=2, out=8)
layer a1 = tanh
layer out = linear(in=8, out=1)
layer p = sigmoid

import h1 from "../xor".h1 freeze sha256=PIN

data xor {
  [0, 0] -> [0]
  [0, 1] -> [1]
  [1, 0] -> [1]
  [1, 1] -> [0]
}

train data=xor loss=bce optimizer=adam lr=0.05 epochs=300
"""

REGRESS_WGT = """\
// y = x0 - x1 by plain gradient descent on the squared error.
wgt 0.1
model regress
seed 3

input x: f32[2]
output y: f32[1]

layer h = linear(in=2, out=4)
layer r = relu
layer out = linear(in=4, out=1)

data pairs {
  [0, 0] -> [0]
  [1, 0] -> [1]
  [0.5, 0.25] -> [0.25]
  [1, 1] -> [0]
}

train data=pairs loss=mse optimizer=sgd lr=0.1 epochs=200
"""

UNTRAINED_WGT = """\
// No train statement: random weights only.
wgt 0.1
model untrained
seed 5

input x: f32[3]
output y: f32[2]

layer h = linear(in=3, out=2)
layer s = sigmoid
"""


def programs(syntax: Any, pin: str) -> dict[str, Any]:
    """The prototype's program objects for the four sources (what its parser would give)."""
    t, lay, tr = syntax.Tensor, syntax.Layer, syntax.Train

    def linear(name: str, n_in: int, n_out: int) -> Any:
        return lay(name, "linear", {"in": n_in, "out": n_out})

    def xor_like(model: str, seed: int, epochs: int) -> Any:
        return syntax.Program(
            "0.1",
            model,
            seed,
            t("x", [2]),
            t("y", [1]),
            [
                linear("h1", 2, 8),
                lay("a1", "tanh", {}),
                linear("out", 8, 1),
                lay("p", "sigmoid", {}),
            ],
            {"xor": syntax.Dataset(*XOR_ROWS)},
            tr("xor", "bce", "adam", 0.05, epochs),
        )

    xor = xor_like("xor", 0, 500)
    classifier = xor_like("classifier", 1, 300)
    classifier.imports = [syntax.Import("h1", "../xor", "h1", True, pin or None)]
    regress = syntax.Program(
        "0.1",
        "regress",
        3,
        t("x", [2]),
        t("y", [1]),
        [linear("h", 2, 4), lay("r", "relu", {}), linear("out", 4, 1)],
        {
            "pairs": syntax.Dataset(
                [[0.0, 0.0], [1.0, 0.0], [0.5, 0.25], [1.0, 1.0]], [[0.0], [1.0], [0.25], [0.0]]
            )
        },
        tr("pairs", "mse", "sgd", 0.1, 200),
    )
    untrained = syntax.Program(
        "0.1",
        "untrained",
        5,
        t("x", [3]),
        t("y", [2]),
        [linear("h", 3, 2), lay("s", "sigmoid", {})],
    )
    return {"xor": xor, "classifier": classifier, "regress": regress, "untrained": untrained}


SOURCES = {
    "xor": XOR_WGT,
    "classifier": CLASSIFIER_WGT,
    "regress": REGRESS_WGT,
    "untrained": UNTRAINED_WGT,
}


def write_goldens(out: Path, workdir: Path) -> None:
    """Compile the four sources with the prototype's compiler into ``out/<model>``."""
    proto = load(workdir)
    syntax, compiler = proto.syntax, proto.compiler
    src = workdir / "src"
    src.mkdir(exist_ok=True)
    pin = ""
    for name in ("xor", "regress", "untrained", "classifier"):
        text = SOURCES[name].replace("PIN", pin)
        path = src / f"{name}.wgt"
        path.write_text(text, encoding="utf-8")
        program = programs(syntax, pin)[name]
        program.path = str(path)
        syntax.PROGRAMS[str(path.resolve())] = program
        # Built beside src/, so that the classifier's "../xor" is the xor artifact.
        result = compiler.compile_file(path, workdir)
        if name == "xor":
            pin = result.manifest["weights"]["sha256"]
        print(f"{name}: weights sha256 {result.manifest['weights']['sha256']}")
    for name in SOURCES:
        shutil.rmtree(out / name, ignore_errors=True)
        shutil.copytree(workdir / name, out / name)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        write_goldens(Path(sys.argv[1]), Path(tmp))
