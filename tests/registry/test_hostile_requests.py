"""The registry under hostile requests: a Hypothesis-driven fuzzer over every route.

One ``wgtpm registry serve`` process (a real uvicorn, its log in a file, its
memory read from ``/proc``) hosts a public module, private modules holding
secret byte strings (``example.com/Acme/secret``, ``hf.co/team/secret`` for
the Hub routes, ``github.com/Acme/secret``), public ``hf.co`` modules, an
open upload session, and proxies what it does not host from a loopback proxy
tree (``example.org/up/tiny``; and ``github.com/acme/secret``, the private
module as GitHub, case-insensitive and read with the server's credentials,
would serve it under a case variant of its name). Tokens: publish
(``example.com``), read (the private module), ``hf.co/team``,
``github.com/Acme``, and another tenant's (``example.net/tenant``).

Hypothesis builds requests to every route of ``registry/app.py`` (the proxy
protocol, the web pages, the checksum database, the Hub API, the publishing
API, ``/healthz``) from valid and hostile path segments (``..``, ``%00``,
``%0D%0A``, case variants of escaped paths, ``v1.0.0%0A``, unicode, very
long), hostile headers (``Host``, ``Authorization`` with junk, a wrong token,
another tenant's token, ``Range``, ``If-None-Match``, ``X-Forwarded-*``),
bodies (malformed and deeply nested JSON, wrong shapes, binary) and HTTP
framing (``Content-Length`` lies, ``Transfer-Encoding``, pipelining, NUL and
bare LF in headers), sent as raw bytes (:mod:`.hostile_requests`). Tables
then send every hostile piece at least once (the fuzzer samples), and
scenarios play what takes several requests: a tenant naming another
module's blob by hash in its index, a version page asked first with a planted
``Host``, bodies over the limit, malformed versions at upload.

Every answer is checked (:class:`~.hostile_requests.Findings`):

- no 500, and no 5xx but the documented 502 (the upstream failed) and 503
  (a store is down): a 500 is a request the code did not expect;
- an answer arrives, whole (no connection dropped mid-way), within 10 s;
- no ``Traceback`` in the server's log while the request was served;
- no token string (or its secret) in any answer, to anyone;
- nothing of a private module (its secret bytes, file names, sha256s, h1,
  Hub commit) in an answer to a request whose token may not read it, unless
  the request carried that string itself (an echo is no leak), and no 2xx or
  3xx for a URL naming a private module;
- a string planted by the fuzzer (``zq-probe``) only in answers to requests
  that carried it (else a cache served one client's input to another), and
  never as raw markup in HTML.

After each test: the server is alive, ``/healthz`` answers 200, and its peak
resident memory grew by at most :data:`MAX_GROWTH` over the baseline measured
after setup.

Failures are collected, not raised one by one: each distinct failure (what
failed, on which route, with which status, raising which exception in the
server) is reported once, with the
shortest request that shows it (its bytes), the answer and the server's log
lines. The runs are derandomized and bounded, so CI sends the same requests
each time, in about a minute on two cores.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from registry import limits
from tests.servers import Fault
from tests.servers.proxytree import ProxyTreeServer
from wgtpm.index import IndexEntry, build_index
from wgtpm.proxytree import ProxyTree

from .helpers import h1, index_bytes, publish
from .hostile_requests import LOG_SETTLE, Findings, Private, ServerProcess, Wire, server_env

MAX_GROWTH = 256 << 20  # peak resident bytes the server may gain over its baseline in a test
SECRET = b"PRIVATE-SECRET-7f3a9c\x00\xff-bytes"  # in the private module's file
HF_SECRET = b'{"hf_secret": "HF-SECRET-b91e"}\n'

PUB = "example.com/pub/m"
PUB_FILES = {
    "wgt.mod": b"module example.com/pub/m\nwgt 0.1\n",
    "w/a.bin": b"public weights\n" * 4,
    "w/manifest.json": b'{"layers": 1}\n',
}
PRIV = "example.com/Acme/secret"  # escaped: example.com/!acme/secret
PRIV_FILES = {
    "wgt.mod": b"module example.com/Acme/secret\nwgt 0.1\n",
    "s/hidden-kq7m.bin": SECRET,
    "s/notes-kq7m.txt": b"private notes\n",
}
HF_PRIV = "hf.co/team/secret"
HF_PRIV_FILES = {
    "wgt.mod": b"module hf.co/team/secret\nwgt 0.1\n",
    "config.json": HF_SECRET,
    "hidden-b91e.safetensors": b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ",
}
HF_PUB = "hf.co/team/open"
HF_PUB_FILES = {"wgt.mod": b"module hf.co/team/open\nwgt 0.1\n", "config.json": b'{"a": 1}\n'}
HF_PAGE = "hf.co/team/page"  # no strategy names it: its version page is first asked for below
HF_PAGE_FILES = {"wgt.mod": b"module hf.co/team/page\nwgt 0.1\n", "config.json": b"{}\n"}
GH_PRIV = "github.com/Acme/secret"  # hosted here, private; the upstream has a case variant
GH_SECRET = b"GH-PRIVATE-5d0e"
GH_FILES = {"wgt.mod": b"module github.com/Acme/secret\nwgt 0.1\n", "gh-5d0e.bin": GH_SECRET}
#: The private repository as GitHub (case-insensitive, read with the server's credentials)
#: would serve it under a case variant of its name: the upstream proxy tree has it so.
GH_VARIANT = "github.com/acme/secret"
GH_VARIANT_FILES = {
    "wgt.mod": b"module github.com/acme/secret\nwgt 0.1\n",
    "gh-5d0e.bin": GH_SECRET,
}
UP = "example.org/up/tiny"  # under no token's prefix: proxied from the proxy tree
UP_FILES = {"wgt.mod": b"module example.org/up/tiny\nwgt 0.1\n", "tiny/weights.bin": b"\x01" * 64}
TENANT = "example.net/tenant"  # another publisher's namespace
PENDING = "example.com/pub/pending"  # an upload session left open
PENDING_FILES = {"wgt.mod": b"module example.com/pub/pending\nwgt 0.1\n", "big.bin": b"z" * 1000}


# -- the registry


@dataclass
class Hosted:
    """The running registry and what it holds."""

    server: ServerProcess
    tokens: dict[str, str]  # name -> token text: publish, read, hf, tenant
    private: list[Private]
    upload_id: str  # PENDING's open upload
    baseline_peak: int  # VmHWM after setup
    upstream: ProxyTreeServer  # the caching proxy's upstream (faults may be added)

    def findings(self) -> Findings:
        return Findings(self.server, self.tokens, self.private)


def _make_tokens(data: Path) -> dict[str, str]:
    """The tokens, written to the database before the server opens it."""
    from registry.metadata import open_metadata_store
    from registry.service import create_token

    data.mkdir(parents=True)
    meta = open_metadata_store(f"sqlite:///{data / 'registry.db'}")
    try:
        grants = {
            "publish": ("example.com", "publish"),
            "read": (PRIV, "read"),
            "hf": ("hf.co/team", "publish"),
            "tenant": (TENANT, "publish"),
            "gh": ("github.com/Acme", "publish"),
        }
        return {name: create_token(meta, *grant)[0] for name, grant in grants.items()}
    finally:
        meta.close()


def _sha(b: bytes) -> bytes:
    return hashlib.sha256(b).hexdigest().encode()


def _setup(server: ServerProcess, tokens: dict[str, str]) -> tuple[list[Private], str]:
    """Publish the modules, open the pending upload, warm the caches; the private markers."""
    with httpx.Client(base_url=server.url, timeout=30) as c:
        for tok, module, files, private in [
            ("publish", PUB, PUB_FILES, False),
            ("publish", PRIV, PRIV_FILES, True),
            ("hf", HF_PRIV, HF_PRIV_FILES, True),
            ("hf", HF_PUB, HF_PUB_FILES, False),
            ("hf", HF_PAGE, HF_PAGE_FILES, False),
            ("gh", GH_PRIV, GH_FILES, True),
        ]:
            r = publish(c, tokens[tok], module, "v1.0.0", files, private=private)
            assert r.status_code == 201, r.text
        auth = {"Authorization": f"Bearer {tokens['publish']}"}
        body = {
            "module": PENDING,
            "version": "v1.0.0",
            "index": index_bytes(PENDING, "v1.0.0", PENDING_FILES).decode(),
        }
        r = c.post("/api/v1/uploads", json=body, headers=auth)
        assert r.status_code == 201, r.text
        upload_id = r.json()["upload"]
        hub = c.get("/api/models/team/secret", headers={"Authorization": f"Bearer {tokens['hf']}"})
        assert hub.status_code == 200, hub.text
        # the fast path remembers these: later hostile requests to them take it
        for path in ["/example.com/pub/m/@v/v1.0.0/w/a.bin", "/example.com/pub/m/@v/v1.0.0.mod"]:
            assert c.get(path).status_code == 200
        assert c.get(f"/{UP}/@v/v0.1.0/tiny/weights.bin").content == UP_FILES["tiny/weights.bin"]
        assert c.get("/-/module/example.com/pub/m/@v/v1.0.0").status_code == 200
    secret_files = {k: v for k, v in PRIV_FILES.items() if k != "wgt.mod"}
    hf_files = {k: v for k, v in HF_PRIV_FILES.items() if k != "wgt.mod"}
    private = [
        Private(
            PRIV,
            (
                SECRET,
                b"kq7m",  # in both file names
                *(_sha(b) for b in secret_files.values()),
                h1(PRIV_FILES).encode(),
                _sha(index_bytes(PRIV, "v1.0.0", PRIV_FILES)),
            ),
            frozenset({"publish", "read"}),
            ("example.com/acme/secret",),
        ),
        Private(
            HF_PRIV,
            (
                b"HF-SECRET-b91e",
                b"b91e",
                *(_sha(b) for b in hf_files.values()),
                h1(HF_PRIV_FILES).encode(),
                hub.json()["sha"].encode(),  # the commit the Hub API made up for it
            ),
            frozenset({"hf"}),
            ("hf.co/team/secret", "models/team/secret", "/team/secret/resolve/"),
        ),
        Private(
            GH_PRIV,
            (GH_SECRET, b"5d0e", _sha(GH_SECRET), h1(GH_FILES).encode()),
            frozenset({"gh"}),
            ("github.com/acme/secret",),
        ),
    ]
    return private, upload_id


@pytest.fixture(scope="module")
def hosted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosted]:
    tmp = tmp_path_factory.mktemp("hostile")
    tree = ProxyTree(tmp / "tree")
    tree.add(UP, "v0.1.0", UP_FILES, time="2026-11-01T00:00:00Z")
    tree.add(GH_VARIANT, "v1.0.0", GH_VARIANT_FILES, time="2026-11-01T00:00:00Z")
    with ProxyTreeServer(tree.root) as upstream:
        data = tmp / "reg"
        tokens = _make_tokens(data)
        flags = ["--sumdb-name", "sum.test", "--upstream", upstream.url]
        server = ServerProcess(data, flags, server_env())
        try:
            private, upload_id = _setup(server, tokens)
            yield Hosted(server, tokens, private, upload_id, server.memory()[1], upstream)
        finally:
            server.stop()


def _fuzz(n: int) -> settings:
    """``n`` examples, the same ones every run, no shrinking (failures are collected, and
    the shortest case of each kind is kept instead), no example database on disk."""
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


def _run(hosted: Hosted, n: int, wires: st.SearchStrategy[Wire]) -> Findings:
    """Send ``n`` generated requests; then check the server survived; fail with every
    distinct finding."""
    found = hosted.findings()

    @_fuzz(n)
    @given(wires)
    def one(wire: Wire) -> None:
        found.send(wire)

    one()
    _assert_clean(hosted, found)
    return found


def _assert_clean(hosted: Hosted, found: Findings) -> None:
    server = hosted.server
    problems = [found.report()] if found.failures else []
    if not server.alive():
        problems.append(f"the server died:\n{server.log_text()[-3000:]}")
    else:
        try:
            health = httpx.get(f"{server.url}/healthz", timeout=10)
            if health.status_code != 200:
                problems.append(f"/healthz answers {health.status_code}: {health.text}")
        except httpx.HTTPError as exc:
            problems.append(f"/healthz does not answer: {exc!r}")
        now, peak = server.memory()
        if peak > hosted.baseline_peak + MAX_GROWTH:
            problems.append(
                f"memory: peak resident {peak >> 20} MiB (now {now >> 20} MiB), over the "
                f"baseline {hosted.baseline_peak >> 20} MiB + {MAX_GROWTH >> 20} MiB"
            )
    assert not problems, f"{found.sent} requests sent; findings:\n\n" + "\n\n".join(problems)


# -- strategies: pieces


_HOSTILE_SEGMENTS = [
    "..", ".", "%2e%2e", "%2E%2E/%2E%2E", "%00", "%0D%0A", "%0A", "%ff", "%2F", "%25", "%",
    "!", "!!", "!A", "!0", "é", "%C3%A9", "\u202e", "\ufeff", "<zq-probe>", "%3Czq-probe%3E",
    "x" * 300, "y" * 5000, ";", "@v", "@latest", "@v/list", "-", "*", "~", "%20", "a b", "\t",
]  # fmt: skip

_MODULES = [
    PUB, "example.com/!acme/secret", "example.com/acme/secret", "example.com/Acme/secret",
    "example.com/!a!c!m!e/secret", "example.com/%21acme/secret", "example.com/!acme/!secret",
    "hf.co/team/secret", "hf.co/!team/secret", "hf.co/team/open", UP, "example.org/up/!tiny",
    f"{TENANT}/m0", "evil.example/x", "", "example.com", "EXAMPLE.com/pub/m",
    "example.com/pub/m/", "example.com//pub/m", "/example.com/pub/m", "example.com/pub/m/v2",
    PENDING, "localhost/x", "127.0.0.1/x", "example.com/../example.com/!acme/secret",
    "github.com/!acme/secret", "github.com/acme/secret", "github.com/!a!c!m!e/secret",
    "github.com/acme/!secret",
]  # fmt: skip

_VERSIONS = [
    "v1.0.0", "v0.1.0", "v1.0.0%0A", "v1.0.0%0D%0A", "v1.0.0%00", "v1.0.0%20", "V1.0.0",
    "!v1.0.0", "v1.0.0-!r!c.1", "v1.0.0-RC.1", "v1.0.0+meta", "v0.0.0-20260101000000-abcdef123456",
    "latest", "main", "..", "v1", "v1.0", "v2.0.0", "v99999999999999999999.0.0", "v1.0." + "0" * 300,
    "%2e%2e", "v1.0.0/../v1.0.0", "v1.0.0.info", "",
]  # fmt: skip

_FILES = [
    "w/a.bin", "w/manifest.json", "wgt.mod", "config.json", "tiny/weights.bin", "big.bin",
    "s/hidden-kq7m.bin", "hidden-b91e.safetensors", "gh-5d0e.bin", "../../../../etc/passwd",
    "%2e%2e/%2e%2e/%2e%2e/etc/passwd", "w//a.bin", "w/./a.bin", "W/A.bin", "w/a.bin%00",
    "w/a.bin%0A", "a" * 2000, "", "/", "wgt.index.json", ".git/config", "w%2Fa.bin",
]  # fmt: skip

_REVISIONS = [
    "main", "v1.0.0", "v0.1.0", "0" * 40, "f" * 40, "abcdef1", "refs%2Fheads%2Fmain", "..",
    "v1.0.0%0A", "%00", "HEAD", "v1.0.0-!r!c.1", "v" + "9" * 500,
]  # fmt: skip

_REPOS = [
    ("team", "secret"), ("team", "open"), ("Team", "Secret"), ("team", "SECRET"),
    ("!team", "secret"), ("acme", "tiny"), ("up", "tiny"), ("..", ".."), ("team", "secret%00"),
    ("%2e%2e", "team"), ("team", "secret%2F..%2Fopen"),
]  # fmt: skip


def _text() -> st.SearchStrategy[str]:
    """A short random string, percent-encoded half the time."""
    raw = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
    return st.one_of(raw.map(lambda s: quote(s, safe="/!@")), raw)


def _segment(choices: list[str]) -> st.SearchStrategy[str]:
    """One of ``choices``, or a hostile segment, or one of ``choices`` with a hostile
    segment before, inside or after it."""
    known = st.sampled_from(choices)
    hostile = st.sampled_from(_HOSTILE_SEGMENTS) | _text()

    @st.composite
    def mutated(draw: st.DrawFn) -> str:
        base, bad = draw(known), draw(hostile)
        where = draw(st.sampled_from(["suffix", "prefix", "segment", "replace-char"]))
        if where == "suffix":
            return base + bad
        if where == "prefix":
            return bad + base
        if where == "segment":
            parts = base.split("/")
            parts.insert(draw(st.integers(0, len(parts))), bad)
            return "/".join(parts)
        if not base:
            return bad
        i = draw(st.integers(0, len(base) - 1))
        return base[:i] + bad + base[i + 1 :]

    return st.one_of(known, known, known, hostile, mutated())


_QUERY = st.sampled_from(
    ["", "", "", "?blobs=true&expand=siblings", "?recursive=true", "?a=%00", "?<zq-probe>",
     "?" + "q" * 3000, "?expand=" + "&expand=".join(["siblings"] * 50)]
)  # fmt: skip


@dataclass(frozen=True)
class Route:
    """A request line, its body, and the name of the route it targets."""

    name: str
    method: str
    target: str
    body: bytes = b""
    content_type: str | None = None


def _routes(body: st.SearchStrategy[bytes], upload_id: str) -> st.SearchStrategy[Route]:
    """A request to every route of the app, with hostile segments in it."""
    mod, ver, f = _segment(_MODULES), _segment(_VERSIONS), _segment(_FILES)
    rev = _segment(_REVISIONS)
    get = st.sampled_from(["GET", "GET", "GET", "HEAD"])
    odd = st.sampled_from(["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "FOO", "get"])
    method = st.one_of(get, get, get, odd)
    repo = st.sampled_from(_REPOS) | st.tuples(_segment(["team"]), _segment(["secret", "open"]))
    sumdb = st.sampled_from(["sum.test", "sum.test", "other", "SUM.test", "..", "<zq-probe>"])
    tile = st.sampled_from(
        ["tile/8/0/000", "tile/8/data/000", "tile/8/0/000.p/1", "tile/8/0/x001/000",
         "tile/8/99999999999999999999/000", "tile/8/-1/000", "tile/9/0/000", "tile/8/0/000.p/0",
         "tile/8/0/000.p/999", "tile/8/data/000.p/%00", "tile/" + "8/" * 200 + "0"]
    )  # fmt: skip
    uid = st.sampled_from([upload_id] * 4 + ["0" * 32, "x", "..", "%00", "<zq-probe>"]) | _text()
    pending_sha = _sha(PENDING_FILES["big.bin"]).decode()
    sha = st.sampled_from([pending_sha] * 3 + ["0" * 64, "A" * 64, "..", _sha(SECRET).decode()])
    sha = sha | _text()

    def r(
        name: str,
        fmt: Callable[..., str],
        *parts: st.SearchStrategy[Any],
        m: st.SearchStrategy[str] = method,
    ) -> st.SearchStrategy[Route]:
        """Route ``name``: ``fmt`` fills its path from ``parts``; a query and ``body`` added."""
        return st.builds(
            lambda meth, q, b, *xs: Route(name, meth, "/" + fmt(*xs).lstrip("/") + q, b),
            m,
            _QUERY,
            body,
            *parts,
        )

    post = st.sampled_from(["POST", "POST", "PUT", "GET"])
    put = st.sampled_from(["PUT", "PUT", "POST", "HEAD"])
    return st.one_of(
        r("protocol list", lambda m: f"{m}/@v/list", mod),
        r("protocol latest", lambda m: f"{m}/@latest", mod),
        r("protocol info", lambda m, v: f"{m}/@v/{v}.info", mod, ver),
        r("protocol mod", lambda m, v: f"{m}/@v/{v}.mod", mod, ver),
        r("protocol index", lambda m, v: f"{m}/@v/{v}.index.json", mod, ver),
        r("protocol file", lambda m, v, p: f"{m}/@v/{v}/{p}", mod, ver, f),
        r("web home", lambda: "/"),
        r("web module", lambda m: f"-/module/{m}", mod),
        r("web version", lambda m, v: f"-/module/{m}/@v/{v}", mod, ver),
        r("sumdb latest", lambda n: f"sumdb/{n}/latest", sumdb),
        r("sumdb supported", lambda n: f"sumdb/{n}/supported", sumdb),
        r("sumdb lookup", lambda n, m, v: f"sumdb/{n}/lookup/{m}@{v}", sumdb, mod, ver),
        r("sumdb tile", lambda n, t: f"sumdb/{n}/{t}", sumdb, tile),
        r("hub info", lambda o: f"api/models/{o[0]}/{o[1]}", repo),
        r("hub revision", lambda o, v: f"api/models/{o[0]}/{o[1]}/revision/{v}", repo, rev),
        r("hub refs", lambda o: f"api/models/{o[0]}/{o[1]}/refs", repo),
        r("hub tree", lambda o, v, p: f"api/models/{o[0]}/{o[1]}/tree/{v}/{p}", repo, rev, f),
        r(
            "hub paths-info",
            lambda o, v: f"api/models/{o[0]}/{o[1]}/paths-info/{v}",
            repo,
            rev,
            m=post,
        ),
        r("hub resolve", lambda o, v, p: f"{o[0]}/{o[1]}/resolve/{v}/{p}", repo, rev, f),
        r("api start", lambda: "api/v1/uploads", m=post),
        r("api upload", lambda u: f"api/v1/uploads/{u}", uid),
        r("api put sha256", lambda u, s: f"api/v1/uploads/{u}/files/{s}", uid, sha, m=put),
        r("api put path", lambda u, p: f"api/v1/uploads/{u}/paths/{p}", uid, f, m=put),
        r("api commit", lambda u: f"api/v1/uploads/{u}/commit", uid, m=post),
        r("healthz", lambda: "healthz"),
        r("any path", lambda x: x, _segment(["", "api", "api/v1", "sumdb", "-", "-/module"])),
    )


@dataclass(frozen=True)
class Auth:
    """An ``Authorization`` value and the token it presents (``None``: no usable one)."""

    value: str | None
    presents: str | None


def _auth_list(tokens: dict[str, str]) -> list[Auth]:
    """No ``Authorization`` (most often), junk, a wrong token, and each token as Bearer
    and as Basic."""

    def basic(user: str, tok: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{tok}".encode()).decode()

    good = [Auth(f"Bearer {t}", n) for n, t in tokens.items()]
    good += [Auth(basic("x", t), n) for n, t in tokens.items()]
    good += [Auth(f"bearer   {tokens['read']}  ", "read")]
    bad = [
        Auth("Bearer wgt_0123456789abcdef_" + "A" * 43, None),  # well-formed, unknown
        Auth(f"Bearer {tokens['read'][:-1]}B", None),  # the right id, a wrong secret
        Auth(f"Bearer {tokens['read']}x", None),
        Auth(f"Bearer {tokens['read'].upper()}", None),
        Auth("Bearer", None), Auth("Bearer ", None), Auth("Basic !!!", None),
        Auth("Basic " + base64.b64encode(b"nocolon").decode(), None),
        Auth("Basic " + base64.b64encode(b"\xff\xfe:\xff").decode(), None),
        Auth("Digest username=x", None), Auth("Bearer " + "a" * 10000, None),
        Auth("Bearer \u00e9\u202e", None), Auth("Bearer hf_abcdefghijklmnop", None),
        Auth(f"Bearer {tokens['read']}, Bearer {tokens['publish']}", None),
    ]  # fmt: skip
    return [Auth(None, None)] * 6 + bad + good


def _auths(tokens: dict[str, str]) -> st.SearchStrategy[Auth]:
    return st.sampled_from(_auth_list(tokens))


HOSTILE_HEADERS = [
        ("Host", "zq-probe.invalid"), ("Host", "<zq-probe>"), ("Host", ""), ("Host", "a" * 300),
        ("Host", "127.0.0.1:99999"), ("Host", "zq-probe.invalid:80\"><b>x"), ("Host", "[::1"),
        ("Range", "bytes=0-0"), ("Range", "bytes=-1"), ("Range", "bytes=5-1"), ("Range", "bytes=0-"),
        ("Range", "bytes=-0"), ("Range", "bytes=99999999999999999999-"), ("Range", "bytes=0-1,2-3"),
        ("Range", "items=0-1"), ("Range", "bytes=--1"), ("Range", "bytes=0-18446744073709551616"),
        ("Range", "bytes=" + "0" * 5000 + "-1"), ("If-Range", '"x"'), ("If-Range", "*"),
        ("If-None-Match", "*"), ("If-None-Match", '"x"'), ("If-None-Match", 'W/"x", "y"'),
        ("If-None-Match", '"' * 101), ("If-None-Match", ""),
        ("If-None-Match", f'"{_sha(SECRET).decode()}"'),
        ("If-None-Match", f'"{_sha(PUB_FILES["w/a.bin"]).decode()}"'),
        ("X-Forwarded-For", "zq-probe"), ("X-Forwarded-Proto", "javascript"),
        ("X-Forwarded-Host", "zq-probe.invalid"), ("Forwarded", "host=zq-probe.invalid"),
        ("Accept-Encoding", "gzip, br"), ("Cookie", "a=b; " * 100), ("Expect", "100-continue"),
        ("User-Agent", "<zq-probe>\u00e9"), ("Content-Type", "application/json"),
        ("Content-Type", "application/x-www-form-urlencoded"), ("Content-Type", "text/plain"),
        ("Content-Type", "application/json; charset=utf-16"), ("Accept", "*/*;q=x"),
        ("X-Error-Message", "x"), ("Connection", "keep-alive, Upgrade"), ("Upgrade", "websocket"),
]  # fmt: skip
_HEADERS = st.sampled_from(HOSTILE_HEADERS)


def _json_values() -> st.SearchStrategy[object]:
    leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    return st.recursive(
        leaf,
        lambda kids: (
            st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
        ),
        max_leaves=12,
    )


FIXED_BODIES = [
    b"", b"{", b'{"module":', b"[" * 5000, b'{"a":' * 3000, b"\xff\xfe\x00", b"t\xc0", b"NaN",
    b'"\\ud800"', b'{"module": "\\ud800"}', b"1e999999", b"null", b"[]", b"{}", b'{"paths": 5}',
    b'{"paths": [1, {"a": 2}, null]}', b'{"paths": "config.json"}', b'{"paths": {"a": 1}}',
    b'{"paths": ["config.json", "hidden-b91e.safetensors"], "expand": true}',
    b"paths=config.json&paths=%00&expand=1", b"paths=%ff%fe", b"\x00" * 1000,
    b'{"module": "example.com/pub/m", "version": "v1.0.0\\n", "index": "{}"}',
    b'{"module": 5, "version": [], "index": 7, "private": "yes"}',
    b'{"module": "example.com/pub/m", "version": "v9.0.0", "index": {"a": {"b": [[[[[]]]]]}}}',
    b'{"h1": 5}', b'{"h1": "h1:' + b"A" * 5000 + b'"}',
]  # fmt: skip
LARGE_BODIES: list[Callable[[], bytes]] = [  # built when drawn: a strategy's repr stays short
    lambda: b"paths=" + b"x" * 100_000,
    lambda: json.dumps({"index": {"a": [1] * 10_000}}).encode(),
    lambda: json.dumps({"paths": ["config.json"] * 20_000}).encode(),
    lambda: b"x" * (1 << 20),
]


def _bodies(tokens: dict[str, str]) -> st.SearchStrategy[bytes]:
    """Request bodies: empty, malformed JSON, wrong shapes, forms, binary, large-ish."""
    start_docs = st.fixed_dictionaries(
        {},
        optional={
            "module": st.sampled_from([PUB, PRIV, f"{TENANT}/m", "example.com/pub/m\n", "x", ""])
            | _json_values(),
            "version": st.sampled_from(["v1.0.0", "v1.0.0\n", "v2.0.0", "V1", ""]) | _json_values(),
            "index": st.sampled_from(
                [index_bytes(PUB, "v1.0.0", PUB_FILES).decode(), "{}", "[]", "", "\x00"]
            )
            | _json_values(),
            "private": _json_values(),
            "h1": st.sampled_from(["h1:", "h1:" + "A" * 44, h1(PUB_FILES)]) | _json_values(),
            "paths": _json_values(),
        },
    ).map(lambda d: json.dumps(d).encode())
    fixed = st.sampled_from(FIXED_BODIES)
    large = st.sampled_from(LARGE_BODIES).map(lambda make: make())  # a short repr
    return st.one_of(
        fixed,
        large,
        start_docs,
        _json_values().map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=2000),
    )


@st.composite
def _wires(
    draw: st.DrawFn,
    tokens: dict[str, str],
    routes: st.SearchStrategy[Route],
    auths: st.SearchStrategy[Auth] | None = None,
) -> Wire:
    route = draw(routes)
    auth = draw(_auths(tokens) if auths is None else auths)
    headers = list(draw(st.lists(_HEADERS, max_size=4, unique_by=lambda h: h[0].lower())))
    if route.content_type is not None:
        headers = [h for h in headers if h[0] != "Content-Type"]
        headers.append(("Content-Type", route.content_type))
    if auth.value is not None:
        headers.append(("Authorization", auth.value))
    body = route.body if route.method not in ("GET", "HEAD") or draw(st.booleans()) else b""
    return Wire(route.name, route.method, route.target, tuple(headers), body, auth.presents)


def _body_routes(tokens: dict[str, str], upload_id: str) -> st.SearchStrategy[Route]:
    """The routes that read a body, reached with mostly valid paths so the body is read."""
    body = _bodies(tokens)
    ctype = st.sampled_from(
        [
            None,
            "application/json",
            "application/json",
            "application/x-www-form-urlencoded",
            "text/plain",
            "application/json; charset=latin-1",
            "multipart/form-data; boundary=x",
        ]
    )
    repo = st.sampled_from([("team", "open"), ("team", "secret"), ("acme", "tiny")])
    rev = st.sampled_from(["main", "v1.0.0"]) | _segment(_REVISIONS)
    uid = st.sampled_from([upload_id, upload_id, "0" * 32])
    pending_sha = _sha(PENDING_FILES["big.bin"]).decode()
    sha = st.sampled_from([pending_sha, pending_sha, _sha(SECRET).decode(), "0" * 64])
    path = st.sampled_from(["big.bin", "big.bin", "wgt.mod", "../big.bin", "nope"])
    post = st.sampled_from(["POST", "POST", "POST", "PUT"])
    return st.one_of(
        st.builds(
            lambda o, v, b, c: Route(
                "hub paths-info", "POST", f"/api/models/{o[0]}/{o[1]}/paths-info/{v}", b, c
            ),
            repo,
            rev,
            body,
            ctype,
        ),
        st.builds(
            lambda m, b, c: Route("api start", m, "/api/v1/uploads", b, c), post, body, ctype
        ),
        st.builds(
            lambda u, b, c: Route("api commit", "POST", f"/api/v1/uploads/{u}/commit", b, c),
            uid,
            body,
            ctype,
        ),
        st.builds(
            lambda u, h, b: Route("api put sha256", "PUT", f"/api/v1/uploads/{u}/files/{h}", b),
            uid,
            sha,
            body | st.binary(min_size=990, max_size=1010),
        ),
        st.builds(
            lambda u, p, b: Route("api put path", "PUT", f"/api/v1/uploads/{u}/paths/{p}", b),
            uid,
            path,
            body | st.binary(min_size=990, max_size=1010),
        ),
    )


def _body_auths(tokens: dict[str, str]) -> st.SearchStrategy[Auth]:
    """Mostly a valid token, so the body is read past the check of the token."""
    valid = [Auth(f"Bearer {t}", n) for n, t in tokens.items()]
    return st.sampled_from(valid * 2) | _auths(tokens)


# -- the tests


def test_every_route_with_hostile_paths_and_headers(hosted: Hosted) -> None:
    """GET/HEAD (and other methods) to every route: hostile segments and headers."""
    routes = _routes(st.just(b"") | st.binary(max_size=64), hosted.upload_id)
    _run(hosted, 800, _wires(hosted.tokens, routes))


def test_bodies_to_the_routes_that_read_them(hosted: Hosted) -> None:
    """Malformed, mis-shaped and large-ish bodies where a body is read: the publishing API
    and the Hub's paths-info."""
    routes = _body_routes(hosted.tokens, hosted.upload_id)
    _run(hosted, 250, _wires(hosted.tokens, routes, _body_auths(hosted.tokens)))


