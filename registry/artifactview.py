"""An artifact as a version's page shows it, computed once per blob and within bounds.

A :class:`Digest` is the HTML of one artifact's section body, made from the
bytes of one blob (a WeightLang ``manifest.json``, or a ``.paw`` bundle's
``meta.json``): a function of those bytes alone, so it is kept by sha256 and
shared by every path and version that lists the same blob
(:class:`registry.web.PageCache`). Making it does bounded work whatever the
blob holds: a manifest over :data:`MAX_MANIFEST` or a bundle over
:data:`MAX_PAW` is not read; a bundle whose ZIP directory is over
:data:`MAX_PAW_DIR` is not opened; a table shows at most :data:`MAX_ROWS`
rows, the layer picture at most :data:`MAX_DRAWN` layers, and a cell at most
:data:`MAX_CELL` characters; what is left out is said on the page
("… and 9,800 more tensors"). Every string from the blob is HTML-escaped.

    >>> d = digest_manifest(b'{"model": "xor", "interface": {}}')
    >>> d.shown, d.model
    (True, 'xor')
"""

from __future__ import annotations

import html
import io
import json
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from wgtpm import _json as _wjson

from .pictures import layers_svg

__all__ = [
    "MAX_CELL",
    "MAX_DRAWN",
    "MAX_MANIFEST",
    "MAX_META",
    "MAX_PAW",
    "MAX_PAW_DIR",
    "MAX_ROWS",
    "MAX_SPEC",
    "Digest",
    "digest_manifest",
    "digest_paw",
    "esc",
    "more",
    "not_read",
    "table",
]

MAX_MANIFEST = 4 << 20  # bytes of a manifest.json read (a 2,000-layer model's is ~1.5 MiB)
MAX_PAW = 16 << 20  # bytes of a .paw bundle read for its meta.json (bundles are programs)
MAX_PAW_DIR = 256 << 10  # bytes of a .paw's ZIP directory: zipfile parses all of it on open
MAX_META = 1 << 20  # bytes of a meta.json
MAX_ROWS = 200  # rows of one table (layers, tensors, imports): a page, not a dump
MAX_DRAWN = 64  # layers drawn in the picture (each box is 226 px wide)
MAX_CELL = 300  # characters of one table cell (a layer's args, a tensor's name)
MAX_SPEC = 64 << 10  # characters of a PAW program's spec shown


def esc(value: object) -> str:
    """``value`` as HTML text (quotes escaped too, so it is safe in attributes)."""
    return html.escape(str(value), quote=True)


