"""wgt.index.json: what a published version holds (docs/design.md section 5).

::

    {
      "schema": 1,
      "module": "github.com/acme/xor-base",
      "version": "v0.1.0",
      "commit": "40 lower-case hex: the git commit (optional)",
      "time": "2026-11-29T12:00:00Z",
      "files": [
        {"path": "wgt.mod", "size": 61, "sha256": "64 lower-case hex"},
        {"path": "xor/weights.safetensors", "size": 452, "sha256": "...",
         "artifact": "xor", "kind": "wgt"}
      ],
      "build": {"...": "provenance, free-form"}
    }

The module's h1 is :func:`wgtpm.dirhash.hash1` over exactly the
(``path``, ``sha256``) pairs of ``files``. Readers ignore keys they do not
know. Paths are relative, use ``/``, and never contain ``..``, a leading
``/``, a backslash, a NUL, or an element that starts with ``.``; two paths
never differ only in case (they would collide on macOS and Windows).

So that a release unpacks to the same files on every system, a path also
holds no control or bidirectional-formatting character, none of
``< > : " | ? *``, no element that ends in a dot or a space, and no Windows
device name as an element (``CON``, ``aux.txt``, ``LPT1.bin``); and no two
paths are equal after Unicode normalization and case folding (``é`` as one
code point and as ``e`` plus a combining accent are the same name on macOS).

``commit`` names the source revision the release was made from, and is
lower-case hex and nothing else: a git commit (40 digits, 64 in a SHA-256
repository; :func:`is_commit`), or the program ID of a release wgtpm
synthesised for a PAW program (16 to 64 digits). ``wgtpm verify --rebuild``
hands a release's commit to ``git fetch``; a value that could read as an
option there (``--upload-pack=...``) never gets past :func:`parse`.
"""

from __future__ import annotations

import io
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from . import dirhash
from ._errors import VerifyError
from ._fs import canonical_json, is_hex64

__all__ = [
    "PROVENANCE_FILE",
    "IndexEntry",
    "ReleaseIndex",
    "check_file_path",
    "check_files",
    "fold",
    "is_commit",
    "parse",
    "synthetic_mod",
]

SCHEMA = 1
MAX_FILES = 100_000
#: The release file that holds the provenance (listed in the index, covered by h1; its
#: format and checks: :mod:`wgtpm.publish._provenance`). Named here so that a download
#: of a release without one does not load that module.
PROVENANCE_FILE = "wgt.provenance.json"
#: A git commit: SHA-1 (40) or SHA-256 (64) lower-case hex digits, the whole string.
_COMMIT = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
#: What an index's ``commit`` may be: a git commit, or a PAW program ID (16 to 64 hex
#: digits, :mod:`wgtpm.sources.pawhub`): hex either way, so never an option nor a path.
_REVISION = re.compile(r"[0-9a-f]{16,64}\Z")
#: Indexes of this many files or more are encoded chunk by chunk (less memory, a little slower).
STREAM_FILES = 1000


@dataclass(frozen=True, slots=True)  # a release may list 100,000 (MAX_FILES)
class IndexEntry:
    """One file of a release: logical path, size in bytes, hex sha256, and what it belongs to."""

    path: str
    size: int
    sha256: str
    artifact: str | None = None
    kind: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "size": self.size, "sha256": self.sha256}
        if self.artifact is not None:
            out["artifact"] = self.artifact
        if self.kind is not None:
            out["kind"] = self.kind
        return out


