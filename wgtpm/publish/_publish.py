"""``wgtpm publish``: checks, a clean build of HEAD, the release, and one target.

The steps, in order; nothing is built before every check has passed, and
nothing leaves the machine before the release is complete on the local disk:

1. the target is ready (a token is set), the version
   (:func:`._checks.check_version`), the git checkout (clean, HEAD
   committed), the local tag, the versions at the target (newer, or the
   same version again: a re-publish); a dry run reads the versions at the
   target a publish would use too, and says so when it cannot;
2. ``git archive`` of HEAD into a temporary directory; in it, the build list
   of the committed wgt.mod and wgt.sum, read-only: tidy, and every module
   downloaded and verified;
3. every artifact built there (:func:`._build.build_package`), twice in two
   exports with ``verify_reproducible``, compared byte for byte;
4. the release assembled (:func:`._release.assemble`), its SLSA provenance
   statement made (:mod:`._slsa`: this machine's tool versions, the build's
   start and end; signed with ``--sign-key``), and both handed to the
   target, which publishes them all or nothing;
5. after a publish that leaves the machine, the annotated git tag at HEAD (with
   wgtpm's own tagger where git knows no identity); a tag git still refuses (a
   ``tag.gpgSign`` without a key, a read-only clone) is a warning saying how to
   add it: the release is published, and the command succeeds.
"""

from __future__ import annotations

import tempfile
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from .. import modfile
from .. import version as _v
from .._contain import resolve_inside
from .._errors import UsageError, WgtpmError
from .._report import Reporter
from ..build import BUILD_DIR
from ..deps import ModuleResolver
from ._build import build_package, compare_builds
from ._checks import (
    check_build_list,
    check_newer,
    check_replacements,
    check_tag,
    check_version,
)
from ._directory import DirectoryTarget
from ._git import Checkout, create_tag, export_commit, open_checkout, tag_commit
from ._provenance import ArtifactProvenance, SourceRepository, tool_versions
from ._release import MOD_FILE, ReleaseSpec, assemble
from ._slsa import BuildRun, SigningKey, envelope_bytes, load_signing_key, statement
from ._target import Published, PublishTarget, Release, tag_for
from .targets import DRY_RUN_DIR

if TYPE_CHECKING:
    from ..modload.resolver import ProjectResolver

__all__ = ["Outcome", "PublishOptions", "module_of", "publish_package", "verified_build_list"]


@dataclass(frozen=True)
class PublishOptions:
    """What ``wgtpm publish`` was asked for."""

    version: str
    allow_older: bool = False
    allow_untrained: bool = False
    verify_reproducible: bool = False
    private: bool = False
    tag: bool = True  # create the git tag after the release left the machine
    sign_key: Path | None = None  # signs the SLSA statement (--sign-key)
    signature: Path | None = None  # a bundle made elsewhere over this release (--signature)


@dataclass(frozen=True)
class Outcome:
    """The release that was published, and where it went."""

    release: Release
    published: Published


def _modfile(pkg: Path) -> modfile.ModFile:
    # The release ships this file: a link out of the package is refused (wgtpm._contain).
    path = resolve_inside(pkg, pkg / MOD_FILE, MOD_FILE)
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise UsageError(
            f"no {MOD_FILE} in {pkg}: run 'wgtpm publish' in a package directory"
        ) from exc
    mf = modfile.parse(data, str(pkg / MOD_FILE))
    if mf.module is None:
        raise UsageError(f"{pkg / MOD_FILE}: no module statement; add 'module PATH' at the top")
    return mf


def module_of(pkg: Path) -> str:
    """The module path that ``pkg/wgt.mod`` declares."""
    mf = _modfile(pkg)
    assert mf.module is not None
    return mf.module.path


