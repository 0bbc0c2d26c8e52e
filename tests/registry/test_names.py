"""Spellings of a module path: no case variant or alias reaches what the canonical one may not.

GitHub and the Hugging Face Hub resolve owner and repository names whatever
their case, so ``github.com/Acme/secret`` is the repository ``acme/secret``.
The registry's hosted namespace (every token's prefix) is compared folded
(:func:`wgtpm.module.fold`): the caching proxy never fetches, serves or logs
a spelling of it with the server's credentials. Grants stay exact: a token
publishes only the spelling of its prefix. ``huggingface.co/...`` is refused
and names the ``hf.co/...`` path.

The loopback GitHub and Hub are made to ignore case as the real ones do
(:class:`AnyCase`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from registry._errors import BadRequestError
from registry.hfpolicy import HfPolicy
from registry.metadata import TokenRecord
from registry.sumlog import SqlSumLog
from registry.tokens import hash_secret, new_token
from tests.servers import CdnServer, RequestLog
from tests.servers.github import GitHubServer
from tests.servers.huggingface import HuggingFaceServer
from wgtpm._errors import InvalidPathError
from wgtpm.module import check_canonical, fold, match_folded

from .conftest import Live
from .helpers import modtext, publish
from .test_proxy import Proxied, _proxied

SECRET = b"the private repository's weights\n" * 64
PUBLIC = b"public weights\n" * 64
TAILS = (
    "@v/list",
    "@latest",
    "@v/v0.1.0.info",
    "@v/v0.1.0.mod",
    "@v/v0.1.0.index.json",
    "@v/v0.1.0/weights.bin",
)


class AnyCase(dict[Any, Any]):
    """A loopback server's repositories, found whatever the case of their names (as GitHub
    and the Hub find them)."""

    def get(self, key: Any, default: Any = None) -> Any:
        want = repr(key).lower()
        return next((v for k, v in self.items() if repr(k).lower() == want), default)


# -- the pure part


@pytest.mark.parametrize(
    ("path", "want"),
    [
        ("github.com/Acme/Secret", "github.com/acme/secret"),
        ("github.com/acme/secret/v2", "github.com/acme/secret/v2"),
        ("GitHub.com/ACME/x", "github.com/acme/x"),
        ("hf.co/Qwen/Qwen3-0.6B", "hf.co/qwen/qwen3-0.6b"),
        ("huggingface.co/Qwen/Qwen3", "hf.co/qwen/qwen3"),
        ("www.huggingface.co/Acme/m", "hf.co/acme/m"),
        ("HuggingFace.co/Acme/m", "hf.co/acme/m"),
        ("example.com/Team/m", "example.com/Team/m"),  # other hosts keep their case
        ("Example.com/Team/m", "example.com/Team/m"),
        ("github.com/Acme/*", "github.com/acme/*"),
        ("github.com", "github.com"),
        ("programasweights.com/Acme/p", "programasweights.com/Acme/p"),
    ],
)
def test_fold(path: str, want: str) -> None:
    assert fold(path) == want


@pytest.mark.parametrize(
    ("patterns", "path", "want"),
    [
        ("github.com/acme", "github.com/ACME/secret", True),
        ("github.com/Acme", "github.com/acme/secret", True),
        ("github.com/acme/*", "github.com/Acme/Secret", True),
        ("*/acme", "github.com/Acme/secret", True),  # a glob host does not dodge the fold
        ("*.com/acme", "github.com/ACME/x", True),
        ("hf.co/acme", "huggingface.co/Acme/m", True),
        ("huggingface.co/acme", "hf.co/ACME/m", True),
        ("other.org,github.com/acme", "github.com/Acme/x", True),
        ("github.com/acme", "github.com/acmeco/x", False),
        ("example.com/team", "example.com/Team/x", False),  # case-sensitive host
        ("example.com/Team", "example.com/team/x", False),
        ("*/team", "example.com/Team/x", False),
    ],
)
def test_match_folded(patterns: str, path: str, want: bool) -> None:
    assert match_folded(patterns, path) is want


def test_check_canonical_refuses_the_huggingface_alias() -> None:
    for path in ("hf.co/acme/m", "github.com/Acme/m", "example.com/huggingface.co"):
        check_canonical(path)
    for path, hint in (
        ("huggingface.co/acme/m", "use hf.co/acme/m"),
        ("www.huggingface.co/Acme/m", "use hf.co/Acme/m"),
    ):
        with pytest.raises(InvalidPathError, match=hint):
            check_canonical(path)


def test_the_hf_allow_list_grants_only_the_spelling_it_names() -> None:
    policy = HfPolicy.parse("acme/*,Qwen/Qwen3-0.6B")
    assert policy.allows("acme/x") and policy.allows("Qwen/Qwen3-0.6B")
    assert not policy.allows("ACME/x") and not policy.allows("qwen/qwen3-0.6b")


# -- GitHub through the caching proxy


@pytest.fixture
def github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubServer]:
    """A loopback GitHub (token ``ghp_secret``) with a private ``acme/secret`` and a public
    ``other/pub``, each with a release v0.1.0 that wgtpm did not publish (its index is
    synthesised, its wgt.mod names whatever path was asked for)."""
    log = RequestLog()
    with CdnServer(log=log) as cdn, GitHubServer(cdn, token="ghp_secret", log=log) as gh:
        gh.repos = AnyCase()
        gh.repo("acme", "secret", private=True).release("v0.1.0", {"weights.bin": SECRET})
        gh.repo("other", "pub").release("v0.1.0", {"weights.bin": PUBLIC})
        monkeypatch.setenv("GITHUB_API_URL", gh.url)
        monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
        monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
        yield gh


def assert_not_leaked(p: Proxied, http: httpx.Client, spellings: list[str]) -> None:
    """Every protocol URL and page of each (escaped) spelling is 404 or 410 and shows
    nothing of the secret; nothing of it is stored or logged."""
    for spelling in spellings:
        for tail in TAILS:
            r = http.get(f"/{spelling}/{tail}")
            assert r.status_code in (404, 410), (spelling, tail, r.status_code, r.text)
            assert SECRET[:32] not in r.content, (spelling, tail)
            assert b"v0.1.0" not in r.content or tail.startswith("@v/v0.1.0"), (spelling, tail)
        assert http.get(f"/-/module/{spelling}").status_code in (404, 410), spelling
        r = http.get(f"/sumdb/sum.test/lookup/{spelling}@v0.1.0")
        assert r.status_code in (400, 404, 410), (spelling, r.status_code)
    reg = p.registry
    assert [m.path for m in reg.meta.list_modules() if "secret" in m.path.lower()] == []
    log = SqlSumLog(reg.meta.engine)  # type: ignore[attr-defined]
    records = b"".join(log.records(0, log.tree().n)) if log.tree().n else b""
    assert b"secret" not in records.lower()


@pytest.mark.parametrize(
    "prefix", ["github.com/acme", "github.com/acme/*", "github.com/Acme", "github.com/ACME/secret"]
)
def test_no_spelling_of_a_hosted_github_path_is_fetched_with_the_servers_token(
    github: GitHubServer, tmp_path: Path, prefix: str
) -> None:
    for p in _proxied(tmp_path / "reg", "direct", None):
        p.registry.create_token(prefix, "read")  # the hosted namespace: never proxied
        with httpx.Client(base_url=p.url, timeout=30) as http:
            # the control: a repository outside it is fetched, served and logged
            r = http.get("/github.com/other/pub/@v/v0.1.0/weights.bin")
            assert r.status_code == 200 and r.content == PUBLIC, r.text
            github.log.clear()
            assert_not_leaked(
                p,
                http,
                [
                    "github.com/acme/secret",
                    "github.com/!acme/secret",
                    "github.com/!a!c!m!e/!s!e!c!r!e!t",
                    "github.com/acme/!secret",
                    "!git!hub.com/acme/secret",
                    "GitHub.com/acme/secret",
                    "github.com/!acme/secret/v2",
                ],
            )
        assert not [s.path for s in github.log if "ecret" in s.path.lower()]  # never asked
        assert SqlSumLog(p.registry.meta.engine).tree().n == 1  # type: ignore[attr-defined]


# -- Hugging Face through the caching proxy and the Hub API


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[HuggingFaceServer]:
    """A loopback Hub (token ``hf_secret``) with a private ``acme/secret`` and a public
    ``other/pub``, each tagged v0.1.0."""
    with CdnServer() as cdn, HuggingFaceServer(cdn, token="hf_secret") as server:
        server.repos = AnyCase()
        for owner, name, data, private in (
            ("acme", "secret", SECRET, True),
            ("other", "pub", PUBLIC, False),
        ):
            repo = server.repo(owner, name, private=private)
            repo.commit({"weights.bin": data, "config.json": b"{}"})
            repo.tag("v0.1.0")
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_TOKEN", "hf_secret")
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        monkeypatch.setenv("WGTPM_HTTP_RETRIES", "0")
        yield server


@pytest.mark.parametrize("prefix", ["hf.co/acme", "hf.co/Acme/*"])
def test_no_spelling_of_a_hosted_hf_path_is_fetched_with_the_servers_token(
    hub: HuggingFaceServer, tmp_path: Path, prefix: str
) -> None:
    for p in _proxied(tmp_path / "reg", "direct", None):
        p.registry.create_token(prefix, "read")
        with httpx.Client(base_url=p.url, timeout=30) as http:
            r = http.get("/hf.co/other/pub/@v/v0.1.0/weights.bin")
            assert r.status_code == 200 and r.content == PUBLIC, r.text
            hub.log.clear()
            assert_not_leaked(
                p,
                http,
                [
                    "hf.co/acme/secret",
                    "hf.co/!acme/secret",
                    "hf.co/!a!c!m!e/!secret",
                    "huggingface.co/acme/secret",
                    "www.huggingface.co/!acme/secret",
                ],
            )
            # the alias is refused whatever it names, and says what to ask for
            r = http.get("/huggingface.co/other/pub/@v/list")
            assert r.status_code == 410 and "use hf.co/other/pub" in r.text, r.text
            # the Hub API (HF_ENDPOINT=<registry>) answers the same
            for repo in ("Acme/secret", "ACME/Secret", "acme/secret"):
                r = http.get(f"/api/models/{repo}/revision/v0.1.0")
                assert r.status_code in (401, 404), (repo, r.status_code, r.text)
                r = http.get(f"/{repo}/resolve/v0.1.0/weights.bin")
                assert r.status_code in (401, 404) and SECRET[:32] not in r.content, repo
        assert not [s.path for s in hub.log if "ecret" in s.path.lower()]  # never asked
        assert SqlSumLog(p.registry.meta.engine).tree().n == 1  # type: ignore[attr-defined]
        with pytest.raises(BadRequestError, match=r"use hf\.co/acme"):  # the alias: no prefix
            p.registry.create_token("huggingface.co/acme", "read")


# -- publishing


@pytest.mark.parametrize(
    ("prefix", "module"),
    [
        ("github.com/team", "github.com/Team/x"),
        ("github.com/Team", "github.com/team/x"),
        ("hf.co/team", "hf.co/TEAM/x"),
        ("example.com/team", "example.com/Team/x"),  # a case-sensitive host: another path
    ],
)
def test_a_token_publishes_only_the_spelling_of_its_prefix(
    live: Live, prefix: str, module: str
) -> None:
    text, _ = live.registry.create_token(prefix, "publish")  # type: ignore[attr-defined]
    with httpx.Client(base_url=live.url, timeout=30) as http:
        r = publish(http, text, module, "v0.1.0", {"wgt.mod": modtext(module)})
        assert r.status_code == 403 and "does not cover" in r.text, r.text


def test_the_huggingface_alias_is_neither_published_nor_served(live: Live) -> None:
    reg: Any = live.registry
    # a token an older registry made for the alias (a new one is refused, below)
    text, cred = new_token()
    reg.meta.add_token(
        TokenRecord(cred.id, hash_secret(cred.secret), "huggingface.co/acme", "publish")
    )
    module = "huggingface.co/acme/x"
    with httpx.Client(base_url=live.url, timeout=30) as http:
        r = publish(http, text, module, "v0.1.0", {"wgt.mod": modtext(module)})
        assert r.status_code == 400 and "use hf.co/acme/x" in r.text, r.text
        r = http.get(f"/{module}/@v/list")
        assert r.status_code == 410 and "use hf.co/acme/x" in r.text, r.text
    assert reg.meta.get_module(module) is None
    assert SqlSumLog(reg.meta.engine).tree().n == 0
    with pytest.raises(BadRequestError, match=r"use hf\.co/acme"):
        reg.create_token("huggingface.co/acme", "publish")
