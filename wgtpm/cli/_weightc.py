"""``weightc``: the WeightLang 0.1.0 prototype's command line, as a thin front on wgtpm.

Each command takes the prototype's arguments, flags and defaults and runs
the wgtpm command that does the same work; what it prints and its errors
are wgtpm's (``wgtpm: ...``, exit status 1)::

    weightc check SOURCE                  wgtpm check SOURCE
    weightc build SOURCE [-o DIR]         wgtpm build SOURCE -o DIR      (DIR/MODEL; DIR is build)
    weightc run ARTIFACT --input JSON     wgtpm run ARTIFACT --input JSON
    weightc inspect ARTIFACT [--json]     wgtpm inspect ARTIFACT [--json]
    weightc verify ARTIFACT               wgtpm verify ARTIFACT
    weightc get [DIR]                     wgtpm -C DIR get
    weightc publish PACKAGE --version V [-o DIR] [--allow-untrained]
                                          wgtpm -C PACKAGE publish --version V -o DIR
                                          [--allow-untrained]  (DIR is dist, as the prototype's)
    weightc --version                     weightc 0.1.0 (wgtpm 0.1.0)

``publish`` writes the release to DIR as the prototype did, as a ``file://``
proxy tree (``WGTPROXY=file://DIR wgtpm get ...`` reads it); ``wgtpm publish``
itself can also upload to a registry, GitHub or Hugging Face.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import __version__

__all__ = ["main", "translate"]

PROTOTYPE_VERSION = "0.1.0"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="weightc", description="WeightLang compiler (the prototype's commands, run by wgtpm)"
    )
    parser.add_argument(
        "--version", action="version", version=f"weightc {PROTOTYPE_VERSION} (wgtpm {__version__})"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check", help="parse and type-check a .wgt file without building")
    p.add_argument("source")
    p = sub.add_parser("build", help="compile a .wgt file into an artifact directory")
    p.add_argument("source")
    p.add_argument("-o", "--out", default="build", help="output directory (default: build)")
    p = sub.add_parser("run", help="run inference with an artifact")
    p.add_argument("artifact")
    p.add_argument("--input", required=True, help='JSON vector or batch, e.g. "[[0, 1], [1, 1]]"')
    p = sub.add_parser("inspect", help="show an artifact's interface and weight provenance")
    p.add_argument("artifact")
    p.add_argument("--json", action="store_true", help="print the raw manifest")
    p = sub.add_parser("verify", help="check artifact hashes, tensor shapes and loadability")
    p.add_argument("artifact")
    p = sub.add_parser("get", help="download, verify and lock the requirements in wgt.mod")
    p.add_argument("dir", nargs="?", default=".", help="directory containing wgt.mod (default: .)")
    p = sub.add_parser("publish", help="build and publish a package's release")
    p.add_argument("package", help="package directory containing wgt.mod")
    p.add_argument("--version", required=True, help="semantic version tag, e.g. v0.1.0")
    p.add_argument(
        "-o", "--out", default="dist", help="where the release is written (default: dist)"
    )
    p.add_argument("--allow-untrained", action="store_true", help="allow untrained artifacts")
    return parser


def translate(argv: Sequence[str]) -> list[str]:
    """The wgtpm arguments for the weightc arguments ``argv`` (exits on bad usage, as argparse)."""
    args = _parser().parse_args(list(argv))
    cmd = args.command
    if cmd == "check":
        return ["check", args.source]
    if cmd == "build":
        return ["build", args.source, "-o", args.out]
    if cmd == "run":
        return ["run", args.artifact, "--input", args.input]
    if cmd == "inspect":
        return ["inspect", args.artifact, *(["--json"] if args.json else [])]
    if cmd == "verify":
        return ["verify", args.artifact]
    if cmd == "get":
        return ["-C", args.dir, "get"]
    extra = ["--allow-untrained"] if args.allow_untrained else []
    out = str(Path(args.out).absolute())  # relative to where weightc runs, as the prototype's
    return ["-C", args.package, "publish", "--version", args.version, "-o", out, *extra]


def main(argv: Sequence[str] | None = None) -> int:
    """The ``weightc`` console script."""
    from . import main as wgtpm_main

    return wgtpm_main(translate(sys.argv[1:] if argv is None else argv))
