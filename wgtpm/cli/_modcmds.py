"""Module commands: init, get, tidy, verify, list, graph, why, vendor, sbom; and the parser of
``mod edit``, whose work is in :mod:`wgtpm.cli._modedit`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..modload.project import Project
    from ..module import ModuleVersion

__all__ = ["register", "temporary_main"]


def _mod_flag(p: argparse.ArgumentParser, default: str = "readonly") -> None:
    p.add_argument(
        "-mod",
        "--mod",
        dest="mod",
        default="",
        choices=["", "mod", "readonly", "vendor"],
        help="mod: update wgt.mod/wgt.sum; readonly: refuse to; vendor: use vendor/ "
        f"(default: from WGTFLAGS, else {default})",
    )


def _json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", "-json", action="store_true", help="print JSON for scripts")


def _project(
    args: argparse.Namespace,
    quiet: bool = False,
    default: str = "readonly",
    start: Path | None = None,
) -> AbstractContextManager[Project]:
    """The project of the working directory, locked against other writers until the block ends.

    ``default`` is the ``-mod`` mode when neither the flag nor ``WGTFLAGS`` sets
    one: ``mod`` for ``get`` and ``tidy``, ``readonly`` for every other command
    (Go since 1.16), which then fails on a missing wgt.sum line instead of adding it.
    """
    from ..modload.options import DEFAULT_JOBS, Options
    from ..modload.project import Project
    from ._render import make_reporter

    jobs = getattr(args, "jobs", None)  # only 'get' has -j; the default lives in one place
    opts = Options.from_env(
        args.mod,
        default=default,
        jobs=DEFAULT_JOBS if jobs is None else jobs,
        reporter=make_reporter(quiet),
    )
    return Project.locked(start or Path.cwd(), opts, private=start is not None)


#: The module path of the temporary main module that ``get MODULE@VERSION`` and
#: ``list -m -versions MODULE`` use outside a project (Go's ``command-line-arguments``).
TEMP_MAIN = "command-line-arguments"


@contextmanager
def _main_module(outside_ok: bool) -> Iterator[Path | None]:
    """Where the command's project is: ``None`` for the working directory's own, or, when
    no wgt.mod lies at or above it and ``outside_ok``, a temporary main module that requires
    nothing, as ``go install M@V`` and ``go list -m -versions M`` work outside a module.
    Nothing is written to the working directory; the downloads stay in the module cache."""
    from ..modload.root import nearest_root

    if not outside_ok or nearest_root(Path.cwd()) is not None:
        yield None
        return
    with temporary_main() as d:
        yield d


@contextmanager
def temporary_main() -> Iterator[Path]:
    """A temporary directory holding the wgt.mod of a main module that requires nothing
    (``module command-line-arguments``, as Go names it), removed afterwards."""
    import tempfile

    from .. import modfile
    from ..modload.root import MOD

    with tempfile.TemporaryDirectory(prefix="wgtpm-main-") as d:
        (Path(d) / MOD).write_bytes(modfile.new(TEMP_MAIN).format())
        yield Path(d)


def register(sub: Any) -> None:
    p = sub.add_parser("init", help="create wgt.mod for a new module in the current directory")
    p.add_argument("module", help="the module path, e.g. github.com/acme/xor-base")
    p.set_defaults(run=_init)

    p = sub.add_parser(
        "get", help="add, upgrade, downgrade or remove dependencies, and download them"
    )
    p.add_argument(
        "modules",
        nargs="*",
        metavar="MODULE[@QUERY]",
        help="@v1.2.3, @latest, @upgrade, @patch, @none, @v1, a branch or commit",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        help="files of 32 MiB and up downloaded at once, and twice as many smaller ones (default 16)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.add_argument(
        "-u",
        dest="update",
        action="store_const",
        const="latest",
        default="",
        help="also upgrade the dependencies of the modules named (of the build list without "
        "arguments) to their latest release",
    )
    p.add_argument(  # an option string of its own: '-u' takes no value, as in Go
        "-u=patch",
        dest="update",
        action="store_const",
        const="patch",
        help="as -u, to their latest patch release",
    )
    p.add_argument(
        "--print-paths",
        action="store_true",
        help="print the directory of each module named (of the whole build list without "
        "arguments) on stdout, one per line, as 'hf download' prints its folder",
    )
    p.add_argument(
        "--paw-install",
        action="store_true",
        help="also install the build list's PAW programs into the PAW SDK's cache (for offline "
        "use), before wgt.mod and wgt.sum are written: if an install fails, they stay as they were",
    )
    _mod_flag(p, "mod")
    _json_flag(p)
    p.set_defaults(run=_get)

    p = sub.add_parser("tidy", help="write minimal requirements and prune wgt.sum")
    _mod_flag(p, "mod")
    _json_flag(p)
    p.set_defaults(run=_tidy)

    p = sub.add_parser(
        "verify",
        help="re-hash the cached files of the build list (or verify an artifact, or rebuild "
        "a dependency from its commit)",
    )
    p.add_argument(
        "artifact", nargs="?", help="verify this artifact instead (path or MODULE/ARTIFACT)"
    )
    p.add_argument(
        "--rebuild",
        metavar="MODULE@VERSION",
        help="build this dependency again from the commit its release names and compare "
        "every artifact file with the release",
    )
    p.add_argument(
        "--repo",
        metavar="PATH_OR_URL",
        help="with --rebuild: fetch the commit from this clone or URL (default: the "
        "repository the release names)",
    )
    _mod_flag(p)
    _json_flag(p)
    p.set_defaults(run=_verify)

    p = sub.add_parser("list", help="list modules of the build list")
    p.add_argument(
        "-m", action="store_true", dest="modules_flag", help="list modules (the only mode)"
    )
    p.add_argument("patterns", nargs="*", help="'all', or module paths")
    p.add_argument(
        "-versions", "--versions", action="store_true", help="list the available versions"
    )
    p.add_argument("-u", "--upgrades", action="store_true", help="show available upgrades")
    _mod_flag(p)
    _json_flag(p)
    p.set_defaults(run=_list)

    p = sub.add_parser("graph", help="print the requirement graph, one edge per line")
    p.add_argument(
        "--format",
        choices=("text", "dot", "mermaid"),
        default="text",
        help="text: one edge per line (default); dot: Graphviz; mermaid: a Mermaid flowchart",
    )
    _mod_flag(p)
    _json_flag(p)
    p.set_defaults(run=_graph)

    p = sub.add_parser("why", help="show how the main module comes to need a module")
    p.add_argument("targets", nargs="+", metavar="MODULE", help="module paths to explain")
    _mod_flag(p)
    _json_flag(p)
    p.set_defaults(run=_why)

    p = sub.add_parser("vendor", help="copy the build list's files into vendor/ for offline builds")
    _json_flag(p)
    p.set_defaults(run=_vendor, mod="")

    p = sub.add_parser(
        "sbom",
        help="print the build list as an AI bill of materials (CycloneDX 1.6 or SPDX 2.3 JSON)",
    )
    p.add_argument(
        "--format",
        choices=("cyclonedx", "spdx"),
        default="cyclonedx",
        help="cyclonedx: CycloneDX 1.6, machine-learning-model components (default); "
        "spdx: SPDX 2.3",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    _mod_flag(p)
    p.set_defaults(run=_sbom)

    p = sub.add_parser("mod", help="edit wgt.mod from scripts: wgtpm mod edit ...")
    msub = p.add_subparsers(dest="modcmd", metavar="SUBCOMMAND")
    e = msub.add_parser("edit", help="edit wgt.mod (flags apply in order)")
    for flag, meta, text in (
        ("module", "PATH", "set the module path"),
        ("require", "PATH@VERSION", "add or change a requirement"),
        ("droprequire", "PATH", "remove a requirement"),
        ("exclude", "PATH@VERSION", "exclude a version"),
        ("dropexclude", "PATH@VERSION", "remove an exclusion"),
        ("replace", "OLD[@V]=NEW[@V]", "replace a module by another or by a local directory"),
        ("dropreplace", "OLD[@V]", "remove a replacement"),
        ("retract", "VERSION|[LO,HI]", "retract a version or a range of this module"),
        ("select", "PATH=GLOB[,GLOB]", "fetch only the files of PATH that match the globs"),
        ("dropselect", "PATH", "remove a select line"),
        ("artifact", "NAME=SOURCE", "declare an artifact built from SOURCE"),
        ("dropartifact", "NAME", "remove an artifact"),
        ("license", "EXPRESSION", "set the module's license, an SPDX expression ('none' drops it)"),
        ("denylicense", "LICENSE", "refuse dependencies under LICENSE (an SPDX id)"),
        ("dropdenylicense", "LICENSE", "remove a deny-license entry"),
    ):
        e.add_argument(
            f"-{flag}",
            f"--{flag}",
            dest="edits",
            action="append",
            metavar=meta,
            help=text,
            type=lambda v, f=flag: (f, v),
        )
    e.add_argument("-fmt", "--fmt", action="store_true", help="only reformat")
    e.add_argument(
        "-print",
        "--print",
        dest="print_",
        action="store_true",
        help="print the result instead of writing it",
    )
    _json_flag(e)
    e.set_defaults(run=_mod_edit, edits=None)


def _init(args: argparse.Namespace) -> int:
    from .. import modfile
    from .._errors import UsageError
    from ..module import normalise

    path = Path.cwd() / "wgt.mod"
    if path.exists():
        raise UsageError(f"{path} already exists")
    mf = modfile.new(normalise(args.module))
    from .._fs import write_atomic

    write_atomic(path, mf.format())
    print(f"wgtpm: created {path}", file=sys.stderr)
    ignored = _ignore_build_outputs(path.parent)
    if ignored:
        print(f"wgtpm: {ignored}", file=sys.stderr)
    return 0


#: What ``wgtpm init`` puts in .gitignore: ``wgtpm build``'s and ``wgtpm publish``'s outputs.
GITIGNORED = ("build/", "dist/")


def _ignore_build_outputs(root: Path) -> str:
    """Make ``root/.gitignore`` list :data:`GITIGNORED` (written if missing, the lines it
    lacks added at its end); returns what was done, or ``""`` when it had them all."""
    from .._fs import write_atomic

    gitignore = root / ".gitignore"
    try:
        text = gitignore.read_text()
    except FileNotFoundError:
        text = None
    have = {line.strip().lstrip("/") for line in (text or "").splitlines()}
    missing = [g for g in GITIGNORED if g not in have and g.rstrip("/") not in have]
    if not missing:
        return ""
    old = text or ""
    new = (
        old + ("\n" if old and not old.endswith("\n") else "") + "".join(f"{g}\n" for g in missing)
    )
    write_atomic(gitignore, new.encode())
    what = "created" if text is None else "added " + " ".join(missing) + " to"
    return f"{what} {gitignore} (build outputs stay out of git)"


def _is_noop(args: argparse.Namespace, mode: str) -> bool:
    """Whether ``get`` is asked only to make sure the build list is in place (a stamp may answer)."""
    return (
        not (args.modules or args.json or args.paw_install or args.print_paths or args.update)
        and mode != "vendor"
    )


def _get(args: argparse.Namespace) -> int:
    from .._cachedir import default_root
    from ..modload import stamp as _stamp
    from ..modload.options import flags_mode

    mode = args.mod or flags_mode()  # a bad WGTFLAGS is an error here too
    if _is_noop(args, mode) and _stamp.up_to_date(Path.cwd(), default_root()):
        return 0  # this exact wgt.mod and wgt.sum were fully fetched and verified before

    if args.paw_install:  # before any download: installing checks each program
        from .._extras import CHECKS_BUNDLE, require

        require("paw", *CHECKS_BUNDLE, purpose="wgtpm get --paw-install")
    from ..modget import get, parse_arg

    with (
        _main_module(outside_ok=bool(args.modules)) as temp,
        _project(args, quiet=args.quiet or args.json, default="mod", start=temp) as project,
    ):
        with project.using_cache():
            build, changes = get(project, args.modules, save=False, update=args.update)
            named = {parse_arg(a)[0] for a in args.modules}
            placed = {m.path: str(project.placed_dir(m) or "") for m in build[1:]}
            # All or nothing: wgt.mod and wgt.sum are written only once every install succeeded.
            installed = _paw_install(project, build) if args.paw_install else []
        project.save()
        key = _stamp.key(project.root) if temp is None else None
        if key is not None:
            _stamp.record(
                project.cache.root, key, project.verified_meta(build), project.files(build)
            )
    if args.json:
        json.dump(
            {
                "build": [
                    {"path": m.path, "version": m.version, "dir": placed.get(m.path)}
                    for m in build[1:]
                ],
                "changes": [{"path": c.path, "old": c.old, "new": c.new} for c in changes],
                "paw_installed": installed,
            },
            sys.stdout,
            indent=2,
        )
        print()
    else:
        for c in changes if temp is None else ():  # a temporary main module's are no news
            print(f"wgtpm: {c}", file=sys.stderr)
        if args.print_paths:
            for path, d in placed.items():
                if d and (path in named or not named):
                    print(d)
    return 0


def _paw_install(project: Project, build: list[ModuleVersion]) -> list[str]:
    """Install every ``paw`` artifact of the build list into the PAW SDK's cache.

    Runs before the project's files are saved; an install that fails leaves
    them unchanged (programs installed before it stay in the SDK's cache,
    which is keyed by program ID and holds only validated programs).
    """
    from ..artifacts import release_artifacts
    from ..kinds import PAW
    from ..modload.buildlist import Fetched
    from ..modload.resolver import ProjectResolver
    from ..paw.sdk import install_artifact

    resolver = ProjectResolver(project, save=False)  # the caller saves once all are installed
    done = []
    for m in build[1:]:
        origin = project.origin(m)
        if not isinstance(origin, Fetched):
            continue
        idx = project.index(origin)
        programs = [a for a, kind in release_artifacts(idx).items() if kind == PAW]
        for art in sorted(programs):
            inst = install_artifact(f"{m.path}/{art}", resolver)
            print(
                f"wgtpm: installed {m.path}/{art} as PAW program {inst.program_id}", file=sys.stderr
            )
            done.append(f"{m.path}/{art}")
    return done


def _tidy(args: argparse.Namespace) -> int:
    from ..modget import tidy

    with _project(args, default="mod", quiet=args.json) as project, project.using_cache():
        build = tidy(project)
    if args.json:
        _dump({"build": [{"path": m.path, "version": m.version} for m in build[1:]]})
    return 0


def _dump(obj: object) -> None:
    json.dump(obj, sys.stdout, indent=2)
    print()


def _verify(args: argparse.Namespace) -> int:
    from .._errors import UsageError

    if args.rebuild:
        if args.artifact:
            raise UsageError("wgtpm verify: give an ARTIFACT or --rebuild MODULE@VERSION, not both")
        return _verify_rebuild(args)
    if args.repo:
        raise UsageError("wgtpm verify: --repo goes with --rebuild MODULE@VERSION")
    if args.artifact:
        from ._weightlang import verify_artifact

        return int(verify_artifact(args.artifact, args.json))
    from ..verify import verify_build

    with _project(args, quiet=True) as project:
        problems = verify_build(project)
    if args.json:
        json.dump({"ok": not problems, "problems": problems}, sys.stdout, indent=2)
        print()
    elif problems:
        for p in problems:
            print(p, file=sys.stderr)
    else:
        print("all modules verified")
    return 1 if problems else 0


def _verify_rebuild(args: argparse.Namespace) -> int:
    from .._extras import require

    require("publish", purpose="wgtpm verify --rebuild")  # the commit is checked out with git
    from ..modload.options import Options
    from ..modload.project import Project
    from ..publish import rebuild_module
    from ._render import make_reporter

    reporter = make_reporter(args.json)
    opts = Options.from_env(args.mod, default="readonly", reporter=reporter)
    with Project.load(Path.cwd(), opts) as project:
        report = rebuild_module(project, args.rebuild, args.repo, reporter)
    if args.json:
        _dump(report.to_json())
    else:
        for a in report.artifacts:
            print(a.line())
        if not report.reproduced:
            for tool, (theirs, ours) in report.tools.items():
                print(
                    f"wgtpm: note: the release was built with {tool} {theirs or '(none)'}, "
                    f"this rebuild used {ours or '(none)'}",
                    file=sys.stderr,
                )
    return 0 if report.reproduced else 1


def _list(args: argparse.Namespace) -> int:
    from .._errors import UsageError

    if not args.modules_flag:
        raise UsageError("wgtpm list works on modules: use 'wgtpm list -m [all]'")
    outside_ok = args.versions and bool(args.patterns) and "all" not in args.patterns
    with _main_module(outside_ok) as temp, _project(args, quiet=True, start=temp) as project:
        rows = _rows(project, args)
    if temp is not None:  # only what was asked for, not the temporary main module
        rows = [r for r in rows if not r.get("main")]
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    for row in rows:
        line = row["path"]
        if args.versions and "versions" in row:
            line += " " + " ".join(row["versions"])
        elif "version" in row:
            line += " " + row["version"]
        if "update" in row:
            line += f" [{row['update']}]"
        if "retracted" in row:
            line += " (retracted)"
        if "deprecated" in row:
            line += " (deprecated)"
        if "replace" in row:
            line += " => " + row["replace"]
        print(line)
    return 0


def _rows(project: Project, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The rows ``wgtpm list -m`` prints, one per module."""
    from .. import version as v
    from .._errors import UsageError
    from ..modload.buildlist import replacement_text

    if project.opts.vendor:
        from ..modload.vendor import VENDOR, read_manifest

        vendored = read_manifest(project.root / VENDOR, project.requirements())
        return [{"path": project.path, "main": True, "dir": str(project.root)}] + [
            {
                "path": m["path"],
                "version": m["version"],
                "dir": str(project.root / VENDOR / m["path"]),
            }
            for m in vendored.values()
        ]
    from ..modget import check_module_arg

    pats = [p if p == "all" else check_module_arg(p) for p in args.patterns or []]
    # Without patterns only the main module is listed: no graph to load, no network.
    build = project.build_list() if pats else [project.main]
    outside: list[dict[str, Any]] = []
    if pats and "all" not in pats:
        paths = {m.path for m in build}
        missing = [p for p in pats if p not in paths]
        build = [m for m in build if m.path in pats]
        for p in missing:
            hint = _artifact_hint(p, paths)
            if hint:
                raise UsageError(f"{p}: not a module of the build list; {hint}")
            if not args.versions:
                raise UsageError(
                    f"{p}: not in the build list ('wgtpm list -m -versions {p}' lists the "
                    f"versions of any module; 'wgtpm get {p}' requires it)"
                )
            versions = v.sort_versions(project.reqs.listed(p))
            if not versions:
                raise UsageError(f"{p}: no versions found (is the path right?)")
            outside.append({"path": p, "versions": versions})
    rows = []
    for m in build:
        row: dict[str, Any] = {"path": m.path}
        placed = project.placed_dir(m)
        if m.version == "":
            row["main"] = True
        else:
            row["version"] = m.version
            replaced = replacement_text(project.origin(m))
            if replaced is not None:
                row["replace"] = replaced
            if args.versions:
                row["versions"] = v.sort_versions(project.reqs.versions(m.path))
            if args.upgrades:
                up = project.reqs.upgrade(m)
                if up.version != m.version:
                    row["update"] = up.version
            why = (
                project.reqs.retraction(m) if args.upgrades and not v.is_pseudo(m.version) else None
            )
            if why:
                row["retracted"] = why
            gone = project.reqs.deprecation(m.path) if args.upgrades else None
            if gone:
                row["deprecated"] = gone
        lic = project.license_of(m, fetch=False)
        if lic is not None:
            row["license"] = lic.expression
        if placed is not None:  # as 'go list -m -json' gives Dir: only when it is there
            row["dir"] = str(placed)
        rows.append(row)
    project.save()
    return rows + outside


