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


def test_a_tagged_version_costs_two_api_calls(
    hf: HuggingFaceServer, http: HttpClient, tmp_path: Path
) -> None:
    _repo(hf)
    src = HuggingFaceSource(http, endpoint=hf.url)
    tree = fetch(src, tmp_path / "c", MOD, "v0.1.0", http=http)
    assert (tree / "model.safetensors").read_bytes() == WEIGHTS
    api = [s.path for s in hf.log.where(server="hf", path="/api/*")]
    assert api == [
        "/api/models/acme/tiny/refs",
        f"/api/models/acme/tiny/revision/{hf.repos['acme/tiny'].tags['v0.1.0']}?blobs=true",
    ]


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