def test_bodies_to_every_route(hosted: Hosted) -> None:
    """Bodies (and methods) where none is expected: they are refused or ignored."""
    _run(hosted, 100, _wires(hosted.tokens, _routes(_bodies(hosted.tokens), hosted.upload_id)))


# -- tables: every hostile piece at least once (the fuzzer above samples; these do not)


_SLOTS: dict[str, Callable[[str], str]] = {  # a route with one slot for a hostile piece
    "protocol list": lambda x: f"/{x}/@v/list",
    "protocol latest": lambda x: f"/{x}/@latest",
    "protocol info": lambda x: f"/example.com/pub/m/@v/{x}.info",
    "protocol mod": lambda x: f"/example.com/!acme/secret/@v/{x}.mod",
    "protocol file": lambda x: f"/example.com/pub/m/@v/v1.0.0/{x}",
    "protocol private file": lambda x: f"/example.com/!acme/secret/@v/v1.0.0/{x}",
    "protocol proxied file": lambda x: f"/{UP}/@v/v0.1.0/{x}",
    "web version": lambda x: f"/-/module/example.com/pub/m/@v/{x}",
    "web module": lambda x: f"/-/module/{x}",
    "sumdb lookup": lambda x: f"/sumdb/sum.test/lookup/example.com/pub/m@{x}",
    "sumdb tile": lambda x: f"/sumdb/sum.test/tile/8/0/{x}",
    "hub revision": lambda x: f"/api/models/team/open/revision/{x}",
    "hub tree": lambda x: f"/api/models/team/open/tree/main/{x}",
    "hub resolve": lambda x: f"/team/open/resolve/main/{x}",
    "hub resolve private": lambda x: f"/team/secret/resolve/{x}/config.json",
    "hub repo": lambda x: f"/api/models/team/{x}",
    "protocol case variant": lambda x: f"/{x}/@v/v1.0.0/gh-5d0e.bin",
    "api upload": lambda x: f"/api/v1/uploads/{x}",
}