@dataclass
class ReleaseIndex:
    """The parsed index of one module version."""

    module: str
    version: str
    files: list[IndexEntry]
    time: str | None = None
    commit: str | None = None
    build: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def h1(self) -> str:
        """The h1 that wgt.sum records for this version."""
        return dirhash.hash1((e.path, e.sha256) for e in self.files)

    def entry(self, path: str) -> IndexEntry | None:
        for e in self.files:
            if e.path == path:
                return e
        return None

    def to_json(self) -> bytes:
        """Canonical bytes: sorted keys, files sorted by path, two-space indent, final newline."""
        doc: dict[str, Any] = dict(self.extra)
        ordered = sorted(self.files, key=lambda e: e.path)
        doc.update(
            {
                "schema": SCHEMA,
                "module": self.module,
                "version": self.version,
                "files": (
                    [e.to_json() for e in ordered]
                    if len(ordered) < STREAM_FILES
                    else _Made(len(ordered), (e.to_json() for e in ordered))
                ),
            }
        )
        if self.time:
            doc["time"] = self.time
        if self.commit:
            doc["commit"] = self.commit
        if self.build:
            doc["build"] = self.build
        if len(self.files) < STREAM_FILES:
            return canonical_json(doc, pretty=True)
        # canonical_json(doc, pretty=True), encoded chunk by chunk: json.dumps holds every
        # chunk of the text at once (about 1 KB a file: 100 MB for 100,000 files).
        out = io.BytesIO()
        enc = json.JSONEncoder(sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
        for chunk in enc.iterencode(doc):
            out.write(chunk.encode("utf-8"))
        out.write(b"\n")
        return out.getvalue()


class _Made(list):  # type: ignore[type-arg]
    """A list of ``n`` items made as the JSON encoder walks it, for an index's files: the
    pure-Python encoder (the one with ``indent``) asks only its length and iterates it
    once, so the files' objects are never all held at once (about 300 bytes a file)."""

    def __init__(self, n: int, items: Iterator[Any]) -> None:
        super().__init__()
        self._n = n
        self._items = items

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Any]:
        return self._items


# Characters Windows refuses in a file name; ':' also names NTFS streams.
_WINDOWS_FORBIDDEN = frozenset('<>:"|?*')
# Bidirectional formatting characters: they make a listed name read as another.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Windows device names, with or without an extension ("aux.txt" is the device too).
_DEVICE = re.compile(r"(?i)con|prn|aux|nul|com[0-9\u00b9\u00b2\u00b3]|lpt[0-9\u00b9\u00b2\u00b3]")


