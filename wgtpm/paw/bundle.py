"""The ``.paw`` bundle: a ZIP of four named files, read safely and written byte-stably.

A bundle holds exactly these members, at the top level, in this order::

    meta.json            program_id, interpreter, runtime manifest, provenance (JSON object)
    pseudo_program.txt   optional: the text the prompt template was rendered from
    adapter.gguf         the LoRA adapter, GGUF (see :mod:`wgtpm.paw.gguf_adapter`)
    prompt_template.txt  the rendered prompt with exactly one {INPUT_PLACEHOLDER}

:func:`read_bundle` enforces the archive rules of the PAW SDK (the limits
below, safe names, regular files, no folders, no other members) and collects
every problem before raising :class:`BundleError`; the content rules
(``meta.json``, template, GGUF) are :mod:`wgtpm.paw.validate`'s.

:func:`write_bundle` is byte-stable: members are stored (not deflated, whose
bytes depend on the zlib build) in the order above, with one fixed timestamp,
mode ``0644`` and Unix as the creating system, so equal contents give equal
archives on every machine.
"""

from __future__ import annotations

import io
import json
import os
import stat
import time
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from .. import _json
from .._errors import WgtpmError
from .._fs import write_atomic

__all__ = [
    "DEFAULT_EPOCH",
    "MAX_ARCHIVE_BYTES",
    "MAX_EXPANDED_BYTES",
    "MAX_MEMBERS",
    "MEMBER_ORDER",
    "MIN_ADAPTER_BYTES",
    "Bundle",
    "BundleError",
    "bundle_bytes",
    "read_bundle",
    "source_date_epoch",
    "write_bundle",
]

#: Limits of the PAW SDK (``programasweights.client``).
MAX_ARCHIVE_BYTES = 256 << 20
MAX_MEMBERS = 256
MAX_EXPANDED_BYTES = 512 << 20
MIN_ADAPTER_BYTES = 1024

MEMBER_ORDER: tuple[str, ...] = (
    "meta.json",
    "pseudo_program.txt",
    "adapter.gguf",
    "prompt_template.txt",
)
REQUIRED_MEMBERS = frozenset({"meta.json", "adapter.gguf", "prompt_template.txt"})

#: 1980-01-01T00:00:00Z, the earliest time a ZIP can hold; used without SOURCE_DATE_EPOCH.
DEFAULT_EPOCH = 315532800

_LEGACY_MAGIC = b"PAW"


class BundleError(WgtpmError):
    """A ``.paw`` bundle that breaks a rule of the format.

    ``problems`` lists every rule broken, each naming the member (or the
    archive) and what is wrong with it.
    """

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = list(problems)
        lines = "\n".join(f"\t{p}" for p in self.problems)
        super().__init__(f"{source}: not a valid .paw program:\n{lines}")


@dataclass(frozen=True)
class Bundle:
    """The members of a bundle, as bytes; ``meta`` is ``meta.json`` parsed (``{}`` if it is not JSON)."""

    members: Mapping[str, bytes]
    meta: Mapping[str, Any]

    @property
    def program_id(self) -> str:
        pid = self.meta.get("program_id")
        return pid if isinstance(pid, str) else ""

    @property
    def adapter(self) -> bytes:
        return self.members.get("adapter.gguf", b"")

    @property
    def prompt_template(self) -> str:
        return self.members.get("prompt_template.txt", b"").decode("utf-8", "replace")

    @property
    def pseudo_program(self) -> str:
        return self.members.get("pseudo_program.txt", b"").decode("utf-8", "replace")


def read_bundle(path: Path) -> Bundle:
    """Read ``path`` under the SDK's archive rules; raises :class:`BundleError` listing all problems."""
    source = str(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise BundleError(source, [f"cannot read the file: {exc.strerror or exc}"]) from exc
    if head.startswith(_LEGACY_MAGIC):
        raise BundleError(
            source,
            ["archive: this is the legacy binary PAW format; the SDK loads only ZIP bundles"],
        )
    if size > MAX_ARCHIVE_BYTES:
        raise BundleError(
            source, [f"archive: {size} bytes, over the SDK's limit of {MAX_ARCHIVE_BYTES}"]
        )
    try:
        with zipfile.ZipFile(path) as archive:
            return _read_members(source, archive)
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError) as exc:
        raise BundleError(source, [f"archive: not a readable ZIP file ({exc})"]) from exc


