"""Install verified programs where the PAW SDK finds them offline.

The SDK's cache (``programasweights.cache``; ``$PAW_CACHE_DIR``, default
``~/.cache/programasweights``)::

    programs/<program_id>/meta.json             one directory of regular files per program
    programs/<program_id>/adapter.gguf
    programs/<program_id>/prompt_template.txt
    programs/<program_id>/pseudo_program.txt    (when the bundle has one)
    programs/.staging/                          where complete copies are prepared
    base_models/<file>.gguf                     the runtime's base model (size and sha256 checked)
    .locks/programs/<program_id>.lock           flock'd by whoever writes programs/<program_id>
    .locks/base_models/<file>.lock

A program is validated in full, copied into a fresh staging directory,
flushed, and renamed into place while holding the SDK's own lock file, so the
SDK (or another wgtpm) never sees half a program. An identical copy already
in place is left alone; anything else under that ID is replaced, as the SDK
replaces what fails its checks. The base model is copied in only when given
(a file, or found in the build list) and only after its size and sha256
match the runtime manifest. ``programasweights.function(program_id,
offline=True)`` then needs no network.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import UsageError
from .._fs import FileLock, replace_dir, sha256_file, temp_dir, write_atomic
from ..artifacts import BUNDLE_SUFFIX, module_artifact
from ..deps import ModuleResolver, split_ref
from ..kinds import PAW
from .runtime import BaseModelFile, ResolvedRuntime, RuntimeLookup, base_model_file
from .shape import InterpreterShape
from .validate import ValidProgram, validate_file

__all__ = [
    "InstalledProgram",
    "artifact_file",
    "find_base_model",
    "install_artifact",
    "install_base_model",
    "install_program",
    "sdk_cache_dir",
    "sdk_runtime_lookups",
]

DEFAULT_API_URL = "https://programasweights.com"


def sdk_cache_dir() -> Path:
    """``$PAW_CACHE_DIR``, else ``~/.cache/programasweights`` (the SDK's own rule)."""
    return Path(os.environ.get("PAW_CACHE_DIR") or Path.home() / ".cache" / "programasweights")


@dataclass(frozen=True)
class InstalledProgram:
    """Where a program now is; ``base_model`` is the runtime's base model when it is in place."""

    program_id: str
    program_dir: Path
    base_model: Path | None
    base_model_file: str | None
    changed: bool


def sdk_runtime_lookups(root: Path) -> tuple[RuntimeLookup, RuntimeLookup | None]:
    """The SDK's runtime sources: its cache's ``runtimes/`` folder, and the hub.

    The hub is ``GET {PAW_API_URL}/api/v1/models/runtimes/{id}`` (``X-API-Key:
    $PAW_API_KEY``), as ``programasweights.cache.fetch_runtime_manifest``
    asks it; ``None`` when ``PAW_OFFLINE`` is set. A fetched manifest is saved
    into ``runtimes/`` the way the SDK saves it.
    """

    def cached(runtime_id: str, version: int | None) -> Mapping[str, Any] | None:
        folder = root / "runtimes"
        names = (
            [f"{runtime_id}.json", f"{runtime_id}.v1.json"]
            if version is None
            else [f"{runtime_id}.v{version}.json", f"{runtime_id}.json"]
        )
        for name in names:
            path = folder / name
            try:
                if path.is_symlink() or not path.is_file():
                    continue
                value = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(value, dict) and (
                version is None or value.get("manifest_version") == version
            ):
                return value
        return None

    def fetch(runtime_id: str, version: int | None) -> Mapping[str, Any] | None:
        import httpx

        api = (os.environ.get("PAW_API_URL") or DEFAULT_API_URL).rstrip("/")
        key = os.environ.get("PAW_API_KEY")
        try:
            response = httpx.get(
                f"{api}/api/v1/models/runtimes/{runtime_id}",
                headers={"X-API-Key": key} if key else {},
                timeout=10.0,
            )
            if response.status_code != 200:
                return None
            value = response.json()
        except (httpx.HTTPError, ValueError):
            return None
        if not isinstance(value, dict) or value.get("runtime_id") != runtime_id:
            return None
        from .runtime import normalize_runtime

        normalized = normalize_runtime(value, expected_id=runtime_id)
        if normalized is not None:
            save_runtime_manifest(normalized, root)
        return normalized

    offline = os.environ.get("PAW_OFFLINE", "").strip().lower() in ("1", "true", "yes")
    return cached, None if offline else fetch


def save_runtime_manifest(manifest: Mapping[str, Any], root: Path) -> None:
    """Write ``runtimes/{id}.v{n}.json`` and ``runtimes/{id}.json`` as the SDK does."""
    data = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")
    rid, version = manifest["runtime_id"], manifest["manifest_version"]
    with FileLock(root / ".locks" / "runtimes" / f"{rid}.lock"):
        for name in (f"{rid}.v{version}.json", f"{rid}.json"):
            path = root / "runtimes" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, data)


