"""The layers of ``wgtpm/`` stay as the README's map draws them.

- The pure core (formats, hashing, version selection) takes data in and
  gives data out: it imports nothing that touches the network, the cache,
  the project files or the builders.
- No import cycle exists anywhere in ``wgtpm/`` or ``registry/``, counting
  imports made inside functions (a lazy import is still a dependency), but
  not those under ``if TYPE_CHECKING:``. The few known ones are listed in
  :data:`KNOWN_CYCLES`, which may only shrink.

- Other libraries' internals (a private module of httpx, httpcore or h11,
  uvicorn's protocols, and the private attributes :data:`FENCED_ATTRIBUTES`) are
  touched only in ``wgtpm/_compat/``, one module per library (issue 30).

Imports are read from the source with :mod:`ast`, so a test of the layout
does not depend on what happens to be imported at run time. The graph is the
order Python runs modules in: importing ``a.b.c`` runs ``a/__init__`` and
``a/b/__init__`` first, so it depends on those packages too (a package whose
``__init__`` re-exports a submodule is how the cycle ``wgtpm.build`` ->
``wgtpm.build._wgt`` -> ``wgtpm.weightlang.build`` ->
``wgtpm.weightlang.imports`` -> ``wgtpm.build`` hid); a module's own packages
are already running when it runs, so importing a name from them
(``from .. import __version__``) starts nothing and is no edge. Modules named
at run time (``importlib.import_module(name)``, the CLI's command table) are
not seen.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "wgtpm"
#: The packages whose modules the cycle check covers.
PACKAGES = ("wgtpm", "registry")

#: Import cycles that exist today, each the set of modules in it (a strongly connected
#: component). Both are the registry's, which other work reshapes (ARCHITECTURE.md, Reshape
#: 5): remove an entry when its cycle is gone. The test fails on a cycle not listed here and on
#: an entry that is no longer a cycle, and this table may never grow (MAX_KNOWN_CYCLES):
#: break a new cycle by moving what both sides need into the lower module.
KNOWN_CYCLES: tuple[frozenset[str], ...] = (
    # app imports hfmirror (its routes); hfmirror imports app._protocol lazily.
    frozenset({"registry.app", "registry.hfmirror"}),
)
MAX_KNOWN_CYCLES = 1

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
    "wgtpm.modfile._stmts",
    "wgtpm.modfile._interpret",
    "wgtpm.kinds",
    "wgtpm.spdx",
}
PURE_MAY_IMPORT = PURE | {"wgtpm._errors", "wgtpm._fs"}
# What "does I/O" means for the pure core: third-party packages it must not use.
FORBIDDEN_THIRD_PARTY = {"httpx", "huggingface_hub", "torch", "numpy", "filelock", "platformdirs"}


#: The libraries whose internals only wgtpm/_compat/ may touch, and the modules there are.
FENCED = {"httpx", "httpcore", "h11", "uvicorn", "httptools"}
COMPAT = "wgtpm._compat"
#: Private attributes of those libraries that wgtpm uses (wgtpm/_compat/ says which and why).
FENCED_ATTRIBUTES = {
    "_assign_requests_to_connections",
    "_max_keepalive_connections",
    "_h11_state",
    "_remaining",
    "_reader",
}


def _name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_name(p): p for top in PACKAGES for p in (REPO / top).rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _packages(name: str) -> list[str]:
    """The packages that hold ``name``, outermost first: ``a.b.c`` -> ``a``, ``a.b``."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imported(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module ``name`` imports, as written (``from . import x`` -> the submodule ``x``)."""
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
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules importing ``name`` runs first: ours by full name, others by top-level name.

    Ours: each module imported and the packages that hold it, less ``name`` and its own
    packages (already running).
    """
    out: set[str] = set()
    for mod in _imported(name, path, known):
        if mod.split(".")[0] not in PACKAGES:
            out.add(mod.split(".")[0])
            continue
        parts = mod.split(".")
        while len(parts) > 1 and ".".join(parts) not in known:
            parts.pop()  # an attribute, not a module: "from x import name" read as "x.name"
        target = ".".join(parts)
        out.update(m for m in (*_packages(target), target) if m not in _packages(name))
    return out - {name}


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


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Every set of modules that import one another (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(n: str) -> None:
        index[n] = low[n] = len(index)
        stack.append(n)
        on_stack.add(n)
        for d in sorted(graph.get(n, ())):
            if d not in graph:
                continue
            if d not in index:
                visit(d)
                low[n] = min(low[n], low[d])
            elif d in on_stack:
                low[n] = min(low[n], index[d])
        if low[n] == index[n]:
            component = set()
            while True:
                m = stack.pop()
                on_stack.discard(m)
                component.add(m)
                if m == n:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for n in sorted(graph):
        if n not in index:
            visit(n)
    return found


def _path(graph: dict[str, set[str]], component: frozenset[str]) -> list[str]:
    """One cycle through ``component``, as ``[a, b, ..., a]``: what the message shows."""
    start = min(component)
    paths: dict[str, list[str]] = {start: [start]}
    queue = [start]
    while queue:
        n = queue.pop(0)
        for d in sorted(graph[n] & component):
            if d == start:
                return [*paths[n], start]
            if d not in paths:
                paths[d] = [*paths[n], d]
                queue.append(d)
    raise AssertionError(f"{sorted(component)} is no cycle")


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, or ``None``."""
    found = _cycles(graph)
    return _path(graph, min(found, key=sorted)) if found else None


def _shown(graph: dict[str, set[str]], component: frozenset[str]) -> str:
    path = _path(graph, component)
    more = sorted(component - set(path))
    return " -> ".join(path) + (f" (and in the same tangle: {', '.join(more)})" if more else "")


