"""The package surface: every public name exists, the error tree is exported, imports stay light."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import wgtpm
from wgtpm import _errors


def _modules() -> list[str]:
    return [
        m.name
        for m in pkgutil.walk_packages(wgtpm.__path__, "wgtpm.")
        if not m.name.endswith("__main__")
    ]


def test_every_all_name_exists() -> None:
    for name in _modules():
        mod = importlib.import_module(name)
        for attr in getattr(mod, "__all__", []):
            assert hasattr(mod, attr), f"{name}.__all__ names {attr}, which does not exist"


def test_every_error_is_exported_and_documented() -> None:
    errors = [
        v
        for v in vars(_errors).values()
        if isinstance(v, type) and issubclass(v, Exception) and v.__module__ == _errors.__name__
    ]
    for cls in errors:
        assert getattr(wgtpm, cls.__name__) is cls, f"wgtpm.{cls.__name__} is not exported"
        assert cls.__doc__, f"{cls.__name__} has no docstring"
        assert cls.__name__ in (_errors.__doc__ or ""), f"{cls.__name__} is missing from the tree"
    assert {"load", "load_layer"} <= set(wgtpm.__all__)


def test_cli_and_resolving_paths_import_nothing_heavy() -> None:
    code = (
        "import sys, wgtpm, wgtpm.cli, wgtpm.modload.project, wgtpm.modload.resolver, wgtpm.modget, wgtpm.modfetch, wgtpm.sources.chain\n"
        "wgtpm.cli.build_parser()\n"
        "heavy = ['torch', 'transformers', 'peft', 'gguf', 'huggingface_hub', 'safetensors', 'numpy']\n"
        "print(' '.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == ""