def install_program(
    bundle_path: Path,
    *,
    cache_dir: Path | None = None,
    base_model: Path | None = None,
    shape: InterpreterShape | None = None,
) -> InstalledProgram:
    """Validate the bundle at ``bundle_path`` and install it (and ``base_model``) into the SDK cache.

    The runtime is resolved as the SDK resolves it (embedded, ``runtimes/``
    of the cache, the hub, the SDK's table by interpreter); when it was not
    embedded whole, ``meta.json`` is installed with the resolved runtime
    filled in, as the SDK's ``download_paw`` does (``_hydrate_runtime_manifest``).
    """
    root = cache_dir or sdk_cache_dir()
    if shape is None and base_model is not None:
        shape = _gguf_shape(base_model)
    cached, fetch = sdk_runtime_lookups(root)
    program = validate_file(bundle_path, shape=shape, cached=cached, fetch=fetch)
    base = base_model_file(program.runtime)
    assert base is not None  # the validator requires one
    installed_base = install_base_model(base_model, base, root) if base_model is not None else None
    changed = _install_program_dir(program, root)
    if installed_base is None:
        present = root / "base_models" / base.file
        if present.is_file() and base.size_bytes in (None, present.stat().st_size):
            installed_base = present
    return InstalledProgram(
        program_id=program.program_id,
        program_dir=root / "programs" / program.program_id,
        base_model=installed_base,
        base_model_file=base.file,
        changed=changed,
    )


