"""``wgtpm.httpclient`` is a package whose ``__init__`` re-exports its public names: every
name that wgtpm, the registry, the benchmarks or the tests import from it is in its
``__all__`` (and none reaches into its private modules but a test that says why)."""

from __future__ import annotations

import ast
from pathlib import Path

import wgtpm.httpclient

REPO = Path(__file__).resolve().parent.parent


def _imported_names() -> dict[str, set[str]]:
    """Each name imported from ``wgtpm.httpclient`` (or ``..httpclient``), and where."""
    found: dict[str, set[str]] = {}
    for top in ("wgtpm", "registry", "benchmarks", "tests"):
        for path in (REPO / top).rglob("*.py"):
            if "httpclient" not in path.read_text(encoding="utf-8"):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("httpclient"):
                    for alias in node.names:
                        found.setdefault(alias.name, set()).add(str(path.relative_to(REPO)))
    return found


def test_every_name_imported_from_httpclient_is_exported() -> None:
    names = _imported_names()
    assert "HttpClient" in names  # the scan sees the importers
    missing = {n: sorted(w) for n, w in names.items() if n not in wgtpm.httpclient.__all__}
    assert not missing, f"imported from wgtpm.httpclient but not in its __all__: {missing}"


def test_every_exported_name_exists() -> None:
    for name in wgtpm.httpclient.__all__:
        assert hasattr(wgtpm.httpclient, name), name
