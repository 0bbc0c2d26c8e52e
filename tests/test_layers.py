"""The layers of ``wgtpm/`` stay as the README's map draws them.

- The pure core (formats, hashing, version selection) takes data in and
  gives data out: it imports nothing that touches the network, the cache,
  the project files or the builders.
- No import cycle exists anywhere in ``wgtpm/``, counting imports made inside
  functions (a lazy import is still a dependency), but not those under
  ``if TYPE_CHECKING:``.

Imports are read from the source with :mod:`ast`, so a test of the layout
does not depend on what happens to be imported at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "wgtpm"

# The pure core, and the only wgtpm modules it may import.
PURE = {
    "wgtpm.version",
    "wgtpm.module",
    "wgtpm.query",
    "wgtpm.mvs",
    "wgtpm.dirhash",
    "wgtpm.sumfile",
    "wgtpm.index",
    "wgtpm.modfile",
    "wgtpm.modfile._syntax",
    "wgtpm.modfile._rules",
    "wgtpm.kinds",
}
PURE_MAY_IMPORT = PURE | {"wgtpm._errors", "wgtpm._fs"}
# What "does I/O" means for the pure core: third-party packages it must not use.
FORBIDDEN_THIRD_PARTY = {"httpx", "huggingface_hub", "torch", "numpy", "filelock", "platformdirs"}


def _name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_name(p): p for p in ROOT.rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules ``name`` imports (wgtpm modules by full name, others by top-level name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:  # "from . import x" may name a submodule
                sub = f"{mod}.{a.name}"
                out.add(sub if sub in known else mod)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m if m.startswith("wgtpm") else m.split(".")[0] for m in out} - {name}


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {n: _imports(n, p, known) for n, p in mods.items()}


def test_pure_core_imports_no_io() -> None:
    graph = _graph()
    missing = PURE - set(graph)
    assert not missing - {"wgtpm.kinds"}, f"pure modules not found: {missing}"
    bad = []
    for name in sorted(PURE & set(graph)):
        for dep in sorted(graph[name]):
            if (
                dep.startswith("wgtpm") and dep not in PURE_MAY_IMPORT
            ) or dep in FORBIDDEN_THIRD_PARTY:
                bad.append(f"{name} imports {dep}")
    assert not bad, "the pure core must not do I/O:\n" + "\n".join(bad)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle among the wgtpm modules, or ``None``."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if d not in graph:
                continue
            # A package's __init__ importing its own submodules is how packages work.
            if d.startswith(n + ".") or n.startswith(d + "."):
                continue
            if state.get(d) == 1:
                return [*stack[stack.index(d) :], d]
            if d not in state:
                found = walk(d)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = walk(n)
            if found:
                return found
    return None


def test_no_import_cycles() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_one_default_for_jobs() -> None:
    """The fetcher's own default (for library callers) is the command line's."""
    from wgtpm.modfetch import FetchOptions
    from wgtpm.modload import DEFAULT_JOBS

    assert FetchOptions().jobs == DEFAULT_JOBS