def publish_package(
    pkg: Path, opts: PublishOptions, target: PublishTarget, reporter: Reporter
) -> Outcome:
    """Publish the package in ``pkg`` at ``opts.version`` to ``target`` (see the module docstring)."""
    pkg = pkg.absolute()
    mf = _modfile(pkg)
    assert mf.module is not None
    module = mf.module.path
    target.ready()
    key = load_signing_key(opts.sign_key) if opts.sign_key else None
    given = _read_signature(opts.signature) if opts.signature else None
    check_version(module, opts.version)
    _check_output_dir(pkg, target)
    checkout = open_checkout(pkg, _outputs(pkg, target))
    tag = tag_for(module, opts.version, checkout.subdir)
    check_tag(tag, tag_commit(pkg, tag), checkout.commit)
    check_replacements(mf)
    published = _published(module, target, reporter, pkg)
    check_newer(module, opts.version, published, opts.allow_older)
    if opts.version in published:
        reporter.notice(
            f"{module}@{opts.version} is published already at {target.name}: building it "
            "to compare (the same bytes are a no-op, other bytes are refused)"
        )
    started = _now()
    with tempfile.TemporaryDirectory(prefix="wgtpm-publish-") as tmp:
        work = Path(tmp)
        reporter.notice(f"exporting commit {checkout.commit[:12]} ({checkout.time})")
        src = export_commit(checkout, _mkdir(work / "a"))
        with verified_build_list(src, reporter) as resolver:
            built = _build(src, resolver, checkout, opts, reporter)
            if opts.verify_reproducible:
                reporter.notice("building again in a second export to compare every byte")
                again = _build(
                    export_commit(checkout, _mkdir(work / "b")), resolver, checkout, opts, reporter
                )
                compare_builds(built, again)
                reporter.notice("reproducible: both builds wrote the same bytes")
        where = SourceRepository(checkout.repository, checkout.subdir)
        spec = ReleaseSpec(
            module, opts.version, tag, checkout.commit, checkout.time, opts.private, where
        )
        release = assemble(spec, src, built, _mkdir(work / "staging"))
        release = _attest(release, spec, src, started, key, reporter)
        release = (
            _attach(release, given, opts.signature, reporter)
            if given is not None and opts.signature
            else _sign(release, key, reporter)
        )
        target.check(release)
        reporter.notice(f"publishing {module}@{opts.version} ({release.h1}) to {target.name}")
        done = target.publish(release, reporter)
    if opts.tag:
        _tag(pkg, tag, checkout.commit, module, opts.version, reporter)
    return Outcome(release, done)


def _tag(pkg: Path, tag: str, commit: str, module: str, version: str, reporter: Reporter) -> None:
    """The release's tag (:func:`._git.create_tag`), made after the release is published: a
    tag git refuses is a warning naming the command that adds it, never a failed publish."""
    import git

    message = f"{module} {version}"
    try:
        create_tag(pkg, tag, commit, message)
    except (git.GitError, OSError) as exc:
        said = getattr(exc, "stderr", "") or str(exc)
        lines = [x.strip() for x in str(said).strip().strip("'").splitlines() if x.strip()]
        why = lines[-1][:200] if lines else type(exc).__name__
        reporter.warning(
            f"{module}@{version} is published, but the git tag {tag} was not created ({why}); "
            f"create it with: git tag -a -m '{message}' {tag} {commit}"
        )


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _attest(
    release: Release,
    spec: ReleaseSpec,
    src: Path,
    started: str,
    key: SigningKey | None,
    reporter: Reporter,
) -> Release:
    """``release`` with its SLSA statement (:mod:`._slsa`): this build's environment,
    outside h1; signed with ``key``, else said to be unsigned."""
    import json
    import platform

    from ..sumfile import parse as parse_sum

    try:
        sums = parse_sum((src / "wgt.sum").read_bytes())
    except FileNotFoundError:
        sums = None
    deps = [(m, v, h) for m, v, h in sums.lines if not v.endswith("/wgt.mod")] if sums else []
    where = spec.repository
    run = BuildRun(
        module=spec.module,
        version=spec.version,
        commit=spec.commit,
        repository=where.url if where else None,
        dir=where.dir if where else "",
        tools=tool_versions(),
        platform=platform.platform(),
        started=started,
        finished=_now(),
        invocation=str(uuid.uuid4()),
        dependencies=deps,
    )
    shas = {e["path"]: e["sha256"] for e in json.loads(release.index)["files"]}
    env = envelope_bytes(statement(run, release.index, shas), key)
    if key is None:
        reporter.notice(
            "the SLSA provenance statement is unsigned (no --sign-key): it records this "
            "build's environment but proves nothing of who built it"
        )
    else:
        reporter.notice(f"signed the SLSA provenance statement with key {key.keyid[:16]}")
    return replace(release, attestation=env)


def _sign(release: Release, key: SigningKey | None, reporter: Reporter) -> Release:
    """``release`` with its signature: a model-signing bundle (:mod:`wgtpm.trust`) over
    exactly the index's files, named ``module@version``, made with ``--sign-key``; without
    a key, keylessly through Sigstore when an OIDC identity is at hand (CI); else none."""
    import json

    from ..trust._keyless import identity_available, sign_keyless

    files = {e["path"]: e["sha256"] for e in json.loads(release.index)["files"]}
    if key is None:
        if not identity_available():
            return release
        reporter.notice("signing the release keylessly through Sigstore (an OIDC identity is set)")
        return replace(release, signature=sign_keyless(release.module, release.files, files))
    from ..trust import make_bundle

    bundle = make_bundle(f"{release.module}@{release.version}", files, key.key)
    reporter.notice(f"signed the release (model-signing bundle) with key {key.keyid[:16]}")
    return replace(release, signature=bundle)


