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
max-age=300`` to shared caches). A version's page does bounded work however
large its files: see :func:`render_version` and :mod:`registry.artifactview`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from wgtpm import version as _v
from wgtpm._errors import WgtpmError
from wgtpm.index import IndexEntry, ReleaseIndex, parse
from wgtpm.module import escape_path, escape_version, unescape_path

from . import tokens as _tokens
from ._errors import BlobNotFoundError, GoneError, NotFoundError, RegistryError
from ._keylock import KeyedLocks
from .artifactview import (
    MAX_MANIFEST,
    MAX_PAW,
    MAX_ROWS,
    Digest,
    digest_manifest,
    digest_paw,
    esc,
    more,
    not_read,
)
from .artifactview import table as _table
from .metadata import ModuleRecord, TokenRecord, VersionRecord
from .pictures import requirements_svg
from .service import Registry, latest_of

__all__ = [
    "PREFIX",
    "PageCache",
    "hf_snippet",
    "new_page_cache",
    "render_index",
    "render_module",
    "render_version",
    "routes",
]

PREFIX = "/-/module/"
MAX_MODULES = 2000  # modules listed on the front page
MAX_FILE_ROWS = 1000  # files listed on a version's page (an index may list 10,000)
MAX_ARTIFACTS = 32  # artifact sections on a version's page (distinct blobs)
MAX_PAGE_READ = 16 << 20  # bytes of artifact blobs one render of a version's page reads
MAX_SIGNATURE_SHOWN = 4 << 20  # a larger signature is named, not read (a 20,000-file release's)
_CACHE_PAGES = 256  # rendered public version pages kept (versions never change)
_CACHE_PAGE_BYTES = 64 << 20  # ... and their bytes, all together
_CACHE_DIGESTS = 4096  # artifact digests kept (a blob's never changes)
_CACHE_DIGEST_BYTES = 32 << 20  # ... and their bytes, all together

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

    >>> print(hf_snippet("http://reg:8080", "hf.co/acme/tiny", "v0.1.0"))
    HF_ENDPOINT=http://reg:8080 python -c "from transformers import AutoConfig; AutoConfig.from_pretrained('acme/tiny', revision='v0.1.0')"
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


def render_version(
    reg: Registry,
    module: str,
    version: str,
    token: TokenRecord | None,
    cache: PageCache | None = None,
) -> str:
    """``/-/module/$module/@v/$version``: files, artifacts and the ``wgtpm get`` line (and,
    for an ``hf.co`` module, the transformers line that loads it through this registry).

    Bounded work whatever the version holds: the first :data:`MAX_FILE_ROWS` files, one
    section per distinct artifact blob (the first :data:`MAX_ARTIFACTS`), each from its
    :class:`~registry.artifactview.Digest` in ``cache`` or read anew, at most
    :data:`MAX_PAGE_READ` bytes of them in all."""
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
    body += _signature_html(reg, v)
    body += _snippet_html(reg.public_url, module, version)
    files = reg.meta.list_files(module, version)
    entries = {e.path: e for e in idx.files} if idx else {}
    rows = []
    for f in files[:MAX_FILE_ROWS]:
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
    body += more(len(files) - MAX_FILE_ROWS, f"files (wgtpm get {module}@{version} has all)")
    body += _artifacts(reg, idx, cache if cache is not None else PageCache())
    return _page(f"{module}@{version}", body)


def _signature_html(reg: Registry, v: VersionRecord) -> str:
    """The version's signer (wgtpm.trust): the key's hint or the keyless identity and its
    issuer, as the bundle states them. The registry checked at publish that the bundle
    lists exactly the release's files; whose signature counts is each consumer's trust
    lines' call, so the page says so rather than "verified"."""
    sha = reg.meta.get_signature(v.module, v.version)
    if sha is None:
        return "<p>signature: none (unsigned)</p>"
    size = reg.blobs.size(sha)
    data = _blob(reg, sha, size, MAX_SIGNATURE_SHOWN) if size is not None else None
    if data is None:
        return "<p>signature: a bundle too large to show here</p>"
    from wgtpm.trust import cert_identity
    from wgtpm.trust._bundle import BadSignature, read_bundle

    try:
        signed = read_bundle(data)
        if signed.certificate is not None:
            ident, issuer = cert_identity(signed.certificate)
            who = f"keyless, identity <code>{esc(ident)}</code> (issuer {esc(issuer)})"
        else:
            who = f"key <code>{esc(signed.hint[:16])}</code>…"
    except BadSignature:
        return "<p>signature: unreadable</p>"
    revoked = reg.revoked_keys().get(signed.hint) if signed.hint else None
    if revoked is not None:
        return (
            f'<p id="signature" class="revoked">signed by {who} · <strong>key '
            f"{esc(revoked.said())}</strong> (this registry's revocation list): "
            "consumers whose trust lines list the revocation refuse it</p>"
        )
    return (
        f'<p id="signature">signed by {who} · lists exactly this release\'s files; '
        "<code>trust</code> lines in a consumer's wgt.mod decide whose signature counts</p>"
    )