def test_every_hostile_segment_in_every_slot(hosted: Hosted) -> None:
    """Each hostile segment (and case variant of a module) in each slot, GET, anonymous."""
    found = hosted.findings()
    pieces = _HOSTILE_SEGMENTS + [m for m in _MODULES if m != PUB] + _VERSIONS + _FILES
    for name, slot in _SLOTS.items():
        for piece in dict.fromkeys(pieces):
            found.send(Wire(name, "GET", slot(piece)))
    _assert_clean(hosted, found)


_TARGETS = {  # one URL per kind of answer, for the header and framing tables
    "fast path file": "/example.com/pub/m/@v/v1.0.0/w/a.bin",
    "private file": "/example.com/!acme/secret/@v/v1.0.0/s/hidden-kq7m.bin",
    "private index": "/example.com/!acme/secret/@v/v1.0.0.index.json",
    "proxied file": f"/{UP}/@v/v0.1.0/tiny/weights.bin",
    "web version": "/-/module/example.com/pub/m/@v/v1.0.0",
    "web private version": "/-/module/example.com/!acme/secret/@v/v1.0.0",
    "web home": "/",
    "sumdb latest": "/sumdb/sum.test/latest",
    "hub resolve": "/team/open/resolve/main/config.json",
    "hub private resolve": "/team/secret/resolve/main/config.json",
    "hub private info": "/api/models/team/secret?blobs=true",
    "healthz": "/healthz",
}


