"""The license of a Hugging Face repository without wgt.mod: its model card's ``license``
field, read from the verified README.md, against the loopback Hub (issue 28)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.servers.huggingface import HuggingFaceServer

CARD = b"---\nlibrary_name: transformers\nlicense: apache-2.0\ntags:\n- tiny\n---\n# Tiny\n"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, hf: HuggingFaceServer) -> HuggingFaceServer:
    monkeypatch.setenv("WGTPROXY", "direct")
    monkeypatch.setenv("HF_ENDPOINT", hf.url)
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    tiny = hf.repo("acme", "tiny")
    tiny.commit({"README.md": CARD, "model.safetensors": b"M" * 5000})
    tiny.tag("v0.1.0")
    return hf


def test_card_license_is_listed(wgtpm, project: Path, hub: HuggingFaceServer) -> None:
    r = wgtpm("get", "hf.co/acme/tiny@v0.1.0", cwd=project)
    assert r.code == 0, r.err
    r = wgtpm("list", "-m", "-json", "all", cwd=project)
    assert r.code == 0, r.err
    row = next(x for x in json.loads(r.out) if x["path"] == "hf.co/acme/tiny")
    assert row["license"] == "apache-2.0"


def test_card_license_is_denied_before_the_weights_download(
    wgtpm, project: Path, hub: HuggingFaceServer
) -> None:
    mod = "module example.com/app\nwgt 0.1\ndeny-license Apache-2.0\n"
    (project / "wgt.mod").write_text(mod)
    r = wgtpm("get", "-q", "hf.co/acme/tiny@v0.1.0", cwd=project)  # -q: no "downloaded README"
    assert r.code == 1
    assert r.err == (
        "wgtpm: hf.co/acme/tiny@v0.1.0: its license apache-2.0 (README.md) is denied by "
        f"{project / 'wgt.mod'}:3:14 (deny-license Apache-2.0); exclude it or change "
        "deny-license\n"
    )
    assert (project / "wgt.mod").read_text() == mod and not (project / "wgt.sum").exists()
    assert not list(Path(os.environ["WGTPM_CACHE"]).rglob("model.safetensors"))


def test_sbom_carries_the_card_license(wgtpm, project: Path, hub: HuggingFaceServer) -> None:
    assert wgtpm("get", "hf.co/acme/tiny@v0.1.0", cwd=project).code == 0
    r = wgtpm("sbom", cwd=project)
    assert r.code == 0, r.err
    (tiny,) = json.loads(r.out)["components"]
    assert tiny["type"] == "machine-learning-model"
    assert tiny["licenses"] == [{"license": {"id": "Apache-2.0"}}]
    props = {p["name"]: p["value"] for p in tiny["properties"]}
    assert props["wgtpm:license-source"] == "README.md"
    assert props["wgtpm:commit"] == hub.repo("acme", "tiny").tags["v0.1.0"]