def _requirements(reg: Registry, idx: ReleaseIndex | None, module: str, version: str) -> str:
    """The version's requirements (from its wgt.mod) as a picture, each linked to its page
    (the first :data:`~registry.artifactview.MAX_ROWS` of them)."""
    from wgtpm import modfile

    e = idx.entry("wgt.mod") if idx else None
    data = _blob(reg, e.sha256, e.size, reg.limits.max_mod_size) if e else None
    if data is None:
        return ""
    try:
        mf = modfile.parse(data, f"{module}@{version}/wgt.mod")
    except WgtpmError:
        return ""
    reqs = [(r.path, r.version, _version_href(r.path, r.version)) for r in mf.requires]
    return (
        "<h2>Requirements</h2>"
        + requirements_svg(f"{module}@{version}", reqs[:MAX_ROWS])
        + more(len(reqs) - MAX_ROWS, "requirements")
    )


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


def _kind(e: IndexEntry) -> str | None:
    """``wgt`` for a WeightLang manifest, ``paw`` for a PAW bundle, else ``None``."""
    if e.path.endswith("manifest.json") and e.kind in (None, "wgt"):
        return "wgt"
    return "paw" if e.path.endswith(".paw") else None


def _artifacts(reg: Registry, idx: ReleaseIndex | None, cache: PageCache) -> str:
    """A section per distinct artifact blob (however many paths list it): a WeightLang
    model's interface and provenance, a PAW program."""
    if idx is None:
        return ""
    groups: dict[tuple[str, str], list[IndexEntry]] = {}
    for e in idx.files:
        kind = _kind(e)
        if kind is not None:
            groups.setdefault((kind, e.sha256), []).append(e)
    budget = MAX_PAGE_READ
    out = []
    for (kind, _), same in list(groups.items())[:MAX_ARTIFACTS]:
        digest, spent = _digest(reg, cache, kind, same[0], budget)
        budget -= spent
        if digest.shown:
            out.append(_section(kind, same, digest))
    out.append(more(len(groups) - MAX_ARTIFACTS, "artifacts"))
    return "<h2>Artifacts</h2>" + "".join(out) if any(out) else ""


def _digest(
    reg: Registry, cache: PageCache, kind: str, e: IndexEntry, budget: int
) -> tuple[Digest, int]:
    """The artifact's digest and the bytes read for it: from ``cache``, else read (if ``e``
    is within its limit and ``budget``) and kept; a blob over its limit is kept as such."""
    key = f"{kind}:{e.sha256}"
    known = cache.digests.get(key)
    if known is not None:
        return known, 0
    limit, what = (MAX_MANIFEST, "the manifest") if kind == "wgt" else (MAX_PAW, "the bundle")
    if e.size > limit:
        digest = not_read(e.size, limit, what)
        cache.digests.put(key, digest)
        return digest, 0
    if e.size > budget:
        return Digest(
            f"<p>(not shown: this page reads at most {MAX_PAGE_READ:,} bytes of artifacts)</p>"
        ), 0
    data = _blob(reg, e.sha256, e.size, limit)
    if data is None:  # a store that failed now may answer later: not kept
        return (Digest("", shown=False) if kind == "wgt" else digest_paw(None)), e.size
    digest = digest_manifest(data) if kind == "wgt" else digest_paw(data)
    cache.digests.put(key, digest)
    return digest, e.size


def _section(kind: str, same: list[IndexEntry], digest: Digest) -> str:
    """An artifact's section: its name and paths, then its digest's body."""
    first = same[0]
    paths = f"<code>{esc(first.path)}</code>"
    if len(same) > 1:
        paths += f" (and {len(same) - 1:,} more paths with the same bytes)"
    if kind == "wgt":
        name = first.artifact or first.path.rsplit("/", 1)[0]
        model = f"model <b>{esc(digest.model)}</b> " if digest.model else ""
        head = f'<span class="tag">wgt</span></h3><p>{model}from {paths}</p>'
    else:
        name = first.artifact or first.path
        head = f'<span class="tag">paw</span></h3><p>bundle {paths}</p>'
    return f'<section class="artifact"><h3 class="mono">{esc(name)} {head}{digest.body}</section>'


# -- what the pages keep

K = TypeVar("K")
V = TypeVar("V")


class _Lru(Generic[K, V]):
    """Values by key, newest use last, within ``count`` entries and ``size`` bytes (as
    ``weigh`` counts them); a value over ``size`` alone is not kept."""

    def __init__(self, count: int, size: int, weigh: Callable[[V], int]) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._count, self._size, self._weigh, self._held = count, size, weigh, 0

    def get(self, key: K) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: K, value: V) -> None:
        weight = self._weigh(value)
        if weight > self._size:
            return
        with self._lock:
            old = self._items.pop(key, None)
            self._held += weight - (old[1] if old else 0)
            self._items[key] = (value, weight)
            while len(self._items) > self._count or self._held > self._size:
                _, (_, w) = self._items.popitem(last=False)
                self._held -= w


class PageCache:
    """What one app's version pages keep: rendered public pages by ``(module, version,
    tag of the revoked keys)`` (versions never change; the list of revoked signing keys
    may), and artifact digests by kind and blob sha256
    (:mod:`registry.artifactview`), each bounded in entries and bytes.

    Anyone can evict pages, by reading :data:`_CACHE_PAGES` other versions; that costs
    a page a render from the digests kept, never the reading of its manifests again. Only
    one render of a page runs at a time: readers that come meanwhile wait for it.
    """

    def __init__(self, pages: int = _CACHE_PAGES, digests: int = _CACHE_DIGESTS) -> None:
        self.pages: _Lru[tuple[str, str, str], str] = _Lru(pages, _CACHE_PAGE_BYTES, len)
        self.digests: _Lru[str, Digest] = _Lru(digests, _CACHE_DIGEST_BYTES, Digest.weight)
        #: held while a page renders (one render of one page at a time)
        self.rendering: KeyedLocks[tuple[str, str, str]] = KeyedLocks()


# -- HTTP


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


def _version_page(
    reg: Registry, cache: PageCache, module: str, version: str, token: TokenRecord | None
) -> tuple[str, bool]:
    """The version's page and whether it is public (kept, and sent as cacheable). A page
    is kept per state of the revoked keys (its signature line shows it)."""
    key = (module, version, reg.revocations()[0])
    page = cache.pages.get(key)
    if page is not None:
        return page, True
    with cache.rendering.hold(key):
        page = cache.pages.get(key)
        if page is not None:
            return page, True
        page = render_version(reg, module, version, token, cache)
        rec = reg.meta.get_module(module)
        if rec is not None and not rec.private:
            cache.pages.put(key, page)
            return page, True
    return page, False


async def _module_page(request: Request) -> Response:
    reg: Registry = request.app.state.registry
    token = await _token(request, reg)
    module, version = _split(request.path_params["path"])
    if version is None:
        page = await run_in_threadpool(render_module, reg, module, token)
        return _html(page, "no-cache" if token is None else "private, no-cache")
    cache: PageCache = request.app.state.web_pages
    page, public = await run_in_threadpool(_version_page, reg, cache, module, version, token)
    return _html(page, "public, max-age=300" if public else "private, no-cache")


def routes() -> list[BaseRoute]:
    """The page routes; the app sets ``app.state.web_pages`` (:func:`new_page_cache`)."""
    return [
        Route("/", _home, methods=["GET", "HEAD"]),
        Route(PREFIX + "{path:path}", _module_page, methods=["GET", "HEAD"]),
    ]


def new_page_cache() -> PageCache:
    """The page cache of one app."""
    return PageCache()