def test_every_hostile_header_on_every_kind_of_answer(hosted: Hosted) -> None:
    """Each hostile header, and each kind of ``Authorization``, on each kind of answer."""
    found = hosted.findings()
    auths = _auth_list(hosted.tokens)
    for name, target in _TARGETS.items():
        for method in ("GET", "HEAD"):
            for h in HOSTILE_HEADERS:
                found.send(Wire(name, method, target, (h,)))
        for auth in dict.fromkeys(auths):
            hs = () if auth.value is None else (("Authorization", auth.value),)
            found.send(Wire(name, "GET", target, hs, auth=auth.presents))
    _assert_clean(hosted, found)


def test_a_page_built_for_one_host_is_not_served_to_another(hosted: Hosted) -> None:
    """A page holding the URL the client reached (an ``hf.co`` version page's
    ``HF_ENDPOINT=...`` line) is asked for first with a planted ``Host``, then plainly:
    the second answer must not carry the first request's host (a poisoned cache)."""
    found = hosted.findings()
    version_page = f"/-/module/{HF_PAGE}/@v/v1.0.0"
    for target in (version_page, f"/-/module/{HF_PAGE}"):
        found.send(
            Wire("web hub page, planted host", "GET", target, (("Host", "zq-probe.invalid"),))
        )
        found.send(
            Wire(
                "web hub page after a planted host",
                "GET",
                target,
                context=f"GET {target} with Host: zq-probe.invalid",
            )
        )
    _assert_clean(hosted, found)


