"""The registry package's public surface and layering."""

from __future__ import annotations

import importlib
import pkgutil

import registry

MODULES = [
    m.name
    for m in pkgutil.iter_modules(registry.__path__, "registry.")
    if m.name != "registry.migrations"
]


def test_every_module_declares_all_and_it_resolves() -> None:
    for name in MODULES:
        mod = importlib.import_module(name)
        assert hasattr(mod, "__all__"), name
        for attr in mod.__all__:
            assert hasattr(mod, attr), f"{name}.{attr}"


def test_public_names_resolve_and_errors_are_documented() -> None:
    for attr in registry.__all__:
        assert hasattr(registry, attr), attr
    errors = importlib.import_module("registry._errors")
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert cls.__doc__, name
        assert issubclass(cls, registry.RegistryError)


def test_pure_layers_import_no_http_or_sql() -> None:
    """tokens, limits and _errors are pure: they run without starlette or sqlalchemy."""
    import subprocess
    import sys

    code = (
        "import sys, registry.tokens, registry.limits, registry._errors\n"
        "print([m for m in ('starlette', 'sqlalchemy', 'boto3') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr
