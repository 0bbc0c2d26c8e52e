"""The registry's web page: server-rendered HTML, no scripts to build, nothing fetched upstream.

::

    /                                        modules (hosted and cached), their latest
                                             versions; the checksum log's size and signed head
    /-/module/$module                        a module's versions
    /-/module/$module/@v/$version            a version: the ``wgtpm get`` line, its h1, files
                                             (size, sha256, artifact, kind), WeightLang
                                             interfaces, layers and tensor provenance (from
                                             each artifact's manifest.json), PAW programs
                                             (program id and spec from the .paw's meta.json)

``$module`` and ``$version`` are escaped as in the proxy protocol. ``/-/``
cannot begin a module path (its first element needs a dot), so the pages
never shadow a protocol URL. Only what is stored here is shown: a page never
makes the caching proxy fetch. Private modules are shown only to a request
whose ``Authorization: Bearer`` token covers them; to anyone else they do not
exist. Every string from a module (paths, file names, manifests, specs) is
HTML-escaped, and links are built from escaped, percent-quoted paths.

Nothing on a page comes from the request's headers but its token: the
``HF_ENDPOINT`` line names :attr:`Registry.public_url` (``--public-url``,
:mod:`registry.config`), never the ``Host`` a request gives, since public
version pages are kept and served to everyone (and sent ``public,
max-age=300`` to shared caches).
"""

from __future__ import annotations

import html
import io
import json
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from wgtpm import _json as _wjson
from wgtpm import version as _v
from wgtpm._errors import WgtpmError
from wgtpm.index import ReleaseIndex, parse
from wgtpm.module import escape_path, escape_version, unescape_path

from . import tokens as _tokens
from ._errors import BlobNotFoundError, GoneError, NotFoundError, RegistryError
from .metadata import ModuleRecord, TokenRecord, VersionRecord
from .pictures import layers_svg, requirements_svg
from .service import Registry, latest_of

__all__ = [
    "PREFIX",
    "hf_snippet",
    "new_page_cache",
    "render_index",
    "render_module",
    "render_version",
    "routes",
]

PREFIX = "/-/module/"
MAX_MANIFEST = 4 << 20  # bytes of a manifest.json the page reads
MAX_PAW = 64 << 20  # bytes of a .paw bundle the page opens for its meta.json
MAX_META = 1 << 20  # bytes of a meta.json
MAX_MODULES = 2000  # modules listed on the front page
_CACHE_PAGES = 256  # rendered public version pages kept (versions never change)