def _artifact_hint(path: str, modules: set[str]) -> str:
    """ "did you mean MODULE?" when ``path`` is MODULE/ARTIFACT (or a file) of a known module."""
    parent = path
    while "/" in parent:
        parent = parent.rsplit("/", 1)[0]
        if parent in modules:
            rest = path[len(parent) + 1 :]
            return f"did you mean {parent}? ({rest} would be an artifact or file of it)"
    return ""


def _graph(args: argparse.Namespace) -> int:
    with _project(args, quiet=True) as project:
        build = project.build_list()
        seen = set()
        queue = [build[0]]
        edges: list[tuple[str, str]] = []
        for m in queue:
            for r in project.reqs.required(m):
                edges.append((str(m), str(r)))
                if r not in seen:
                    seen.add(r)
                    queue.append(r)
        project.save()
    selected = {str(m) for m in build}
    fmt = getattr(args, "format", "text")
    if args.json:
        _dump({"edges": [{"from": a, "to": b} for a, b in edges]})
    elif fmt == "text":
        for a, b in edges:
            print(f"{a} {b}")
    else:
        print(_graph_picture(fmt, str(build[0]), edges, selected), end="")
    return 0


def _graph_picture(fmt: str, main: str, edges: list[tuple[str, str]], selected: set[str]) -> str:
    """The requirement graph in Graphviz dot or Mermaid: the build list's versions drawn
    solid, versions required but not selected (MVS chose a newer one) dashed."""
    nodes = [main]
    for a, b in edges:
        for n in (a, b):
            if n not in nodes:
                nodes.append(n)
    ids = {n: f"m{i}" for i, n in enumerate(nodes)}
    if fmt == "dot":
        out = ["digraph wgtpm {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];']
        for n in nodes:
            style = "bold" if n == main else "solid" if n in selected else "dashed"
            label = n.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'  {ids[n]} [label="{label}", style={style}];')
        out += [f"  {ids[a]} -> {ids[b]};" for a, b in edges]
        out.append("}")
    else:
        out = ["flowchart LR"]
        for n in nodes:
            label = n.replace('"', "#quot;")
            out.append(f'  {ids[n]}["{label}"]')
        out += [f"  {ids[a]} --> {ids[b]}" for a, b in edges]
        dashed = [ids[n] for n in nodes if n != main and n not in selected]
        if dashed:
            out.append("  classDef unselected stroke-dasharray: 5 5")
            out.append(f"  class {','.join(dashed)} unselected")
    return "\n".join(out) + "\n"