def _read_members(source: str, archive: zipfile.ZipFile) -> Bundle:
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise BundleError(
            source, [f"archive: {len(infos)} members, over the SDK's limit of {MAX_MEMBERS}"]
        )
    expanded = sum(info.file_size for info in infos)
    if expanded > MAX_EXPANDED_BYTES:
        raise BundleError(
            source,
            [f"archive: expands to {expanded} bytes, over the SDK's limit of {MAX_EXPANDED_BYTES}"],
        )
    problems: list[str] = []
    seen: set[str] = set()
    readable: list[zipfile.ZipInfo] = []
    for info in infos:
        problem = _member_problem(info, seen)
        if problem:
            problems.append(problem)
        else:
            readable.append(info)
        seen.add(info.filename)
    problems += [
        f"{name}: required member is missing"
        for name in MEMBER_ORDER
        if name in REQUIRED_MEMBERS and name not in seen
    ]
    if problems:
        raise BundleError(source, problems)
    members = {info.filename: archive.read(info) for info in readable}
    return Bundle(members=members, meta=_parse_meta(members["meta.json"]))


def _member_problem(info: zipfile.ZipInfo, seen: set[str]) -> str | None:
    name = info.filename
    parts = PurePosixPath(name).parts
    if (
        not name
        or "\\" in name
        or name.startswith("/")
        or not parts
        or ":" in parts[0]
        or any(part in ("", ".", "..") for part in name.rstrip("/").split("/"))
    ):
        return f"{name!r}: unsafe member name"
    if name in seen:
        return f"{name}: duplicate member"
    if info.is_dir() or "/" in name:
        return f"{name}: folders are not allowed; members sit at the top level"
    file_type = stat.S_IFMT(info.external_attr >> 16)
    if file_type and file_type != stat.S_IFREG:
        return f"{name}: not a regular file (a symlink or device entry)"
    if name not in MEMBER_ORDER:
        return f"{name}: unknown member; a bundle holds only {', '.join(MEMBER_ORDER)}"
    if info.flag_bits & 0x1:
        return f"{name}: encrypted; a bundle's members are stored in the clear"
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return f"{name}: compression method {info.compress_type}; use stored or deflate"
    return None


def _parse_meta(raw: bytes) -> dict[str, Any]:
    try:
        value = _json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def source_date_epoch() -> int:
    """The time to stamp into bundles: ``$SOURCE_DATE_EPOCH`` or :data:`DEFAULT_EPOCH`, never the clock.

    ZIP cannot hold times before 1980, so earlier epochs are raised to it.
    """
    raw = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return DEFAULT_EPOCH
    try:
        value = int(raw)
    except ValueError:
        raise WgtpmError(
            f"SOURCE_DATE_EPOCH={raw!r} is not a whole number of seconds; "
            "set it to the commit time (git log -1 --format=%ct) or unset it"
        ) from None
    return max(value, DEFAULT_EPOCH)


def bundle_bytes(members: Mapping[str, bytes], *, epoch: int = DEFAULT_EPOCH) -> bytes:
    """The archive bytes for ``members`` (names of :data:`MEMBER_ORDER`), byte-stable."""
    unknown = set(members) - set(MEMBER_ORDER)
    if unknown:
        raise ValueError(f"unknown bundle members: {sorted(unknown)}")
    stamp = time.gmtime(max(epoch, DEFAULT_EPOCH))[:6]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name in MEMBER_ORDER:
            if name not in members:
                continue
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 3  # Unix, whatever the building machine is
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            archive.writestr(info, members[name])
    return buffer.getvalue()


def write_bundle(path: Path, members: Mapping[str, bytes], *, epoch: int = DEFAULT_EPOCH) -> None:
    """Write the bundle to ``path`` atomically (a temporary file renamed into place)."""
    data = bundle_bytes(members, epoch=epoch)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)