def _read_signature(path: Path) -> bytes:
    """The bundle ``--signature`` names, read and checked for form before anything is built
    (its files are compared with the release's index once it is built)."""
    from ..trust._bundle import BadSignature, read_bundle

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--signature {path}: cannot read it ({exc.strerror or exc})") from exc
    try:
        read_bundle(data)
    except BadSignature as exc:
        raise UsageError(f"--signature {path}: not a model-signing bundle: {exc}") from exc
    return data


def _attach(release: Release, bundle: bytes, path: Path, reporter: Reporter) -> Release:
    """``release`` with the signature ``bundle`` made elsewhere (``model_signing sign`` on
    the files of a ``wgtpm publish -o DIR`` of the same commit, say), refused unless it lists
    exactly this build's index. Whose signature it is stays each consumer's call (their
    trust lines), so no key is asked for here."""
    import json

    from ..trust import mismatch
    from ..trust._bundle import read_bundle

    files = {e["path"]: e["sha256"] for e in json.loads(release.index)["files"]}
    signed = read_bundle(bundle)
    wrong = mismatch(signed, release.module, release.version, files)
    if wrong is not None:
        vdir = f"DIR/{release.module}/@v/{release.version}"
        raise UsageError(
            f"--signature {path}: the signature {wrong}; sign the files this commit builds "
            f"(wgtpm publish --version {release.version} -o DIR, then sign {vdir})"
        )
    who = f"key {signed.hint[:16]}" if signed.hint else "a certificate (keyless)"
    reporter.notice(f"attached the signature {path} (model-signing bundle, {who})")
    return replace(release, signature=bundle)


def _published(module: str, target: PublishTarget, reporter: Reporter, pkg: Path) -> list[str]:
    """The versions of ``module`` at ``target``; for a dry run also those at the target
    a publish would use, or a warning saying why they were not seen. Where that target
    answered, a version only in ``dist/`` (an earlier dry run: a preview, not a release)
    does not count."""
    versions = target.published_versions(module)
    if not isinstance(target, DirectoryTarget):
        return versions
    real = target.real
    if real is None:
        reporter.warning(
            f"dry run: only the versions in {target.tree.root} were checked; a publish of "
            f"{module} needs --to URL, which would be checked too"
        )
        return versions
    try:
        more = real.published_versions(module)
    except WgtpmError as exc:
        reporter.warning(
            f"dry run: could not read the versions published at {real.name} (offline?), so "
            f"the version was checked against {target.tree.root} only: {exc}"
        )
        return versions
    if target.tree.root == pkg / DRY_RUN_DIR:
        return _v.sort_versions(more)
    return _v.sort_versions(list(set(versions) | set(more)))


def _outputs(pkg: Path, target: PublishTarget) -> tuple[str, ...]:
    """Directories of the package that wgtpm writes (their untracked files are not "dirty")."""
    out = [BUILD_DIR, DRY_RUN_DIR]
    if isinstance(target, DirectoryTarget) and target.tree.root.is_relative_to(pkg):
        out.append(target.tree.root.relative_to(pkg).as_posix())
    return tuple(out)


def _check_output_dir(pkg: Path, target: PublishTarget) -> None:
    """Refuse a directory target in the package (``dist/``) that a symlink leads out of it:
    the release would be written wherever the link points (a committed ``dist``, say)."""
    if not isinstance(target, DirectoryTarget) or not target.tree.root.is_relative_to(pkg):
        return
    real = target.tree.root.resolve()
    if not real.is_relative_to(pkg.resolve()):
        shown = target.tree.root.relative_to(pkg).as_posix()
        raise UsageError(
            f"{shown} leads out of the package through a symlink (to {real}), so the release "
            f"would be written there: remove the link (git rm --cached {shown} if it is "
            "committed), or pass -o DIR"
        )


def _mkdir(d: Path) -> Path:
    d.mkdir()
    return d


def verified_build_list(src: Path, reporter: Reporter) -> ProjectResolver:
    """The build list of the exported package: checked tidy and verified (read-only); a
    ``with`` block closes its HTTP client."""
    from ..modload.options import Options
    from ..modload.project import Project
    from ..modload.resolver import ProjectResolver

    project = Project.load(src, Options.from_env("readonly", reporter=reporter))
    try:
        check_build_list(project)
    except BaseException:
        project.close()
        raise
    return ProjectResolver(project)


def _build(
    src: Path,
    resolver: ModuleResolver,
    checkout: Checkout,
    opts: PublishOptions,
    reporter: Reporter,
) -> list[ArtifactProvenance]:
    mf = _modfile(src)
    return build_package(
        src,
        mf.artifacts,
        resolver,
        reporter,
        epoch=checkout.epoch,
        allow_untrained=opts.allow_untrained,
    )
