"""A file:// proxy tree is read only inside the tree: no '..' queries, no symlinks out of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from wgtpm._errors import FetchError, UsageError
from wgtpm.proxytree import ProxyTree
from wgtpm.sources.proxy import ProxySource

M = "example.com/m"


@pytest.fixture
def tree(tmp_path: Path) -> ProxyTree:
    t = ProxyTree(tmp_path / "tree")
    t.add(M, "v0.1.0", {"wgt.mod": f"module {M}\n".encode(), "a.txt": b"hello"})
    return t


def test_revision_query_with_dot_dot_is_refused(tree: ProxyTree, tmp_path: Path) -> None:
    secret = tmp_path / "tree" / "secret.info"
    secret.write_text('{"Version": "v9.9.9"}')
    src = ProxySource(tree.url, None)
    with pytest.raises(UsageError, match="invalid version query"):
        src.info(M, "../../../secret")
    assert src.info(M, "v0.1.0").version == "v0.1.0"


def test_symlink_out_of_the_tree_is_refused(tree: ProxyTree, tmp_path: Path) -> None:
    key = tmp_path / "id_rsa"
    key.write_text("-----BEGIN PRIVATE KEY-----\nsecret\n")
    vdir = tmp_path / "tree" / "example.com" / "m" / "@v"
    (vdir / "v0.1.0.mod").unlink()
    (vdir / "v0.1.0.mod").symlink_to(key)
    (vdir / "v0.1.0" / "a.txt").unlink()
    (vdir / "v0.1.0" / "a.txt").symlink_to(key)
    src = ProxySource(tree.url, None)
    with pytest.raises(FetchError, match="outside the proxy tree") as err:
        src.mod(M, "v0.1.0")
    assert "secret" not in str(err.value).replace(str(tmp_path), "")
    with pytest.raises(FetchError, match="outside the proxy tree"):
        src.file(M, "v0.1.0", "a.txt")


def test_symlink_inside_the_tree_is_followed(tree: ProxyTree, tmp_path: Path) -> None:
    vdir = tmp_path / "tree" / "example.com" / "m" / "@v"
    (vdir / "copy.mod").write_bytes((vdir / "v0.1.0.mod").read_bytes())
    (vdir / "v0.1.0.mod").unlink()
    (vdir / "v0.1.0.mod").symlink_to(vdir / "copy.mod")
    assert ProxySource(tree.url, None).mod(M, "v0.1.0") == f"module {M}\n".encode()