def installed_members(program: ValidProgram) -> dict[str, bytes]:
    """The files the SDK keeps for ``program``: its members, ``meta.json`` hydrated when needed."""
    members = dict(program.bundle.members)
    meta = dict(program.bundle.meta)
    runtime = ResolvedRuntime(dict(program.runtime), program.runtime_source)
    if (
        runtime.source != "embedded"
        or meta.get("runtime") != runtime.manifest
        or "runtime_id" not in meta
        or "runtime_manifest_version" not in meta
    ):
        meta["runtime"] = runtime.manifest
        meta.setdefault("runtime_id", runtime.manifest.get("runtime_id"))
        meta.setdefault("runtime_manifest_version", runtime.manifest.get("manifest_version"))
        members["meta.json"] = (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode()
    return members


def _install_program_dir(program: ValidProgram, root: Path) -> bool:
    pid = program.program_id
    programs = root / "programs"
    destination = programs / pid
    members = installed_members(program)
    with FileLock(root / ".locks" / "programs" / f"{pid}.lock"):
        if _same_files(destination, members):
            return False
        with temp_dir(programs / ".staging" / pid) as stage:
            for name, data in members.items():
                with (stage / name).open("xb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            replace_dir(stage, destination)
    return True


def _same_files(directory: Path, members: Mapping[str, bytes]) -> bool:
    try:
        if directory.is_symlink() or not directory.is_dir():
            return False
        names = {p.name for p in directory.iterdir()}
        return names == set(members) and all(
            not (directory / n).is_symlink() and (directory / n).read_bytes() == data
            for n, data in members.items()
        )
    except OSError:
        return False


def install_base_model(source: Path, base: BaseModelFile, cache_dir: Path | None = None) -> Path:
    """Copy ``source`` to ``base_models/<file>`` if it is the base model ``base`` names (size, sha256)."""
    root = cache_dir or sdk_cache_dir()
    models = root / "base_models"
    destination = models / base.file
    size = source.stat().st_size
    if base.size_bytes is not None and size != base.size_bytes:
        raise UsageError(
            f"{source} is {size} bytes, not the base model {base.file} of the program's runtime "
            f"({base.size_bytes} bytes); pass the right file"
        )
    with FileLock(root / ".locks" / "base_models" / f"{base.file}.lock"):
        if (
            destination.is_file()
            and not destination.is_symlink()
            and base.sha256 is not None
            and sha256_file(destination) == base.sha256
        ):
            return destination
        # Hashed while it is copied, renamed into place only on a match (a base model
        # is gigabytes: it is streamed, not read whole as write_atomic would need).
        with temp_dir(destination) as tmp_dir:
            tmp = tmp_dir / base.file
            digest = hashlib.sha256()
            with tmp.open("xb") as out, source.open("rb") as src:
                if src.read(4) != b"GGUF":
                    raise UsageError(f"{source} is not a GGUF file (no GGUF magic at the start)")
                src.seek(0)
                while block := src.read(1 << 20):
                    digest.update(block)
                    out.write(block)
                out.flush()
                os.fsync(out.fileno())
            if base.sha256 is not None and digest.hexdigest() != base.sha256:
                raise UsageError(
                    f"{source} has sha256 {digest.hexdigest()}, not {base.sha256} as the runtime's "
                    f"base model {base.file} must; it is another file"
                )
            os.chmod(tmp, 0o644)
            os.replace(tmp, destination)
    return destination


def find_base_model(
    meta: Mapping[str, Any],
    resolver: ModuleResolver,
    runtime: Mapping[str, Any] | None = None,
) -> Path | None:
    """The runtime's base model among the build list's modules, or ``None``.

    Looked for where the bundle says it came from (a wgtpm-built bundle
    records the base model's module) and in ``hf.co/<repo>`` of the manifest;
    only modules already in the build list are opened.
    """
    if runtime is None:
        embedded = meta.get("runtime")
        runtime = embedded if isinstance(embedded, Mapping) else None
    base = base_model_file(runtime) if runtime is not None else None
    if base is None:
        return None
    candidates: list[tuple[str, str]] = []
    build = meta.get("compile_by_training")
    recorded = build.get("base_model") if isinstance(build, Mapping) else None
    if isinstance(recorded, Mapping) and isinstance(recorded.get("module"), str):
        candidates.append((recorded["module"], str(recorded.get("file", base.file))))
    if base.repo:
        candidates.append((f"hf.co/{base.repo}", base.file))
    available = set(resolver.modules())
    for module, file in candidates:
        if module in available:
            path = resolver.module(module).dir / file
            if path.is_file() and base.size_bytes in (None, path.stat().st_size):
                return path
    return None


def artifact_file(ref: str, resolver: ModuleResolver) -> Path:
    """The ``.paw`` file of ``MODULE/ARTIFACT``: by the release index, else ``ARTIFACT.paw``.

    :func:`wgtpm.artifacts.module_artifact` finds it; anything but a ``paw``
    artifact under that name is an error.
    """
    module, artifact = split_ref(ref, resolver)
    found = module_artifact(module, artifact)
    if found is not None and found.kind == PAW and found.path.is_file():
        return found.path
    programs = sorted(p.name for p in module.dir.glob(f"*{BUNDLE_SUFFIX}"))
    raise UsageError(
        f"{module.path}@{module.version} has no PAW program artifact {artifact!r}"
        + (f"; it has {', '.join(programs)}" if programs else "")
    )


def install_artifact(
    ref: str, resolver: ModuleResolver, *, cache_dir: Path | None = None
) -> InstalledProgram:
    """Install the program ``MODULE/ARTIFACT`` of the build list, with its base model when that is there too."""
    path = artifact_file(ref, resolver)
    root = cache_dir or sdk_cache_dir()
    cached, fetch = sdk_runtime_lookups(root)
    program = validate_file(path, cached=cached, fetch=fetch)
    base = find_base_model(program.bundle.meta, resolver, program.runtime)
    return install_program(path, cache_dir=root, base_model=base)


def _gguf_shape(path: Path) -> InterpreterShape | None:
    """The qwen3 hyperparameters of a base-model GGUF, when it has them."""
    from .gguf_adapter import read_gguf_info

    try:
        return InterpreterShape.from_gguf_fields(read_gguf_info(path).fields)
    except (OSError, ValueError):
        return None
