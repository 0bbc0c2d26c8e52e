"""``wgtpm publish`` and ``wgtpm retract``: release a version, or withdraw one.

Imports nothing heavy at import time: the publish package (git, httpx, the
builders) loads inside the command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .._errors import UsageError

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "publish",
        help="build the package from HEAD and publish it as an immutable version",
        description=(
            "Check the version, the git tree and wgt.mod/wgt.sum; build every artifact from a "
            "clean export of HEAD; write the release and send it to its target: --to URL (a "
            "wgtpm registry, token in WGTPM_TOKEN; or oci://REGISTRY/NAMESPACE, an OCI "
            "registry), --dry-run or -o DIR (a file:// proxy "
            "tree), else GitHub or Hugging Face by the module path."
        ),
    )
    p.add_argument("--version", required=True, metavar="vX.Y.Z", help="the version to publish")
    p.add_argument(
        "--to",
        metavar="URL",
        help=(
            "a wgtpm registry (https://...) or an OCI registry (oci://REGISTRY/NAMESPACE) to "
            "publish to (with --dry-run: whose versions to check against)"
        ),
    )
    p.add_argument(
        "--dry-run", action="store_true", help="write the release to dist/ and stop there"
    )
    p.add_argument("-o", "--out", metavar="DIR", help="write the release to DIR (a proxy tree)")
    p.add_argument(
        "--allow-older",
        action="store_true",
        help="allow a version older than the latest published (a patch on an old line)",
    )
    p.add_argument(
        "--allow-untrained", action="store_true", help="publish untrained (random) weights"
    )
    p.add_argument(
        "--verify-reproducible",
        action="store_true",
        help="build twice in separate directories and refuse if any byte differs",
    )
    p.add_argument("--private", action="store_true", help="a private module (on its first publish)")
    p.add_argument(
        "--sign-key",
        metavar="FILE",
        help="sign the release (a model-signing bundle over its index) and its SLSA provenance "
        "statement with this PEM private key (ECDSA P-256 or Ed25519; 'wgtpm key generate'); "
        "without it both are published unsigned",
    )
    p.add_argument(
        "--signature",
        metavar="FILE",
        help="attach this model-signing bundle, made elsewhere (model_signing sign on the files "
        "of 'wgtpm publish -o DIR', in CI say), as the release's signature; refused unless it "
        "lists exactly this build's files",
    )
    p.set_defaults(run=_publish)

    p = sub.add_parser(
        "retract", help="retract a published version in wgt.mod (publish the next one to tell)"
    )
    p.add_argument("version", metavar="vX.Y.Z", help="the version to retract")
    p.add_argument("-m", "--message", required=True, help="why it is retracted")
    p.set_defaults(run=_retract)


def _publish(args: argparse.Namespace) -> int:
    from .._extras import require

    require("publish", purpose="wgtpm publish")  # a release is built from a git commit
    from ..httpclient import HttpClient
    from ..publish import PublishOptions, publish_package, select_target
    from ..publish._publish import module_of
    from ._render import make_reporter

    pkg = Path.cwd()
    module = module_of(pkg)
    opts = PublishOptions(
        version=args.version,
        allow_older=args.allow_older,
        allow_untrained=args.allow_untrained,
        verify_reproducible=args.verify_reproducible,
        private=args.private,
        tag=not (args.dry_run or args.out),
        sign_key=Path(args.sign_key) if args.sign_key else None,
        signature=Path(args.signature) if args.signature else None,
    )
    if args.sign_key and args.signature:
        raise UsageError(
            "--sign-key signs the release, --signature attaches a signature made elsewhere: "
            "give one of them"
        )
    with HttpClient() as http:  # the target's; closed however the publish ends
        target = select_target(module, pkg, http, to=args.to, dry_run=args.dry_run, out=args.out)
        outcome = publish_package(pkg, opts, target, make_reporter())
    release, done = outcome.release, outcome.published
    verb = "published" if done.created else "already published (same bytes, nothing to do)"
    print(f"{verb} {release.module}@{release.version}: {done.url}")
    print(f"{release.h1}  ({len(release.files)} files, commit {release.commit})")
    print("consumers' wgt.sum will hold:")
    for line in release.sum_lines():
        print(f"\t{line}")
    if args.dry_run or args.out:
        print(f"use it: WGTPROXY={done.url} wgtpm get {release.module}@{release.version}")
    return 0


def _retract(args: argparse.Namespace) -> int:
    from ..publish import retract

    nxt = retract(Path.cwd(), args.version, args.message)
    print(f"wgtpm: wgt.mod now retracts {args.version} // {args.message}", file=sys.stderr)
    print(
        "wgtpm: consumers see a retraction in the latest version's wgt.mod: commit, then publish "
        f"the next version carrying it, e.g. wgtpm publish --version {nxt}",
        file=sys.stderr,
    )
    return 0