def _why(args: argparse.Namespace) -> int:
    from ..modget import check_module_arg

    targets = [check_module_arg(t) for t in args.targets]
    answers: list[dict[str, Any]] = []
    with _project(args, quiet=True) as project:
        build = project.build_list()
        selected = {m.path: m for m in build}
        for target in targets:
            parent: dict[str, str | None] = {build[0].path: None}
            queue = [build[0]]
            for m in queue:
                if m.path == target:
                    break
                for r in project.reqs.required(m):
                    sel = selected.get(r.path)
                    if sel is not None and r.path not in parent:
                        parent[r.path] = m.path
                        queue.append(sel)
            chain: list[str] = []
            cur: str | None = target if target in parent else None
            while cur is not None:
                chain.append(cur)
                cur = parent[cur]
            answer: dict[str, Any] = {"module": target, "needed": bool(chain)}
            answer["chain"] = list(reversed(chain))
            hint = "" if chain else _artifact_hint(target, set(selected))
            if hint:
                answer["hint"] = hint
            answers.append(answer)
        project.save()
    if args.json:
        _dump(answers)
        return 0
    for a in answers:
        print(f"# {a['module']}")
        if not a["needed"]:
            hint = "; " + a["hint"] if "hint" in a else ""
            print(f"(main module does not need module {a['module']}{hint})")
        else:
            print("\n".join(a["chain"]))
        print()
    return 0


def _vendor(args: argparse.Namespace) -> int:
    from ..modload.vendor import vendor

    with _project(args, quiet=args.json) as project, project.using_cache():
        n = vendor(project)
    print(f"wgtpm: vendored {n} modules into {project.root / 'vendor'}", file=sys.stderr)
    if args.json:
        _dump({"modules": n, "dir": str(project.root / "vendor")})
    return 0


def _sbom(args: argparse.Namespace) -> int:
    from .._extras import require

    require("sbom", purpose="wgtpm sbom")
    from .. import sbom

    with _project(args, quiet=True) as project, project.using_cache():
        text = sbom.write(project, args.format)
        project.save()
    if args.output:
        from .._fs import write_atomic

        write_atomic(Path(args.output), text.encode())
    else:
        sys.stdout.write(text)
    return 0


def _mod_edit(args: argparse.Namespace) -> int:
    from ._modedit import mod_edit

    return mod_edit(args)