def _fixed_bodies() -> list[tuple[str, bytes]]:
    """Every fixed hostile body, with the content types a client may claim for it."""
    bodies = FIXED_BODIES + [make() for make in LARGE_BODIES]
    return [
        (c, b) for b in bodies for c in ("application/json", "application/x-www-form-urlencoded")
    ]


def test_every_hostile_body_on_every_route_that_reads_one(hosted: Hosted) -> None:
    """Each fixed hostile body to each route that reads a body, anonymous and with a token
    that may use the route."""
    found = hosted.findings()
    pending_sha = _sha(PENDING_FILES["big.bin"]).decode()
    routes = [
        ("hub paths-info", "POST", "/api/models/team/open/paths-info/main", "hf"),
        ("hub private paths-info", "POST", "/api/models/team/secret/paths-info/main", "hf"),
        ("api start", "POST", "/api/v1/uploads", "publish"),
        ("api commit", "POST", f"/api/v1/uploads/{hosted.upload_id}/commit", "publish"),
        (
            "api put sha256",
            "PUT",
            f"/api/v1/uploads/{hosted.upload_id}/files/{pending_sha}",
            "publish",
        ),
        ("api put path", "PUT", f"/api/v1/uploads/{hosted.upload_id}/paths/big.bin", "publish"),
    ]
    for name, method, target, tok in routes:
        for ctype, body in _fixed_bodies():
            for auth in (None, tok):
                hs = [("Content-Type", ctype)]
                if auth is not None:
                    hs.append(("Authorization", f"Bearer {hosted.tokens[auth]}"))
                found.send(Wire(name, method, target, tuple(hs), body, auth))
    _assert_clean(hosted, found)