def test_no_import_cycles() -> None:
    graph = _graph()
    found = _cycles(graph)
    new = [c for c in found if c not in KNOWN_CYCLES]
    assert not new, "import cycle (a lazy import counts; move what both need lower):\n" + (
        "\n".join(_shown(graph, c) for c in new)
    )
    gone = [sorted(c) for c in KNOWN_CYCLES if c not in found]
    assert not gone, f"no longer a cycle, remove it from KNOWN_CYCLES: {gone}"


def test_the_known_cycles_do_not_grow() -> None:
    assert len(KNOWN_CYCLES) <= MAX_KNOWN_CYCLES, "break the new cycle instead of listing it"


def test_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}, "e": {"a"}}) == [
        frozenset("ab"),
        frozenset("cd"),
    ]


def _write(root: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    mods = {
        ".".join(Path(rel).with_suffix("").parts).removesuffix(".__init__"): root / rel
        for rel in files
    }
    return {n: _imports(n, p, set(mods)) for n, p in mods.items()}


def test_a_cycle_through_a_package_init_is_found(tmp_path: Path) -> None:
    """The shape of the cycle that came back: a package re-exports a submodule that leads back."""
    graph = _write(
        tmp_path,
        {
            "wgtpm/__init__.py": "",
            "wgtpm/build/__init__.py": "from ._locate import find\n",
            "wgtpm/build/_locate.py": "from ._wgt import WgtBuilder\n",
            "wgtpm/build/_wgt.py": "def build():\n    from ..weightlang.build import b\n",
            "wgtpm/weightlang/__init__.py": "",
            "wgtpm/weightlang/build.py": "from .imports import i\n",
            "wgtpm/weightlang/imports.py": "from ..build import find\n",
        },
    )
    assert _cycle(graph) == [
        "wgtpm.build",
        "wgtpm.build._locate",
        "wgtpm.build._wgt",
        "wgtpm.weightlang.build",
        "wgtpm.weightlang.imports",
        "wgtpm.build",
    ]


def test_importing_a_submodule_runs_its_package_first(tmp_path: Path) -> None:
    """``import wgtpm.paw.build`` runs ``wgtpm/paw/__init__``, whose imports lead back."""
    graph = _write(
        tmp_path,
        {
            "wgtpm/__init__.py": "",
            "wgtpm/build.py": "from .paw.build import b\n",
            "wgtpm/paw/__init__.py": "from .sdk import s\n",
            "wgtpm/paw/build.py": "b = 1\n",
            "wgtpm/paw/sdk.py": "from ..build import x\n",
        },
    )
    assert _cycle(graph) == ["wgtpm.build", "wgtpm.paw", "wgtpm.paw.sdk", "wgtpm.build"]


def test_a_name_from_the_own_package_is_no_edge(tmp_path: Path) -> None:
    """A submodule runs after its package has started: ``from .. import __version__`` starts nothing."""
    graph = _write(
        tmp_path,
        {
            "wgtpm/__init__.py": "__version__ = '1'\ndef load():\n    from .w import api\n",
            "wgtpm/w/__init__.py": "from . import api\n",
            "wgtpm/w/api.py": "from .. import __version__\nfrom . import helper\n",
            "wgtpm/w/helper.py": "",
        },
    )
    assert graph["wgtpm.w.api"] == {"wgtpm.w.helper"}
    assert _cycle(graph) is None


def _private_of_fenced(module: str) -> bool:
    """Whether importing ``module`` reaches inside a fenced library."""
    parts = module.split(".")
    return parts[0] in FENCED and (
        any(p.startswith("_") for p in parts[1:]) or module.startswith("uvicorn.protocols")
    )


def test_other_libraries_internals_only_in_compat() -> None:
    mods = _modules()
    known = set(mods)
    bad = []
    for name, path in sorted(mods.items()):
        if name == COMPAT or name.startswith(COMPAT + "."):
            continue
        bad += [
            f"{name} imports {m}"
            for m in sorted(_imported(name, path, known))
            if _private_of_fenced(m)
        ]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bad += [
            f"{name}:{node.lineno} uses .{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in FENCED_ATTRIBUTES
        ]
    assert not bad, "another library's internals, outside wgtpm/_compat/:\n" + "\n".join(bad)


def test_each_compat_module_is_one_library() -> None:
    compat = {n for n in _modules() if n.startswith(COMPAT + ".")}
    assert compat, "wgtpm/_compat/ is gone"
    assert {n.rpartition(".")[2] for n in compat} <= FENCED


def test_one_default_for_jobs() -> None:
    """The fetcher's own default (for library callers) is the command line's."""
    from wgtpm.modfetch import FetchOptions
    from wgtpm.modload import DEFAULT_JOBS

    assert FetchOptions().jobs == DEFAULT_JOBS


#: The parts of ``wgtpm.modfetch``, lowest first (its docstring draws the same list): each
#: imports only parts before it, so a reader can take them in this order.
MODFETCH_PARTS = (
    "_options",
    "_unit",
    "_metadata",
    "_partial",
    "_transfer",
    "_ranges",
    "_ranged",
    "_jobs",
    "_early",
    "_fetcher",
)


def test_modfetch_parts_import_one_way() -> None:
    graph = _graph()
    names = [f"wgtpm.modfetch.{p}" for p in MODFETCH_PARTS]
    found = sorted(n for n in graph if n.startswith("wgtpm.modfetch."))
    assert found == sorted(names), "list each part of wgtpm.modfetch in MODFETCH_PARTS"
    bad = [
        f"{name} imports {dep}"
        for k, name in enumerate(names)
        for dep in sorted(graph[name])
        if dep.startswith("wgtpm.modfetch.") and dep not in names[:k]
    ]
    assert not bad, "a part of wgtpm.modfetch imports one above it:\n" + "\n".join(bad)
