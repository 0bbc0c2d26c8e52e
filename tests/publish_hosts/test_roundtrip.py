"""Two modules published to two hosts, one requiring the other, got back into a third project."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.publish_hosts.conftest import GH_TOKEN, HF_TOKEN, Recorder, make_release, sum_lines
from tests.servers.github import GitHubServer
from tests.servers.huggingface import HuggingFaceServer
from wgtpm.cache import Cache
from wgtpm.httpclient import HttpClient
from wgtpm.publish.github import GitHubTarget
from wgtpm.publish.huggingface import HuggingFaceTarget

BASE = "hf.co/acme/xor-base"
APP = "github.com/acme/xor-classifier"


def test_a_module_on_github_requiring_one_on_hugging_face(
    wgtpm,  # type: ignore[no-untyped-def]
    project: Path,
    tmp_path: Path,
    github: GitHubServer,
    hf: HuggingFaceServer,
    http: HttpClient,
    reporter: Recorder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)
    hf.repo("acme", "xor-base")
    github.repo("acme", "xor-classifier").commit()
    env = {
        "GITHUB_API_URL": github.url,
        "GITHUB_TOKEN": GH_TOKEN,
        "HF_ENDPOINT": hf.url,
        "HF_TOKEN": HF_TOKEN,
    }
    base = make_release(tmp_path, BASE, "v0.1.0", {"base/weights.safetensors": b"B" * 999})
    app = make_release(
        tmp_path,
        APP,
        "v0.2.0",
        {"classifier/weights.safetensors": b"C" * 777},
        requires={BASE: "v0.1.0"},
    )
    for t, rel in ((HuggingFaceTarget(BASE, http, env), base), (GitHubTarget(APP, http, env), app)):
        t.check(rel)
        assert t.publish(rel, reporter).created

    for k, v in {**env, "WGTPROXY": "direct"}.items():
        monkeypatch.setenv(k, v)
    r = wgtpm("get", f"{APP}@v0.2.0", cwd=project)
    assert r.code == 0, r.err
    assert sum_lines(project, APP) == app.sum_lines()
    assert sum_lines(project, BASE) == base.sum_lines()
    cache = Cache()
    got = cache.mod_dir(BASE, "v0.1.0") / "base/weights.safetensors"
    assert got.read_bytes() == b"B" * 999
    assert (cache.mod_dir(APP, "v0.2.0") / "wgt.mod").read_bytes() == app.files[
        "wgt.mod"
    ].read_bytes()
    assert wgtpm("verify", cwd=project).code == 0