# -- HTTP framing: the bytes themselves


def _raw(lines: list[str], body: bytes = b"", sep: str = "\r\n") -> bytes:
    return (sep.join(lines) + sep + sep).encode("utf-8", "surrogateescape") + body


def _framings(target: str) -> list[tuple[str, bytes, int, bool]]:
    """(name, bytes, answers asked for, half-close) for each framing abuse, on ``target``."""
    h = "Host: 127.0.0.1"
    c = "Connection: close"
    get = f"GET {target} HTTP/1.1"
    post = f"POST {target} HTTP/1.1"
    chunked = "Transfer-Encoding: chunked"
    one = [
        ("content-length short", _raw([post, h, "Content-Length: 2", c], b'{"a": 1}')),
        ("content-length junk", _raw([post, h, "Content-Length: abc", c], b"{}")),
        ("content-length negative", _raw([post, h, "Content-Length: -1", c], b"{}")),
        ("content-length plus", _raw([post, h, "Content-Length: +2", c], b"{}")),
        ("content-length huge", _raw([post, h, "Content-Length: 99999999999999999999999", c])),
        (
            "content-length twice",
            _raw([post, h, "Content-Length: 1", "Content-Length: 2", c], b"{}"),
        ),
        ("content-length list", _raw([post, h, "Content-Length: 2, 2", c], b"{}")),
        ("chunked", _raw([post, h, chunked, c], b"2\r\n{}\r\n0\r\n\r\n")),
        ("chunked bad size", _raw([post, h, chunked, c], b"zz\r\n{}\r\n0\r\n\r\n")),
        ("chunked bad end", _raw([post, h, chunked, c], b"2\r\n{}XX0\r\n\r\n")),
        (
            "chunked and length",
            _raw([post, h, chunked, "Content-Length: 3", c], b"2\r\n{}\r\n0\r\n\r\n"),
        ),
        ("transfer-encoding gzip", _raw([post, h, "Transfer-Encoding: gzip", c], b"{}")),
        (
            "transfer-encoding list",
            _raw([post, h, "Transfer-Encoding: chunked, identity", c], b"2\r\n{}\r\n0\r\n\r\n"),
        ),
        ("transfer-encoding xchunked", _raw([post, h, "Transfer-Encoding: xchunked", c], b"{}")),
        ("nul in header", _raw([get, h, "X-A: a\x00b", c])),
        ("control in header", _raw([get, h, "X-A: a\x01\x7fb", c])),
        ("bare lf", _raw([get, h, c], sep="\n")),
        ("bare cr", _raw([get, h, "X-A: a\rb", c])),
        ("obs fold", _raw([get, h, "X-A: a", " b", c])),
        ("space before colon", _raw([get, "Host : 127.0.0.1", c])),
        ("bad header name", _raw([get, h, "Bad Header: x", c])),
        ("long header", _raw([get, h, "X-Big: " + "a" * 100_000, c])),
        ("many headers", _raw([get, h, *(f"X-{i}: {i}" for i in range(2000)), c])),
        ("no host", _raw([get, c])),
        ("two hosts", _raw([get, h, "Host: zq-probe.invalid", c])),
        ("http/1.0", _raw([f"GET {target} HTTP/1.0"])),
        ("http/9.9", _raw([f"GET {target} HTTP/9.9", h, c])),
        ("absolute form", _raw([f"GET http://zq-probe.invalid{target} HTTP/1.1", h, c])),
        ("asterisk", _raw(["OPTIONS * HTTP/1.1", h, c])),
        ("no slash", _raw([f"GET {target.lstrip('/')} HTTP/1.1", h, c])),
        ("lower-case method", _raw([f"get {target} HTTP/1.1", h, c])),
        ("unknown method", _raw([f"BREW {target} HTTP/1.1", h, c])),
        ("long target", _raw([f"GET {target}?{'a' * 100_000} HTTP/1.1", h, c])),
        ("raw utf-8 target", _raw([f"GET {target}\u00e9\u202e HTTP/1.1", h, c])),
        ("control in target", _raw([f"GET {target}\x01\x7f HTTP/1.1", h, c])),
        (
            "expect continue",
            _raw([post, h, "Expect: 100-continue", "Content-Length: 2", c], b"{}"),
        ),
        ("head with body", _raw([f"HEAD {target} HTTP/1.1", h, "Content-Length: 2", c], b"{}")),
        ("get with body", _raw([get, h, "Content-Length: 5", c], b"hello")),
        ("empty lines first", _raw(["", "", get, h, c])),
        ("tls hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64),
    ]
    out = [(name, data, 1, False) for name, data in one]
    out.append(("nothing but newlines", b"\r\n\r\n\r\n\r\n", 1, True))  # no request: no answer
    out.append(("content-length long", _raw([post, h, "Content-Length: 100", c], b"{}"), 1, True))
    out.append(
        ("chunked unfinished", _raw([post, h, chunked, c], b"ffffffffffffffffff\r\n{}"), 1, True)
    )
    # two requests on one connection: the second must get its own answer, never the first's
    # planted host (the fast path answers before the app sees it)
    two = _raw([get, "Host: zq-probe.invalid"]) + _raw([get, h, c])
    out.append(("pipelined", two, 2, False))
    out.append(
        (
            "pipelined after a body",
            _raw([post, h, "Content-Length: 2"], b"{}") + _raw([get, h, c]),
            2,
            False,
        )
    )
    return out


def test_every_framing_abuse_on_every_kind_of_answer(hosted: Hosted) -> None:
    """Lying lengths, broken chunking, bad header bytes, odd request lines, pipelining."""
    found = hosted.findings()
    for name, target in _TARGETS.items():
        for abuse, data, n, half in _framings(target):
            method = data.split(b" ", 1)[0].decode("latin-1") if b" " in data[:20] else "?"
            found.send(
                Wire(f"{abuse} ({name})", method, target, raw=data, requests=n, half_close=half)
            )
    _assert_clean(hosted, found)


@st.composite
def _garbage(draw: st.DrawFn) -> Wire:
    """A request line and headers of random text, or random bytes."""
    target = draw(st.sampled_from(list(_TARGETS.values())))
    if draw(st.booleans()):
        data = draw(st.binary(min_size=1, max_size=300)) + b"\r\n\r\n"
        # blank lines before a request are skipped (RFC 9112 2.2): with nothing else there is
        # no request, so nothing to answer; the client closes its side instead of waiting
        return Wire("random bytes", "?", target, raw=data, half_close=not data.strip())
    line = st.text(st.characters(codec="latin-1"), max_size=40)
    method = draw(st.sampled_from(["GET", "HEAD", "POST"]) | line)
    headers = draw(st.lists(st.tuples(line, line), max_size=6))
    lines = [f"{method} {target}{draw(line)} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines[1:1] = [f"{k}: {v}" for k, v in headers]
    return Wire("random header text", method, target, raw=_raw(lines).replace(b"\xff", b"x"))


def test_random_request_heads(hosted: Hosted) -> None:
    """Random bytes and random header text: a 4xx, never a 5xx or a dropped connection."""
    _run(hosted, 150, _garbage())


# -- another tenant's bytes


_PRIV_INDEX = index_bytes(PRIV, "v1.0.0", PRIV_FILES)
_CLAIMABLE = {  # (path, size, sha256) of blobs stored here that the tenant does not own
    "private file": ("s/hidden-kq7m.bin", len(SECRET), _sha(SECRET).decode()),
    "private hub file": ("config.json", len(HF_SECRET), _sha(HF_SECRET).decode()),
    "private index": ("idx.json", len(_PRIV_INDEX), _sha(_PRIV_INDEX).decode()),
    "public file": ("w/a.bin", len(PUB_FILES["w/a.bin"]), _sha(PUB_FILES["w/a.bin"]).decode()),
}


@dataclass(frozen=True)
class Claim:
    """A tenant's release: files it owns, and files named only by another blob's hash."""

    token: str
    own: dict[str, bytes]
    claimed: tuple[str, ...]  # keys of _CLAIMABLE
    by: str  # how missing files are uploaded: sha256 or path


_claims = st.builds(
    Claim,
    st.sampled_from(["tenant", "tenant", "tenant", "read", "hf"]),
    st.dictionaries(
        st.sampled_from(["a.bin", "b/c.txt", "d.json"]), st.binary(max_size=50), max_size=2
    ),
    st.lists(st.sampled_from(sorted(_CLAIMABLE)), min_size=1, max_size=2, unique=True),
    st.sampled_from(["sha256", "path"]),
)


def test_a_tenant_cannot_publish_its_way_to_anothers_bytes(hosted: Hosted) -> None:
    """A release whose index names a blob stored for another module, by its hash only, must
    not make those bytes readable: the uploader has to send them (it cannot: it never had
    them), or the release is refused. Each release is then read anonymously."""
    found = hosted.findings()
    count = iter(range(10_000))

    @_fuzz(40)
    @given(_claims)
    def one(claim: Claim) -> None:
        module, version = f"{TENANT}/m{next(count)}", "v1.0.0"
        own = {"wgt.mod": f"module {module}\nwgt 0.1\n".encode(), **claim.own}
        entries = [IndexEntry(p, len(b), hashlib.sha256(b).hexdigest()) for p, b in own.items()]
        entries += [IndexEntry(*_CLAIMABLE[k]) for k in claim.claimed]
        index = build_index(module, version, entries, time="2026-11-29T12:00:00Z").to_json()
        auth = (("Authorization", f"Bearer {hosted.tokens[claim.token]}"),)
        body = json.dumps({"module": module, "version": version, "index": index.decode()})
        what = f"{claim.token} token started {module}@{version} claiming {list(claim.claimed)}"
        start = found.send(
            Wire(
                "tenant start",
                "POST",
                "/api/v1/uploads",
                auth,
                body.encode(),
                claim.token,
                known=index,
            )
        )
        if not start or start[0].status != 201:
            return
        doc = json.loads(start[0].body)
        by_sha = {hashlib.sha256(b).hexdigest(): b for b in own.values()}
        for m in doc["missing"]:
            data = by_sha.get(m["sha256"])
            if data is None:
                continue  # a claimed blob: the tenant does not have its bytes
            url = (
                doc["files_url"] + m["sha256"]
                if claim.by == "sha256"
                else doc["paths_url"] + m["path"]
            )
            found.send(
                Wire("tenant put", "PUT", url, auth, data, claim.token, context=what, known=index)
            )
        found.send(
            Wire(
                "tenant commit",
                "POST",
                doc["commit_url"],
                auth,
                b"",
                claim.token,
                context=what,
                known=index,
            )
        )
        for k in claim.claimed:
            path = _CLAIMABLE[k][0]
            for target in [f"/{module}/@v/{version}/{path}", f"/{module}/@v/{version}.index.json"]:
                found.send(
                    Wire(
                        f"anonymous read of a claimed {k}",
                        "GET",
                        target,
                        context=f"{what}, then committed",
                        known=index,
                    )
                )

    one()
    _assert_clean(hosted, found)


# -- bodies over the limit


def _oversized(
    port: int, target: str, method: str, headers: list[str], size: int
) -> tuple[int | None, str]:
    """Send a ``size``-byte body (1 MiB at a time) until the server answers or takes it all;
    the status it answered (``None``: none) and how the exchange ended."""
    import socket

    head = [
        f"{method} {target} HTTP/1.1",
        "Host: 127.0.0.1",
        f"Content-Length: {size}",
        *headers,
        "Connection: close",
    ]
    chunk = b"x" * (1 << 20)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(_raw(head))
        sent, ended = 0, "the server took the whole body"
        sock.setblocking(False)
        while sent < size:
            try:
                if sock.recv(1, socket.MSG_PEEK):
                    ended = f"the server answered after {sent} bytes"
                    break
            except BlockingIOError:
                pass
            except OSError as exc:
                ended = f"reset after {sent} bytes: {exc}"
                break
            try:
                sock.setblocking(True)
                sock.settimeout(30)
                sent += sock.send(chunk[: size - sent])
                sock.setblocking(False)
            except OSError as exc:
                ended = f"the server stopped reading after {sent} bytes: {exc}"
                break
        sock.setblocking(True)
        sock.settimeout(30)
        data = b""
        try:
            while not data.endswith(b"\r\n\r\n") and b"\r\n\r\n" not in data:
                more = sock.recv(65536)
                if not more:
                    break
                data += more
        except OSError:
            pass
    status = data.split(b" ", 2)[1] if data.startswith(b"HTTP/") else b""
    return (int(status) if status.isdigit() else None), ended


def test_a_body_over_the_limit_is_refused(hosted: Hosted) -> None:
    """A JSON body over :data:`registry.limits.MAX_REQUEST_JSON` gets 413 on every route
    that reads one, and the publishing API refuses a request without a token (401) before
    it reads the body, never a 2xx or 5xx after buffering it all."""
    over = limits.MAX_REQUEST_JSON + (1 << 20)
    problems = []
    for name, target, tok, anonymous in [
        ("hub paths-info", "/api/models/team/open/paths-info/main", "hf", 413),
        ("api start", "/api/v1/uploads", "publish", 401),
        ("api commit", f"/api/v1/uploads/{hosted.upload_id}/commit", "publish", 401),
    ]:
        for auth, want in ((None, anonymous), (tok, 413)):
            hs = ["Content-Type: application/json"]
            if auth is not None:
                hs.append(f"Authorization: Bearer {hosted.tokens[auth]}")
            status, ended = _oversized(hosted.server.port, target, "POST", hs, over)
            if status != want:
                problems.append(
                    f"POST {target} ({name}), token {auth}, {over} bytes: status {status}, want {want}; {ended}"
                )
    found = hosted.findings()
    _assert_clean(hosted, found)
    assert not problems, "bodies over the limit were not refused:\n" + "\n".join(problems)


# -- versions


@st.composite
def _bad_versions(draw: st.DrawFn) -> str:
    """A valid version with a character no version may hold, at its end or inside it."""
    base = draw(st.sampled_from(["v1.0.0", "v1.2.3-rc.1", "v0.0.1+meta"]))
    bad = draw(st.sampled_from(["\n", "\r\n", "\r", "\x00", " ", "\t", "\u2028", "\x85", "\x1b"]))
    at = draw(st.sampled_from([len(base), 1, len(base) - 1]))
    return base[:at] + bad + base[at:]


def test_a_malformed_version_is_never_published(hosted: Hosted) -> None:
    """A version holding a newline, NUL, space or other control character (``v1.0.0\\n``)
    is refused when an upload starts: stored, it would split the ``@v/list`` and checksum
    log lines that hold it."""
    found = hosted.findings()
    count = iter(range(10_000))
    accepted = []

    @_fuzz(25)
    @given(_bad_versions())
    def one(version: str) -> None:
        module = f"{TENANT}/version{next(count)}"  # not /vN: a major version suffix
        files = {"wgt.mod": f"module {module}\nwgt 0.1\n".encode()}
        index = index_bytes(module, version, files)
        body = json.dumps({"module": module, "version": version, "index": index.decode()})
        auth = (("Authorization", f"Bearer {hosted.tokens['tenant']}"),)
        got = found.send(
            Wire("api start, bad version", "POST", "/api/v1/uploads", auth, body.encode(), "tenant")
        )
        if got and got[0].status < 300:
            accepted.append(f"{module}@{version!r}: {got[0].status} {got[0].body[:200]!r}")

    one()
    _assert_clean(hosted, found)
    assert not accepted, "uploads of malformed versions were started:\n" + "\n".join(accepted)


# -- the two findings of this suite that were fixed with it


def test_a_range_of_thousands_of_digits_is_read_not_a_500(hosted: Hosted) -> None:
    """``Range: bytes=000...0-1`` (5,000 zeros) is ``bytes=0-1``; a position of thousands of
    significant digits is past the end. Python refuses to read over 4,300 digits as an
    int, which was a 500 and a traceback (registry/protocol.py, MAX_RANGE_DIGITS)."""
    url = f"{hosted.server.url}/example.com/pub/m/@v/v1.0.0/w/a.bin"
    body = PUB_FILES["w/a.bin"]
    for rng, status, want in [
        ("bytes=" + "0" * 5000 + "-1", 206, body[:2]),
        ("bytes=1" + "0" * 5000 + "-", 416, b""),
        ("bytes=0-1" + "0" * 5000, 206, body),
        ("bytes=-" + "9" * 5000, 206, body),
    ]:
        r = httpx.get(url, headers={"Range": rng}, timeout=10)
        assert (r.status_code, r.content) == (status, want), (rng[:20], r.status_code, r.text)
    r = httpx.get(
        f"{hosted.server.url}/team/open/resolve/main/config.json",
        headers={"Range": "bytes=" + "0" * 5000 + "-0"},
        timeout=10,
    )
    assert (r.status_code, r.content) == (206, b"{"), r.text


def test_an_upstream_failure_is_a_502_and_one_log_line(hosted: Hosted) -> None:
    """Any client can make the caching proxy ask its upstream for a module; the upstream's
    failure is a 502 whose log line says what failed, without a traceback (registry/app.py)."""
    module = "example.org/up/down"
    hosted.upstream.faults.add(Fault.error(f"/{module}/@v/list", 500))
    start = hosted.server.log_size()
    r = httpx.get(f"{hosted.server.url}/{module}/@v/list", timeout=30)
    assert r.status_code == 502 and "upstream" in r.text, r.text
    time.sleep(LOG_SETTLE)
    said = hosted.server.log_text(start)
    assert f"GET /{module}/@v/list: upstream" in said and "Traceback" not in said, said
