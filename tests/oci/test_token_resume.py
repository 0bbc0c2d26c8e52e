"""A download cut and resumed after its registry token expired goes on with a fresh token in
the same ``wgtpm get`` (the source's ``refresh``), whole-file and as parallel ranges; a
second ``401`` in a row ends it in one line; a source without ``refresh`` is retried as
after any other failure."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.servers import Request, Response
from wgtpm._errors import FetchError
from wgtpm.index import IndexEntry
from wgtpm.modfetch import _transfer
from wgtpm.modfetch._options import FetchOptions
from wgtpm.modfetch._unit import VersionFile
from wgtpm.sources import FileRequest

from .conftest import PASSWORD, SERVICE, OciRegistry
from .helpers import docker_login, push_release
from .test_source_get import _Relay, cache_root, modtext, one_line

PATH = "example.com/acme/expiring"


class _Expiring:
    """The registry's blob downloads as a token service that revokes a token mid-download:
    the first large blob answer is cut in half, and from then on each request of any blob
    with that token (``all_tokens``: of that blob with any token) is refused with ``401``
    and the registry's challenge."""

    def __init__(self, reg: OciRegistry, repo: str, all_tokens: bool = False) -> None:
        assert reg.token_server is not None
        self.challenge = (
            f'Bearer realm="{reg.token_server.url}/token",service="{SERVICE}",'
            f'scope="repository:{repo}:pull"'
        )
        self.all_tokens = all_tokens
        self.first: str | None = None
        self.cut = False
        self.blob = ""
        self.refused = 0
        self.served_after = 0  # blob answers with another token once the first was refused
        self._lock = threading.Lock()

    def edit(self, req: Request, resp: Response) -> Response:
        if "/blobs/" not in req.path or req.method != "GET":
            return resp
        tok = req.bearer()
        with self._lock:
            if not self.cut and resp.status in (200, 206) and len(resp.body) > 10_000:
                self.first, self.cut, self.blob = tok, True, req.path
                resp.body = resp.body[: len(resp.body) // 2]
                return resp
            if self.cut and (req.path == self.blob if self.all_tokens else tok == self.first):
                self.refused += 1
                body = b'{"errors":[{"code":"UNAUTHORIZED","message":"token expired"}]}'
                headers = {"WWW-Authenticate": self.challenge, "Content-Type": "application/json"}
                return Response(401, headers, body)
            if self.refused:
                self.served_after += 1
        return resp


@pytest.fixture
def expiring(
    oci_registry_token: OciRegistry,
    oci_namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Iterator[Callable[[bytes, bool], _Expiring]]:
    """Publishes ``PATH`` v1.0.0 with the given weights on the token registry and points
    WGTPROXY (and docker login's credentials) at a relay in front of it."""
    made: list[_Relay] = []

    def make(weights: bytes, all_tokens: bool = False) -> _Expiring:
        repo = f"{oci_namespace}/{PATH}"
        files = {"wgt.mod": modtext(PATH), "w/weights.bin": weights}
        push_release(oci_registry_token, repo, PATH, "v1.0.0", files)
        exp = _Expiring(oci_registry_token, repo, all_tokens)
        front = _Relay(oci_registry_token.url, exp.edit).start()
        made.append(front)
        host = f"127.0.0.1:{front.port}"
        monkeypatch.setenv("DOCKER_CONFIG", docker_login(tmp_path / "docker", host))
        monkeypatch.setenv("WGTPROXY", f"oci://{host}/{oci_namespace}")
        return exp

    yield make
    for f in made:
        f.stop()


@pytest.mark.parametrize("ranged", [False, True], ids=["stream", "ranges"])
def test_cut_download_resumes_with_a_fresh_token(
    wgtpm: Callable[..., object],
    project: Path,
    expiring: Callable[..., _Expiring],
    monkeypatch: pytest.MonkeyPatch,
    ranged: bool,
) -> None:
    from wgtpm import modfetch

    if ranged:  # parallel ranges of 1 MiB for a 3 MiB file
        monkeypatch.setattr(modfetch, "RANGED_MIN", 1 << 20)
        monkeypatch.setattr(modfetch, "RANGE_MIN", 1 << 20)
    weights = os.urandom((3 << 20) + 12_345 if ranged else 300_000)
    exp = expiring(weights)
    r = wgtpm("get", f"{PATH}@v1.0.0", cwd=project)  # type: ignore[operator]
    assert r.code == 0, r.err
    assert exp.cut and exp.refused >= 1 and exp.served_after >= 1
    tree = cache_root() / "mod" / f"{PATH}@v1.0.0"
    assert (tree / "w/weights.bin").read_bytes() == weights
    assert PASSWORD not in r.out + r.err


def test_a_second_401_in_a_row_is_final(
    wgtpm: Callable[..., object], project: Path, expiring: Callable[..., _Expiring]
) -> None:
    """Refused again with the fresh token: one line, at once (not the retries of a cut)."""
    exp = expiring(os.urandom(300_000), True)
    r = wgtpm("get", f"{PATH}@v1.0.0", cwd=project)  # type: ignore[operator]
    assert r.code != 0
    line = one_line("\n".join(ln for ln in r.err.splitlines() if "; resuming (try" not in ln))
    assert "w/weights.bin" in line and "fresh credentials" in line and "log in" in line, line
    assert exp.refused == 2, exp.refused  # the stale token, then the fresh one: no retries


class _Host:
    opts = FetchOptions(resume_attempts=2, resume_backoff=0.0)

    class progress:
        @staticmethod
        def notice(msg: str) -> None:
            pass

    def http(self) -> object:
        raise AssertionError("not used")


def _refused(req: FileRequest) -> Callable[[], None]:
    vf = VersionFile(PATH, "v1.0.0", IndexEntry("w.bin", 10, "0" * 64))

    def once() -> None:
        from wgtpm.httpclient import HTTPStatusError

        exc = HTTPStatusError(401, "http://127.0.0.1:1/v2/x/blobs/y", {})
        raise _transfer.http_failure(vf, exc, req)

    return once


def test_without_refresh_a_401_is_retried_as_before(tmp_path: Path) -> None:
    """No ``refresh``: every try counts, and the last one says to run the command again."""
    req = FileRequest("http://127.0.0.1:1/v2/x/blobs/y", {"Authorization": "Bearer old"})
    once, tries = _refused(req), []

    def counted() -> None:
        tries.append(1)
        once()

    vf = VersionFile(PATH, "v1.0.0", IndexEntry("w.bin", 10, "0" * 64))
    with pytest.raises(FetchError, match="gave up after 3 tries"):
        _transfer.resuming(counted, _Host(), vf, tmp_path)  # type: ignore[arg-type]
    assert len(tries) == 3
    fresh = _transfer.Fresh(req, lambda stale: None)  # a chain whose serving source has none
    tries.clear()
    with pytest.raises(FetchError, match="gave up after 3 tries"):
        _transfer.resuming(counted, _Host(), vf, tmp_path, renew=fresh.renewer())  # type: ignore[arg-type]
    assert len(tries) == 3 and fresh.req is req
