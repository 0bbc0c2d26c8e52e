"""The Hugging Face source reads the Hub API itself, in as few round trips as it allows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.servers import Request
from tests.servers.huggingface import HuggingFaceServer
from tests.sources.conftest import fetch
from wgtpm.httpclient import HttpClient
from wgtpm.sources.huggingface import HuggingFaceSource

MOD = "hf.co/acme/tiny"
WEIGHTS = bytes(range(256)) * 64


def _repo(hf: HuggingFaceServer) -> None:
    repo = hf.repo("acme", "tiny")
    repo.commit({"config.json": b"{}", "model.safetensors": WEIGHTS, "sub/a.txt": b"a"})
    repo.tag("v0.1.0")


def test_a_tagged_version_costs_two_api_calls_in_one_round_trip(
    hf: HuggingFaceServer, http: HttpClient, tmp_path: Path
) -> None:
    """The refs and the revision by the tag's name are asked at once. The server sleeps
    0.3 s before it logs each request, so a request sent only once the other's answer
    was read is logged at least 0.3 s after it."""
    _repo(hf)
    hf.latency = 0.3
    src = HuggingFaceSource(http, endpoint=hf.url)
    assert src.info(MOD, "v0.1.0").version == "v0.1.0"
    hf.latency = 0.0
    tree = fetch(src, tmp_path / "c", MOD, "v0.1.0", http=http)
    assert (tree / "model.safetensors").read_bytes() == WEIGHTS
    seen = sorted(hf.log.where(server="hf", path="/api/*"), key=lambda s: s.path)
    assert [s.path for s in seen] == [
        "/api/models/acme/tiny/refs",
        "/api/models/acme/tiny/revision/v0.1.0?blobs=true",
    ]
    assert abs(seen[0].at - seen[1].at) < 0.3


def test_a_branch_named_as_the_tag_is_not_taken_for_it(
    hf: HuggingFaceServer, http: HttpClient, tmp_path: Path
) -> None:
    """The Hub answers ``revision/v0.1.0`` with a branch of that name when there is one:
    the refs say the tag names another commit, so that commit is asked for itself."""
    _repo(hf)
    repo = hf.repos["acme/tiny"]
    tagged = repo.tags["v0.1.0"]
    repo.commit({"config.json": b"{}", "model.safetensors": b"other"})
    repo.branch("v0.1.0")
    assert repo.resolve("v0.1.0") != tagged
    src = HuggingFaceSource(http, endpoint=hf.url)
    assert src.info(MOD, "v0.1.0").commit == tagged
    tree = fetch(src, tmp_path / "c", MOD, "v0.1.0", http=http)
    assert (tree / "model.safetensors").read_bytes() == WEIGHTS
    api = [s.path for s in hf.log.where(server="hf", path="/api/*/revision/*")]
    assert sorted(api) == sorted(
        [
            "/api/models/acme/tiny/revision/v0.1.0?blobs=true",
            f"/api/models/acme/tiny/revision/{tagged}?blobs=true",
        ]
    )


class _NoDetails(HuggingFaceServer):
    """A Hub whose revision answer lists file names only (as without ``blobs=true``)."""

    def _info(self, req: Request, repo: Any, sha: str) -> dict[str, Any]:
        info = super()._info(req, repo, sha)
        info["siblings"] = [{"rfilename": s["rfilename"]} for s in info["siblings"]]
        return info


def test_without_file_details_the_tree_is_listed(
    cdn: Any, http: HttpClient, tmp_path: Path
) -> None:
    with _NoDetails(cdn, tree_page_size=2) as hf:
        _repo(hf)
        src = HuggingFaceSource(http, endpoint=hf.url)
        tree = fetch(src, tmp_path / "c", MOD, "v0.1.0", http=http)
        assert (tree / "model.safetensors").read_bytes() == WEIGHTS
        assert (tree / "sub" / "a.txt").read_bytes() == b"a"
        assert len(hf.log.where(server="hf", path="/api/models/acme/tiny/tree/*")) >= 2


def test_a_get_never_imports_huggingface_hub(hf: HuggingFaceServer, tmp_path: Path) -> None:
    _repo(hf)
    proj = tmp_path / "app"
    proj.mkdir()
    (proj / "wgt.mod").write_text("module example.com/app\n")
    code = (
        "import sys\nfrom wgtpm.cli import main\n"
        f"code = main(['get', '-q', '{MOD}@v0.1.0'])\n"
        "assert 'huggingface_hub' not in sys.modules, 'imported'\nsys.exit(code)\n"
    )
    env = {
        **os.environ,
        "HF_ENDPOINT": hf.url,
        "HF_TOKEN": "hf_secret",
        "WGTPROXY": "direct",
        "WGTPM_CACHE": str(tmp_path / "cache"),
    }
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=proj, env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