def table(head: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """A table; cells are HTML already (escape them before)."""
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def _cell(value: object, n: int = MAX_CELL) -> str:
    """``value`` as escaped text of at most ``n`` characters."""
    text = str(value)
    return esc(text if len(text) <= n else text[: n - 1] + "…")


def more(n: int, what: str) -> str:
    """A line saying that ``n`` more ``what`` are left out (nothing when ``n`` is 0)."""
    return f'<p class="more">… and {n:,} more {what}, not shown.</p>' if n > 0 else ""


@dataclass(frozen=True)
class Digest:
    """One artifact's section body (HTML); ``shown`` is false for a manifest that is not a
    WeightLang model's (no section); ``model`` is its model name."""

    body: str
    shown: bool = True
    model: str = ""

    def weight(self) -> int:
        """About the bytes it holds (what :class:`registry.web.PageCache` counts)."""
        return len(self.body) + len(self.model) + 64


def not_read(size: int, limit: int, what: str) -> Digest:
    """The body for a blob the page does not read: ``size`` bytes, over ``limit``."""
    return Digest(f"<p>(not shown: {what} is {size:,} bytes; the page reads up to {limit:,})</p>")


def _json(data: bytes) -> Any:
    try:
        return _wjson.loads(data)
    except ValueError:  # also too deep, not UTF-8, an over-long number
        return None


def _shape(io_: Any) -> str:
    if not isinstance(io_, Mapping):
        return ""
    shape = io_.get("shape")
    dims = "×".join(str(d) for d in shape[:16]) if isinstance(shape, list) else "?"
    return f"{io_.get('name', '?')}: {io_.get('dtype', '')}[{dims}]"


def digest_manifest(data: bytes) -> Digest:
    """A ``manifest.json``'s body: the interface, the layers (a picture and a table), the
    tensors with their provenance and the imports; not shown unless it has an interface."""
    doc = _json(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("interface"), dict):
        return Digest("", shown=False)
    iface = doc["interface"]
    s = (
        f'<p>input <code class="iface-in">{_cell(_shape(iface.get("input")))}</code> → '
        f'output <code class="iface-out">{_cell(_shape(iface.get("output")))}</code></p>'
    )
    s += _layers(doc) + _tensors(doc) + _imports(doc)
    return Digest(s, model=str(doc.get("model", ""))[:MAX_CELL])


def _layers(doc: Mapping[str, Any]) -> str:
    layers = [x for x in doc.get("layers") or [] if isinstance(x, Mapping)]
    if not layers:
        return ""
    rows = [
        [_cell(x.get("name", "")), _cell(x.get("op", "")), _cell(json.dumps(x.get("args", {})))]
        for x in layers[:MAX_ROWS]
    ]
    return (
        "<h4>Layers</h4>"
        + (layers_svg(doc, MAX_DRAWN) or "")
        + table(["name", "op", "args"], rows)
        + more(len(layers) - MAX_ROWS, "layers")
    )


def _tensors(doc: Mapping[str, Any]) -> str:
    weights = doc.get("weights")
    tensors = weights.get("tensors") if isinstance(weights, Mapping) else None
    if not isinstance(tensors, Mapping):
        return ""
    rows: list[list[str]] = []
    for t, info in tensors.items():
        if len(rows) == MAX_ROWS:
            break
        if isinstance(info, Mapping):
            rows.append(
                [
                    f'<span class="mono">{_cell(t)}</span>',
                    _cell(info.get("shape", "")),
                    _cell(info.get("origin", "")),
                    _cell(info.get("upstream_origin", "")),
                ]
            )
    return (
        "<h4>Tensors</h4>"
        + table(["tensor", "shape", "origin", "upstream origin"], rows)
        + more(len(tensors) - len(rows), "tensors")
    )


def _imports(doc: Mapping[str, Any]) -> str:
    imports = [x for x in doc.get("imports") or [] if isinstance(x, Mapping)]
    if not imports:
        return ""
    rows = []
    for x in imports[:MAX_ROWS]:
        pkg = x.get("package")
        where = (
            f"{pkg.get('module', '')}@{pkg.get('version', '')}"
            if isinstance(pkg, Mapping)
            else "(a path)"
        )
        rows.append(
            [
                _cell(x.get("layer", "")),
                f'<span class="mono">{_cell(x.get("source", ""))}</span>',
                f'<span class="mono">{_cell(where)}</span>',
                "frozen" if x.get("frozen") else "",
            ]
        )
    return (
        "<h4>Imports</h4>"
        + table(["layer", "source", "package", ""], rows)
        + more(len(imports) - MAX_ROWS, "imports")
    )


def _zip_dir_ok(data: bytes) -> bool:
    """Whether the ZIP's end record (classic, not ZIP64) gives a directory zipfile may parse:
    at most :data:`MAX_PAW_DIR` bytes."""
    at = data.rfind(b"PK\x05\x06", max(0, len(data) - (1 << 16) - 22))
    if at < 0 or len(data) < at + 22 or data[max(0, at - 20) : at].startswith(b"PK\x06\x07"):
        return False
    return int.from_bytes(data[at + 12 : at + 16], "little") <= MAX_PAW_DIR


def _paw_meta(data: bytes) -> Mapping[str, Any] | None:
    """``meta.json`` of a ``.paw`` bundle (a ZIP), read within limits; ``None`` if unreadable."""
    if not _zip_dir_ok(data):
        return None
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            info = z.getinfo("meta.json")
            if info.file_size > MAX_META:
                return None
            doc = _wjson.loads(z.read(info))
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, NotImplementedError, RuntimeError):
        return None
    return doc if isinstance(doc, dict) else None


def digest_paw(data: bytes | None) -> Digest:
    """A ``.paw`` bundle's body: its program id, interpreter and spec, from its meta.json."""
    meta = _paw_meta(data) if data is not None else None
    if meta is None:
        return Digest("<p>(meta.json could not be read)</p>")
    s = f'<p>program id <code class="program-id">{_cell(meta.get("program_id", ""))}</code>'
    interp = meta.get("interpreter")
    if isinstance(interp, str | int | float):
        s += f" · interpreter <code>{_cell(interp)}</code>"
    s += "</p>"
    spec = meta.get("spec")
    if isinstance(spec, str) and spec:
        s += f'<h4>Spec</h4><pre class="spec">{_cell(spec, MAX_SPEC)}</pre>'
    return Digest(s)