_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#222}
h1,h1.mono{font-size:1.4rem}h2{font-size:1.2rem;margin-top:2rem}a{color:#0550ae}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.2rem .6rem;
border-bottom:1px solid #ddd;vertical-align:top}code,pre,.mono{font-family:ui-monospace,monospace;
font-size:13px}pre{background:#f6f8fa;padding:.6rem;overflow:auto;white-space:pre-wrap}
.tag{font-size:12px;border:1px solid #999;border-radius:3px;padding:0 .3rem;color:#555}
.get{display:flex;gap:.5rem;align-items:center}.get input{flex:1;font:14px ui-monospace,monospace;
padding:.3rem}
"""


def esc(value: object) -> str:
    """``value`` as HTML text (quotes escaped too, so it is safe in attributes)."""
    return html.escape(str(value), quote=True)


def _module_href(module: str) -> str:
    return PREFIX + quote(escape_path(module), safe="/!")


def _version_href(module: str, version: str) -> str:
    return _module_href(module) + "/@v/" + quote(escape_version(version), safe="!")


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"
        f'<nav><a href="/">wgtpm registry</a></nav>{body}</body></html>'
    )


def _table(head: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """A table; cells are HTML already (escape them before)."""
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def _readable(rec: ModuleRecord | None, token: TokenRecord | None) -> bool:
    return rec is not None and (
        not rec.private or (token is not None and _tokens.covers(token.prefix, rec.path))
    )


def _latest(versions: list[str]) -> str:
    return latest_of(versions) if versions else ""


# -- the pages


def render_index(reg: Registry, token: TokenRecord | None) -> str:
    """``/``: every readable module with its latest version, and the checksum log's head."""
    rows = []
    every = reg.meta.all_versions()
    shown = [m for m in reg.meta.list_modules() if _readable(m, token)]
    for m in shown[:MAX_MODULES]:
        vs = every.get(m.path, [])
        latest = _latest(vs)
        where = "cached" if m.proxied else ("private" if m.private else "hosted")
        rows.append(
            [
                f'<a class="mono" href="{esc(_module_href(m.path))}">{esc(m.path)}</a>',
                f'<a href="{esc(_version_href(m.path, latest))}">{esc(latest)}</a>'
                if latest
                else "",
                str(len(vs)),
                f'<span class="tag">{where}</span>',
            ]
        )
    body = "<h1>Modules</h1>"
    body += (
        _table(["module", "latest", "versions", ""], rows)
        if rows
        else "<p>No modules yet. Publish one with <code>wgtpm publish --to URL</code>.</p>"
    )
    if len(shown) > MAX_MODULES:
        body += f"<p>… and {len(shown) - MAX_MODULES:,} more, not listed here.</p>"
    if reg.proxy is not None:
        body += f"<p>Modules not hosted here are fetched from <code>{esc(reg.proxy.name)}</code>, verified and cached.</p>"
    if reg.sumdb is not None:
        signed = reg.sumdb.signed().decode("utf-8", "replace")
        size = reg.sumdb.log.tree().n
        body += (
            f'<h2>Checksum database</h2><p>Log size: <b id="log-size">{size}</b> records. '
            f'Clients verify with <code>WGTSUMDB="{esc(reg.sumdb.vkey)} URL"</code>.</p>'
            f'<pre id="signed-head">{esc(signed)}</pre>'
        )
    return _page("wgtpm registry", body)


def hf_snippet(endpoint: str, module: str, version: str) -> str | None:
    """The line a user pastes to load ``hf.co/OWNER/REPO@version`` through this registry's
    Hub API with transformers; ``None`` for modules that are not Hugging Face repositories.

    >>> hf_snippet("http://reg:8080", "hf.co/acme/tiny", "v0.1.0")  # doctest: +ELLIPSIS
    'HF_ENDPOINT=http://reg:8080 python -c "from transformers import AutoConfig; AutoConfig.from_pretrained(\'acme/tiny\', revision=\'v0.1.0\')"'
    """
    elems = module.split("/")
    if len(elems) != 3 or elems[0] != "hf.co" or not endpoint:
        return None
    repo = f"{elems[1]}/{elems[2]}"
    return (
        f'HF_ENDPOINT={endpoint} python -c "from transformers import AutoConfig; '
        f"AutoConfig.from_pretrained('{repo}', revision='{version}')\""
    )


def _snippet_html(endpoint: str, module: str, version: str) -> str:
    line = hf_snippet(endpoint, module, version)
    if line is None:
        return ""
    return (
        "<h2>Hugging Face</h2><p>This repository is served on the Hub API of this registry "
        "(<code>HF_ENDPOINT</code>), every byte checked against the checksum log:</p>"
        f'<div class="get"><input id="hf-line" readonly value="{esc(line)}" '
        'onfocus="this.select()"><button type="button" '
        'onclick="navigator.clipboard&&navigator.clipboard.writeText('
        "document.getElementById('hf-line').value)\">copy</button></div>"
    )


def render_module(reg: Registry, module: str, token: TokenRecord | None) -> str:
    """``/-/module/$module``: the versions stored here, newest first (and, for an
    ``hf.co`` module, the transformers line that loads the latest through this registry)."""
    rec = reg.meta.get_module(module)
    vs = reg.meta.list_versions(module) if _readable(rec, token) else []
    if not vs:
        raise NotFoundError(f"{module}: no such module here")
    assert rec is not None
    rows = []
    for v in reversed(_v.sort_versions(vs)):
        vr = reg.meta.get_version(module, v)
        rows.append(
            [
                f'<a class="mono" href="{esc(_version_href(module, v))}">{esc(v)}</a>',
                esc((vr.time or vr.created) if vr else ""),
                f'<span class="mono">{esc(vr.h1 if vr else "")}</span>',
            ]
        )
    kind = "cached from the upstream" if rec.proxied else "hosted here"
    body = (
        f'<h1 class="mono">{esc(module)}</h1><p>{kind}; latest '
        f"<b>{esc(_latest(vs))}</b></p>" + _table(["version", "time", "h1"], rows)
    )
    body += _snippet_html(reg.public_url, module, _latest(vs))
    return _page(module, body)


def render_version(reg: Registry, module: str, version: str, token: TokenRecord | None) -> str:
    """``/-/module/$module/@v/$version``: files, artifacts and the ``wgtpm get`` line (and,
    for an ``hf.co`` module, the transformers line that loads it through this registry)."""
    rec = reg.meta.get_module(module)
    v = reg.meta.get_version(module, version) if _readable(rec, token) else None
    if v is None:
        raise NotFoundError(f"{module}@{version}: no such version here")
    idx = _index(reg, v)
    get = f"wgtpm get {module}@{version}"
    body = (
        f'<h1 class="mono">{esc(module)} <span id="version">{esc(version)}</span></h1>'
        f'<div class="get"><input id="get-line" readonly value="{esc(get)}" '
        'onfocus="this.select()"><button type="button" '
        'onclick="navigator.clipboard&&navigator.clipboard.writeText('
        "document.getElementById('get-line').value)\">copy</button></div>"
        f"<p>h1 <code>{esc(v.h1)}</code> · time {esc(v.time or v.created)}"
        + (f" · commit <code>{esc(v.commit)}</code>" if v.commit else "")
        + "</p>"
    )
    body += _snippet_html(reg.public_url, module, version)
    files = reg.meta.list_files(module, version)
    entries = {e.path: e for e in idx.files} if idx else {}
    rows = []
    for f in files:
        e = entries.get(f.path)
        rows.append(
            [
                f'<span class="mono file">{esc(f.path)}</span>',
                f"{f.size:,}",
                f'<span class="mono sha">{esc(f.sha256)}</span>',
                esc(e.artifact or "") if e else "",
                esc(e.kind or "") if e else "",
            ]
        )
    body += _requirements(reg, idx, module, version)
    body += "<h2>Files</h2>" + _table(["path", "size", "sha256", "artifact", "kind"], rows)
    body += _artifacts(reg, idx)
    return _page(f"{module}@{version}", body)


def _requirements(reg: Registry, idx: ReleaseIndex | None, module: str, version: str) -> str:
    """The version's requirements (from its wgt.mod) as a picture, each linked to its page."""
    from wgtpm import modfile

    e = idx.entry("wgt.mod") if idx else None
    data = _blob(reg, e.sha256, e.size, MAX_MANIFEST) if e else None
    if data is None:
        return ""
    try:
        mf = modfile.parse(data, f"{module}@{version}/wgt.mod")
    except WgtpmError:
        return ""
    reqs = [(r.path, r.version, _version_href(r.path, r.version)) for r in mf.requires]
    return "<h2>Requirements</h2>" + requirements_svg(f"{module}@{version}", reqs)


def _index(reg: Registry, v: VersionRecord) -> ReleaseIndex | None:
    try:
        return parse(reg.blobs.read(v.index_sha256, reg.limits.max_index_size), v.module, v.version)
    except (RegistryError, WgtpmError):
        return None


def _blob(reg: Registry, sha256: str, size: int, limit: int) -> bytes | None:
    if size > limit:
        return None
    try:
        return reg.blobs.read(sha256, limit)
    except (BlobNotFoundError, RegistryError):
        return None


def _artifacts(reg: Registry, idx: ReleaseIndex | None) -> str:
    """A section per artifact: a WeightLang model's interface and provenance, a PAW program."""
    if idx is None:
        return ""
    out = []
    for e in idx.files:
        name = e.artifact or e.path.rsplit("/", 1)[0]
        if e.path.endswith("manifest.json") and e.kind in (None, "wgt"):
            data = _blob(reg, e.sha256, e.size, MAX_MANIFEST)
            doc = _json(data)
            if isinstance(doc, dict) and isinstance(doc.get("interface"), dict):
                out.append(_weightlang(name, e.path, doc))
        elif e.path.endswith(".paw"):
            data = _blob(reg, e.sha256, e.size, MAX_PAW)
            out.append(_paw(e.artifact or e.path, e.path, _paw_meta(data)))
    return "<h2>Artifacts</h2>" + "".join(out) if out else ""


def _json(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return _wjson.loads(data)
    except ValueError:  # also too deep, not UTF-8, an over-long number
        return None


def _shape(io_: Any) -> str:
    if not isinstance(io_, Mapping):
        return ""
    shape = io_.get("shape")
    dims = "×".join(str(d) for d in shape) if isinstance(shape, list) else "?"
    return f"{io_.get('name', '?')}: {io_.get('dtype', '')}[{dims}]"


def _weightlang(name: str, path: str, doc: Mapping[str, Any]) -> str:
    iface = doc.get("interface") or {}
    s = (
        f'<section class="artifact"><h3 class="mono">{esc(name)} '
        f'<span class="tag">wgt</span></h3><p>model <b>{esc(doc.get("model", ""))}</b> '
        f"from <code>{esc(path)}</code></p>"
        f'<p>input <code class="iface-in">{esc(_shape(iface.get("input")))}</code> → '
        f'output <code class="iface-out">{esc(_shape(iface.get("output")))}</code></p>'
    )
    layers = [x for x in doc.get("layers") or [] if isinstance(x, Mapping)]
    if layers:
        s += (
            "<h4>Layers</h4>"
            + (layers_svg(doc) or "")
            + _table(
                ["name", "op", "args"],
                [
                    [
                        esc(x.get("name", "")),
                        esc(x.get("op", "")),
                        esc(json.dumps(x.get("args", {}))),
                    ]
                    for x in layers
                ],
            )
        )
    weights = doc.get("weights")
    tensors = weights.get("tensors") if isinstance(weights, Mapping) else None
    if isinstance(tensors, Mapping):
        s += "<h4>Tensors</h4>" + _table(
            ["tensor", "shape", "origin", "upstream origin"],
            [
                [
                    f'<span class="mono">{esc(t)}</span>',
                    esc(info.get("shape", "")),
                    esc(info.get("origin", "")),
                    esc(info.get("upstream_origin", "")),
                ]
                for t, info in tensors.items()
                if isinstance(info, Mapping)
            ],
        )
    imports = [x for x in doc.get("imports") or [] if isinstance(x, Mapping)]
    if imports:
        rows = []
        for x in imports:
            pkg = x.get("package")
            where = (
                f"{pkg.get('module', '')}@{pkg.get('version', '')}"
                if isinstance(pkg, Mapping)
                else "(a path)"
            )
            rows.append(
                [
                    esc(x.get("layer", "")),
                    f'<span class="mono">{esc(x.get("source", ""))}</span>',
                    f'<span class="mono">{esc(where)}</span>',
                    "frozen" if x.get("frozen") else "",
                ]
            )
        s += "<h4>Imports</h4>" + _table(["layer", "source", "package", ""], rows)
    return s + "</section>"


def _paw_meta(data: bytes | None) -> Mapping[str, Any] | None:
    """``meta.json`` of a ``.paw`` bundle (a ZIP), read within limits; ``None`` if unreadable."""
    if data is None:
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


def _paw(name: str, path: str, meta: Mapping[str, Any] | None) -> str:
    s = (
        f'<section class="artifact"><h3 class="mono">{esc(name)} <span class="tag">paw</span>'
        f"</h3><p>bundle <code>{esc(path)}</code></p>"
    )
    if meta is None:
        return s + "<p>(meta.json could not be read)</p></section>"
    s += f'<p>program id <code class="program-id">{esc(meta.get("program_id", ""))}</code>'
    interp = meta.get("interpreter")
    if isinstance(interp, str | int | float):
        s += f" · interpreter <code>{esc(interp)}</code>"
    s += "</p>"
    spec = meta.get("spec")
    if isinstance(spec, str) and spec:
        s += f'<h4>Spec</h4><pre class="spec">{esc(spec)}</pre>'
    return s + "</section>"


# -- HTTP


class _Pages:
    """Rendered pages of public versions, newest use last (versions never change)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pages: OrderedDict[tuple[str, str], str] = OrderedDict()

    def get(self, key: tuple[str, str]) -> str | None:
        with self._lock:
            page = self._pages.get(key)
            if page is not None:
                self._pages.move_to_end(key)
            return page

    def put(self, key: tuple[str, str], page: str) -> None:
        with self._lock:
            self._pages[key] = page
            while len(self._pages) > _CACHE_PAGES:
                self._pages.popitem(last=False)


async def _token(request: Request, reg: Registry) -> TokenRecord | None:
    cred = _tokens.parse_authorization(request.headers.get("authorization"))
    return await run_in_threadpool(reg.authenticate, cred)


def _html(page: str, cache: str) -> Response:
    return HTMLResponse(
        page,
        headers={
            "Cache-Control": cache,
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; img-src 'self'",
            "X-Content-Type-Options": "nosniff",
        },
    )


async def _home(request: Request) -> Response:
    reg: Registry = request.app.state.registry
    token = await _token(request, reg)
    page = await run_in_threadpool(render_index, reg, token)
    return _html(page, "no-cache" if token is None else "private, no-cache")


def _split(path: str) -> tuple[str, str | None]:
    esc_mod, sep, esc_ver = path.partition("/@v/")
    try:
        module = unescape_path(esc_mod.strip("/"))
    except WgtpmError as exc:
        raise GoneError(str(exc)) from exc
    if not sep:
        return module, None
    from .protocol import _unescape_version

    return module, _unescape_version(esc_ver)


async def _module_page(request: Request) -> Response:
    reg: Registry = request.app.state.registry
    token = await _token(request, reg)
    module, version = _split(request.path_params["path"])
    if version is None:
        page = await run_in_threadpool(render_module, reg, module, token)
        return _html(page, "no-cache" if token is None else "private, no-cache")
    pages: _Pages = request.app.state.web_pages
    key = (module, version)
    cached = pages.get(key)
    if cached is not None:
        return _html(cached, "public, max-age=300")
    page = await run_in_threadpool(render_version, reg, module, version, token)
    rec = await run_in_threadpool(reg.meta.get_module, module)
    if rec is not None and not rec.private:
        pages.put(key, page)
        return _html(page, "public, max-age=300")
    return _html(page, "private, no-cache")


def routes() -> list[BaseRoute]:
    """The page routes; the app sets ``app.state.web_pages`` (:func:`new_page_cache`)."""
    return [
        Route("/", _home, methods=["GET", "HEAD"]),
        Route(PREFIX + "{path:path}", _module_page, methods=["GET", "HEAD"]),
    ]


def new_page_cache() -> _Pages:
    """The rendered-page cache of one app."""
    return _Pages()
