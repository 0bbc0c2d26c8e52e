"""A ``.pawspec`` artifact reads only files of its package, refused before any training.

The PAW builder of ``wgtpm build`` and ``wgtpm publish``
(:func:`wgtpm.build.build_artifact` on an ``artifact fruit fruit.pawspec``
line) refuses, naming the spec's key on its line, a spec whose ``examples``,
``spec_file``, local interpreter or local base model is a link out of the
package, and an artifact whose ``.pawspec`` is one. Before, the examples from
outside were trained on, and a ``spec_file`` linked to ``/proc/self/environ``
was written into the program's ``meta.json`` as its spec.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.paw.conftest import BASE_FILE, BASE_MODULE, Notices, write_package
from wgtpm._errors import BuildError, ParseError
from wgtpm.build import Target, build_artifact
from wgtpm.deps import MapResolver

ENVIRON = Path("/proc/self/environ")
WHY = "outside the package: commit the file itself, not a link out of the package"


def _package(tmp_path: Path) -> tuple[Path, Path]:
    """The fruit package at ``tmp_path/pkg`` and its spec."""
    spec = write_package(tmp_path / "pkg")
    return spec.parent, spec


def _build(pkg: Path, resolver: MapResolver, source: str = "fruit.pawspec") -> Notices:
    notices = Notices()
    build_artifact(Target(pkg, "fruit", source, pkg / "build"), resolver, notices)
    return notices


def _line(spec: Path, key: str) -> int:
    return next(i for i, t in enumerate(spec.read_text().splitlines(), 1) if t.startswith(key))


def test_examples_linked_out_of_the_package_are_refused_before_training(
    resolver: MapResolver, tmp_path: Path
) -> None:
    pkg, spec = _package(tmp_path)
    outside = tmp_path / "elsewhere.jsonl"
    (pkg / "fruit.jsonl").rename(outside)  # valid examples: before, they were trained on
    (pkg / "fruit.jsonl").symlink_to(outside)
    notices = Notices()
    with pytest.raises(ParseError) as info:
        build_artifact(Target(pkg, "fruit", "fruit.pawspec", pkg / "build"), resolver, notices)
    assert str(info.value) == (
        f"{spec}:{_line(spec, 'examples')}: examples: fruit.jsonl is a symlink to {outside}, {WHY}"
    )
    assert notices.lines == []  # not even the preflight ran
    assert not (pkg / "build/fruit.paw").exists()


@pytest.mark.skipif(not ENVIRON.exists(), reason="needs Linux's /proc/self/environ")
def test_a_spec_file_linked_to_the_environment_is_refused(
    resolver: MapResolver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WGTPM_TEST_SECRET", "paw-canary-never-in-a-program")
    pkg, spec = _package(tmp_path)
    text = spec.read_text().replace(
        'spec = "Map a colour to a fruit. Reply with the fruit only."', 'spec_file = "spec.md"'
    )
    spec.write_text(text)
    (pkg / "spec.md").symlink_to(ENVIRON)
    with pytest.raises(ParseError) as info:
        _build(pkg, resolver)
    assert str(info.value) == (
        f"{spec}:{_line(spec, 'spec_file')}: spec_file: spec.md is a symlink to {ENVIRON}, {WHY}"
    )
    assert "paw-canary" not in str(info.value)
    assert not (pkg / "build/fruit.paw").exists()


def test_a_local_interpreter_with_a_file_linked_out_is_refused(
    resolver: MapResolver, tmp_path: Path, tiny_dir: Path
) -> None:
    pkg, spec = _package(tmp_path)
    local = pkg / "tiny"
    local.mkdir()
    for f in tiny_dir.iterdir():
        (local / f.name).symlink_to(f)  # the files of a model elsewhere, linked in
    spec.write_text(
        spec.read_text().replace(
            'interpreter = "hf.co/wgtpm-tests/tiny-qwen3"', 'interpreter = "./tiny"'
        )
    )
    with pytest.raises(ParseError) as info:
        _build(pkg, resolver)
    first = sorted(f.name for f in tiny_dir.iterdir())[0]
    assert str(info.value) == (
        f"{spec}:{_line(spec, 'interpreter')}: interpreter: ./tiny/{first} is a symlink to "
        f"{tiny_dir / first}, {WHY}"
    )


def test_a_pawspec_linked_out_of_the_package_is_refused(
    resolver: MapResolver, tmp_path: Path
) -> None:
    pkg, spec = _package(tmp_path)
    outside = tmp_path / "other.pawspec"
    spec.rename(outside)
    spec.symlink_to(outside)
    with pytest.raises(BuildError) as info:
        _build(pkg, resolver)
    assert str(info.value) == f"artifact fruit: fruit.pawspec is a symlink to {outside}, {WHY}"


def test_a_local_base_model_linked_out_is_refused(
    resolver: MapResolver, tmp_path: Path, base_dir: Path
) -> None:
    pkg, spec = _package(tmp_path)
    (pkg / "base.gguf").symlink_to(base_dir / BASE_FILE)
    spec.write_text(
        spec.read_text().replace(
            f'base_model = "{BASE_MODULE}/{BASE_FILE}"',
            'base_model = "./base.gguf"\nrepo = "acme/tiny-gguf"',
        )
    )
    with pytest.raises(ParseError) as info:
        _build(pkg, resolver)
    assert str(info.value) == (
        f"{spec}:{_line(spec, 'base_model')}: runtime.base_model: ./base.gguf is a symlink to "
        f"{base_dir / BASE_FILE}, {WHY}"
    )
