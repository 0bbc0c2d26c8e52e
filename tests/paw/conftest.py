"""Fixtures for PAW tests: a tiny Qwen3 interpreter, its base-model GGUF, and one built program."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from wgtpm._report import Silent
from wgtpm.deps import MapResolver, ResolvedModule
from wgtpm.paw.tiny import make_tiny_qwen3, write_base_gguf

INTERPRETER_MODULE = "hf.co/wgtpm-tests/tiny-qwen3"
BASE_MODULE = "hf.co/wgtpm-tests/tiny-qwen3-gguf"
BASE_FILE = "tiny-qwen3.gguf"

FRUIT = {"red": "apple", "yellow": "banana", "green": "lime", "purple": "grape"}

#: Trains the tiny model to answer FRUIT reliably in about two seconds on one core.
FAST_RECIPE = """
[recipe]
steps = 150
batch_size = 4
micro_batch_size = 2
learning_rate = 1e-2
min_learning_rate = 1e-3
lora_rank = 32
lora_alpha = 32.0
max_length = 128
loss_chunk_size = 16
device = "cpu"
lora_init = "random"
"""

TINY_RUNTIME = f"""
[runtime]
id = "tiny-qwen3-test"
interpreter = "wgtpm-tests/tiny-qwen3"
base_model = "{BASE_MODULE}/{BASE_FILE}"
n_ctx = 512
"""


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_qwen3(tmp_path_factory.mktemp("tiny-qwen3"))


@pytest.fixture(scope="session")
def base_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tiny-qwen3-gguf")
    write_base_gguf(directory / BASE_FILE)
    return directory


@pytest.fixture(scope="session")
def resolver(tiny_dir: Path, base_dir: Path) -> MapResolver:
    """The build list of the packages in these tests: the interpreter and its base GGUF."""
    version = "v0.0.0-20260301000000-000000000000"
    return MapResolver(
        {
            INTERPRETER_MODULE: ResolvedModule(INTERPRETER_MODULE, version, tiny_dir),
            BASE_MODULE: ResolvedModule(BASE_MODULE, version, base_dir),
        }
    )


def write_package(directory: Path, *, spec_extra: str = "", recipe: str = FAST_RECIPE) -> Path:
    """A package directory with fruit.jsonl and fruit.pawspec; returns the spec's path."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [f'{{"input": "{k}", "output": "{v}"}}' for k, v in FRUIT.items()]
    (directory / "fruit.jsonl").write_text("\n".join(lines) + "\n")
    spec = directory / "fruit.pawspec"
    spec.write_text(
        'spec = "Map a colour to a fruit. Reply with the fruit only."\n'
        'pseudo_program = ""\n'
        f'interpreter = "{INTERPRETER_MODULE}"\n'
        'examples = "fruit.jsonl"\n' + spec_extra + recipe + TINY_RUNTIME
    )
    return spec


class Notices(Silent):
    """A reporter that keeps the notice lines, as the CLI would print them."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def notice(self, message: str) -> None:
        self.lines.append(message)


@dataclass(frozen=True)
class Built:
    spec: Path
    paw: Path
    log: list[str]


@pytest.fixture(scope="session")
def fruit(tmp_path_factory: pytest.TempPathFactory, resolver: MapResolver) -> Built:
    """The fruit program, built once for the session from fruit.jsonl."""
    from wgtpm.paw.build import build_program

    root = tmp_path_factory.mktemp("fruit")
    spec = write_package(root / "pkg")
    notices = Notices()
    paw = build_program(spec, root / "out" / "fruit.paw", resolver, name="fruit", reporter=notices)
    return Built(spec, paw, notices.lines)


@pytest.fixture
def rebuild(resolver: MapResolver) -> Callable[[Path, Path], Path]:
    from wgtpm.paw.build import build_program

    def run(spec: Path, out: Path) -> Path:
        return build_program(spec, out, resolver, name="fruit")

    return run