def is_commit(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a git commit id: 40 lower-case hex digits (64 for a SHA-256
    repository), the whole string. The one check of a commit that reaches git (a release's
    index and provenance, ``wgtpm verify --rebuild``, :mod:`wgtpm.publish._git`)."""
    return isinstance(value, str) and _COMMIT.match(value) is not None


def _commit(module: str, version: str, value: object) -> str | None:
    """The index's ``commit`` (``None`` when absent or null), or :class:`VerifyError`."""
    if value is None:
        return None
    if isinstance(value, str) and _REVISION.match(value):
        return value
    if isinstance(value, str):
        shown = repr(value if len(value) <= 80 else value[:77] + "...")  # one short line
    else:
        shown = type(value).__name__
    raise _bad(
        module,
        version,
        f"commit {shown} is not a git commit (40 or 64 lower-case hex digits); the release "
        "is damaged or hostile: do not use it, and tell its publisher",
    )


def fold(p: str) -> str:
    """The form two names collide in on a case-insensitive, normalizing file system."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", p).casefold())


def check_file_path(p: str) -> str | None:
    """Why ``p`` is not a safe logical path, or ``None`` when it is."""
    if not p:
        return "empty path"
    if "\x00" in p:
        return "contains a NUL byte"
    if "\\" in p:
        return "contains a backslash"
    if "\n" in p or "\r" in p:
        return "contains a line break"
    if p.startswith("/"):
        return "is absolute"
    if re.match(r"^[A-Za-z]:", p):
        return "starts with a drive letter"
    for ch in p:
        if unicodedata.category(ch) == "Cc":
            return f"contains the control character U+{ord(ch):04X}"
        if ch in _BIDI:
            return f"contains the bidirectional formatting character U+{ord(ch):04X}"
        if ch in _WINDOWS_FORBIDDEN:
            return f"contains {ch!r}, which Windows does not allow in file names"
    for elem in p.split("/"):
        if elem == "":
            return "has an empty element"
        if elem == "..":
            return "escapes the module with '..'"
        if elem.startswith("."):
            return f"has an element starting with '.' ({elem!r})"
        if elem[-1] in ". ":
            return f"has an element ending in a dot or a space ({elem!r})"
        if _DEVICE.fullmatch(elem.split(".", 1)[0].rstrip(" ")):
            return f"has an element that is a Windows device name ({elem!r})"
    return None


def _bad(module: str, version: str, msg: str) -> VerifyError:
    return VerifyError(module, version, f"bad wgt.index.json: {msg}")


#: The keys of a file's object; one with these alone is read straight into an IndexEntry.
_FILE_KEYS = frozenset({"path", "size", "sha256", "artifact", "kind"})
_FILE_NEEDS = frozenset({"path", "size", "sha256"})


def _object(pairs: list[tuple[str, Any]]) -> Any:
    """A JSON object as the parser reads it: one that looks like a file's becomes an
    :class:`IndexEntry` at once, unchecked (:func:`_entry` checks it), so that an index of
    100,000 files never holds 100,000 dicts too; any other object is a dict."""
    d = dict(pairs)
    if (
        len(d) <= len(_FILE_KEYS)
        and _FILE_NEEDS <= d.keys() <= _FILE_KEYS
        and d.get("artifact", "") is not None  # a null would not come back from to_json()
        and d.get("kind", "") is not None
    ):
        return IndexEntry(d["path"], d["size"], d["sha256"], d.get("artifact"), d.get("kind"))
    return d


def _plain(v: Any) -> Any:
    """``v`` with every IndexEntry that :func:`_object` made back as the dict it was read
    from (an object outside ``files`` that happened to look like a file's). Containers
    are changed in place, walked without recursion (they may nest as deep as the parser
    allows)."""
    if isinstance(v, IndexEntry):
        return v.to_json()
    todo = [v]
    while todo:
        c = todo.pop()
        items = c.items() if isinstance(c, dict) else enumerate(c) if isinstance(c, list) else ()
        for k, x in list(items):
            if isinstance(x, IndexEntry):
                c[k] = x.to_json()
            elif isinstance(x, dict | list):
                todo.append(x)
    return v


def _entry(module: str, version: str, i: int, raw: Any) -> IndexEntry:
    path: Any
    size: Any
    sha: Any
    art: Any
    kind: Any
    if isinstance(raw, IndexEntry):
        path, size, sha = raw.path, raw.size, raw.sha256
        art, kind = raw.artifact, raw.kind
    elif isinstance(raw, dict):
        path, size, sha = raw.get("path"), raw.get("size"), raw.get("sha256")
        art, kind = raw.get("artifact"), raw.get("kind")
    else:
        raise _bad(module, version, f"files[{i}] is not an object")
    if not isinstance(path, str):
        raise _bad(module, version, f"files[{i}].path is not a string")
    why = check_file_path(path)
    if why:
        raise _bad(module, version, f"unsafe file path {path!r}: {why}")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise _bad(module, version, f"{path}: size must be a non-negative integer")
    if not is_hex64(sha):
        raise _bad(module, version, f"{path}: sha256 must be 64 lower-case hex digits")
    if art is not None and not isinstance(art, str):
        raise _bad(module, version, f"{path}: artifact must be a string")
    if kind is not None and not isinstance(kind, str):
        raise _bad(module, version, f"{path}: kind must be a string")
    return raw if isinstance(raw, IndexEntry) else IndexEntry(path, size, sha, art, kind)


def parse(data: bytes, module: str, version: str) -> ReleaseIndex:
    """Parse and check the index of ``module@version``; raises :class:`VerifyError`.

    Checks the schema, that the index names this module and version, and
    every file path (see the module docstring); it does not check the h1,
    which is the caller's comparison against wgt.sum.
    """
    try:
        doc = json.loads(data, object_pairs_hook=_object)
    except ValueError as exc:  # bad UTF-8, bad JSON, a number too long to read
        raise _bad(module, version, f"not JSON: {exc}") from exc
    except RecursionError as exc:
        raise _bad(module, version, "JSON nested too deeply") from exc
    if isinstance(doc, IndexEntry):  # a document that is one file's object
        doc = doc.to_json()
    if not isinstance(doc, dict):
        raise _bad(module, version, "not a JSON object")
    if doc.get("schema") != SCHEMA:
        raise _bad(
            module,
            version,
            f"schema {doc.get('schema')!r} (this wgtpm reads schema {SCHEMA}; upgrade wgtpm)",
        )
    if doc.get("module") != module or doc.get("version") != version:
        raise _bad(
            module,
            version,
            f"index is for {doc.get('module')}@{doc.get('version')}, not this version",
        )
    raw_files = doc.get("files")
    if not isinstance(raw_files, list):
        raise _bad(module, version, "files is not a list")
    if len(raw_files) > MAX_FILES:
        raise _bad(module, version, f"more than {MAX_FILES} files")
    files = [_entry(module, version, i, r) for i, r in enumerate(raw_files)]
    del raw_files, doc["files"]
    _check_names(module, version, files)
    known = {"schema", "module", "version", "files", "time", "commit", "build"}
    build = doc.get("build") if isinstance(doc.get("build"), dict) else {}
    return ReleaseIndex(
        module=module,
        version=version,
        files=files,
        time=doc.get("time") if isinstance(doc.get("time"), str) else None,
        commit=_commit(module, version, doc.get("commit")),
        build=_plain(build or {}),
        extra={k: _plain(v) for k, v in doc.items() if k not in known},
    )


def check_files(module: str, version: str, files: Sequence[IndexEntry]) -> None:
    """Check entries made for an index as :func:`parse` checks those it reads (safe paths,
    sizes, sha256, no collisions); raises :class:`VerifyError`. For an index a source
    makes itself, without encoding and parsing it again (100,000 files: tens of MB)."""
    if len(files) > MAX_FILES:
        raise _bad(module, version, f"more than {MAX_FILES} files")
    for i, e in enumerate(files):
        _entry(module, version, i, e)
    _check_names(module, version, files)


def _check_names(module: str, version: str, files: Sequence[IndexEntry]) -> None:
    """No two paths the same on a case-insensitive, normalizing file system; no file
    inside another."""
    seen: dict[str, str] = {}  # folded path -> path
    for e in files:
        folded = fold(e.path)
        if folded in seen:
            other = seen[folded]
            what = (
                "listed twice"
                if other == e.path
                else f"collides with {other!r} (they differ only in case or Unicode normalization)"
            )
            raise _bad(module, version, f"file path {e.path!r} {what}")
        seen[folded] = e.path
    _check_prefixes(module, version, seen)


def _check_prefixes(module: str, version: str, folded: Mapping[str, str]) -> None:
    """A file may not also be a directory of another file (``a`` and ``a/b``);
    ``folded`` maps each path's :func:`fold` to the path."""
    for name, p in folded.items():
        if "/" not in name:
            continue
        parts = name.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in folded:
                raise _bad(
                    module,
                    version,
                    f"{p!r} lies inside {'/'.join(p.split('/')[:i])!r}, which is a file",
                )


def synthetic_mod(module: str) -> bytes:
    """The wgt.mod used for a repository that has none: ``module PATH`` and a newline."""
    return f"module {module}\n".encode()


def build_index(
    module: str,
    version: str,
    entries: Iterable[IndexEntry],
    *,
    time: str | None = None,
    commit: str | None = None,
    build: dict[str, Any] | None = None,
) -> ReleaseIndex:
    """An index over ``entries`` (checked like a parsed one)."""
    idx = ReleaseIndex(module, version, list(entries), time, commit, dict(build or {}))
    return parse(idx.to_json(), module, version)
