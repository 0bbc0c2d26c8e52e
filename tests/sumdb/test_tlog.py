"""Go's tlog_test.go and tlog note_test.go, and the RFC 6962 vectors of transparency-dev/merkle."""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import pairwise

import pytest

from wgtpm.sumdb import tlog
from wgtpm.sumdb.tlog import Tile, Tree


class HashStorage(list[bytes]):
    """Stored hashes in a list; a HashReader that insists on increasing indexes, as Go's test does."""

    def __call__(self, indexes: Sequence[int]) -> list[bytes]:
        assert all(a < b for a, b in pairwise(indexes)), "indexes out of order"
        return [self[i] for i in indexes]


class TileStorage:
    """A TileReader over a dict of tiles, counting tiles read but not yet saved."""

    def __init__(self, tiles: dict[Tile, bytes], height: int = 2) -> None:
        self.tiles = tiles
        self.height = height
        self.unsaved = 0

    def read_tiles(self, tiles: Sequence[Tile]) -> list[bytes]:
        self.unsaved += len(tiles)
        return [self.tiles[t] for t in tiles]

    def save_tiles(self, tiles: Sequence[Tile], data: Sequence[bytes]) -> None:
        self.unsaved -= len(tiles)


def _flip(proof: list[bytes], k: int) -> list[bytes]:
    return [bytes([h[0] ^ 1]) + h[1:] if i == k else h for i, h in enumerate(proof)]


def test_tree() -> None:
    """Go's TestTree: append 100 records; every hash, tile and proof along the way checks."""
    h = 2
    storage = HashStorage()
    tiles: dict[Tile, bytes] = {}
    trees: list[bytes] = []
    leaves: list[bytes] = []
    for i in range(100):
        data = f"leaf {i}".encode()
        old_count = len(storage)
        storage.extend(tlog.stored_hashes(i, data, storage))
        leaves.append(tlog.record_hash(data))
        assert tlog.stored_hash_count(i + 1) == len(storage)
        th = tlog.tree_hash(i + 1, storage)

        for tile in tlog.new_tiles(h, i, i + 1):
            tdata = tlog.read_tile_data(tile, storage)
            old = tiles.get(tile._replace(W=tile.W - 1), b"")
            assert len(old) == len(tdata) - 32 and tdata.startswith(old), tile.path()
            tiles[tile] = tdata
        for old_size in (0, i // 2):
            for tile in tlog.new_tiles(h, old_size, i + 1):
                assert tiles[tile] == tlog.read_tile_data(tile, storage)
        for j in range(old_count, len(storage)):
            tile = tlog.tile_for_index(h, j)
            assert tlog.hash_from_tile(tile, tiles[tile], j) == storage[j]
        trees.append(th)

        for j in range(i + 1):
            p = tlog.prove_record(i + 1, j, storage)
            tlog.check_record(p, i + 1, th, j, leaves[j])
            for k in range(len(p)):
                with pytest.raises(tlog.ProofError):
                    tlog.check_record(_flip(p, k), i + 1, th, j, leaves[j])

        ts = TileStorage(tiles)
        thr = tlog.TileHashReader(Tree(i + 1, th), ts)
        for j in range(i + 1):
            assert thr([tlog.stored_hash_index(0, j)]) == [leaves[j]]
            p = tlog.prove_record(i + 1, j, thr)
            tlog.check_record(p, i + 1, th, j, leaves[j])
        assert ts.unsaved == 0
        with pytest.raises(tlog.MalformedTileError):
            thr([(i + 1) * 2])
        assert ts.unsaved == 0

        for j in range(i + 1):
            assert tlog.tree_hash(j + 1, thr) == trees[j]
            p = tlog.prove_tree(i + 1, j + 1, thr)
            tlog.check_tree(p, i + 1, th, j + 1, trees[j])
            for k in range(len(p)):
                with pytest.raises(tlog.ProofError):
                    tlog.check_tree(_flip(p, k), i + 1, th, j + 1, trees[j])
        assert ts.unsaved == 0


def test_tampered_tile_is_refused() -> None:
    storage = HashStorage()
    for i in range(20):
        storage.extend(tlog.stored_hashes(i, b"r%d" % i, storage))
    tiles = {t: tlog.read_tile_data(t, storage) for t in tlog.new_tiles(2, 0, 20)}
    th = tlog.tree_hash(20, storage)
    for t in tiles:
        bad = dict(tiles)
        bad[t] = bytes([tiles[t][0] ^ 0x80]) + tiles[t][1:]
        thr = tlog.TileHashReader(Tree(20, th), TileStorage(bad))
        try:
            got = [thr([tlog.stored_hash_index(0, j)])[0] for j in range(20)]
        except tlog.MalformedTileError as e:
            assert "inconsistent" in str(e)
        else:
            # A tile the reads never needed; whatever came back must be right.
            assert got == [storage[tlog.stored_hash_index(0, j)] for j in range(20)]


def test_split_stored_hash_index() -> None:
    for level in range(10):
        for n in range(100):
            x = tlog.stored_hash_index(level, n)
            assert tlog.split_stored_hash_index(x) == (level, n)


@pytest.mark.parametrize(
    ("path", "tile"),
    [
        ("tile/4/0/001", Tile(4, 0, 1, 16)),
        ("tile/4/0/001.p/5", Tile(4, 0, 1, 5)),
        ("tile/3/5/x123/x456/078", Tile(3, 5, 123456078, 8)),
        ("tile/3/5/x123/x456/078.p/2", Tile(3, 5, 123456078, 2)),
        ("tile/1/0/x003/x057/500", Tile(1, 0, 3057500, 2)),
        ("tile/3/5/123/456/078", None),
        ("tile/3/-1/123/456/078", None),
        ("tile/1/data/x003/x057/500", Tile(1, -1, 3057500, 2)),
        ("tile/8/0/000", Tile(8, 0, 0, 256)),
        ("tile/8/0/000.p/256", None),
        ("tile/8/0/000.p/0", None),
        ("tile/8/0/0000", None),
        ("tile/31/0/000", None),
        ("tile/08/0/000", None),
        ("tile/8/0/+00", None),
        ("tile/8/0", None),
        ("tiles/8/0/000", None),
    ],
)
def test_tile_path(path: str, tile: Tile | None) -> None:
    if tile is None:
        with pytest.raises(tlog.MalformedTileError):
            tlog.parse_tile_path(path)
        return
    assert tile.path() == path
    assert tlog.parse_tile_path(path) == tile


# ---- RFC 6962 vectors (transparency-dev/merkle testonly/constants.go, proof/verify_test.go) ----

RFC_LEAVES = [
    bytes.fromhex(x)
    for x in [
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    ]
]
RFC_ROOTS = [
    bytes.fromhex(x)
    for x in [
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    ]
]
RFC_INCLUSION = [  # (index, tree size, audit path)
    (
        0,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        [
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (
        1,
        5,
        [
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (0, 1, []),
]
RFC_CONSISTENCY = [  # (old size, new size, proof)
    (1, 1, []),
    (
        1,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        [
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (
        6,
        7,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
]


def _rfc_storage() -> HashStorage:
    storage = HashStorage()
    for i, leaf in enumerate(RFC_LEAVES):
        storage.extend(tlog.stored_hashes(i, leaf, storage))
    return storage


def test_rfc6962_roots() -> None:
    storage = _rfc_storage()
    assert [tlog.tree_hash(n, storage) for n in range(1, 9)] == RFC_ROOTS
    # Go's tlog (and so this log) gives the empty tree 32 zero bytes, not RFC 6962's sha256("").
    assert tlog.tree_hash(0, storage) == tlog.EMPTY_HASH == bytes(32)


@pytest.mark.parametrize(("index", "size", "path"), RFC_INCLUSION)
def test_rfc6962_inclusion(index: int, size: int, path: list[str]) -> None:
    proof = [bytes.fromhex(h) for h in path]
    leaf = tlog.record_hash(RFC_LEAVES[index])
    assert tlog.prove_record(size, index, _rfc_storage()) == proof
    tlog.check_record(proof, size, RFC_ROOTS[size - 1], index, leaf)
    wrong: list[tuple[list[bytes], int, int, bytes]] = [
        (proof, size, index ^ 1, leaf),
        (proof, size, index, tlog.record_hash(b"WrongLeaf")),
        ([*proof, RFC_ROOTS[size - 1]], size, index, leaf),
        ([RFC_ROOTS[size - 1], *proof], size, index, leaf),
        (proof[:-1], size, index, leaf) if proof else ([bytes(32)], size, index, leaf),
        *((_flip(proof, k), size, index, leaf) for k in range(len(proof))),
    ]
    for p, t, n, h in wrong:
        if 0 <= n < t:
            with pytest.raises(tlog.ProofError):
                tlog.check_record(p, t, RFC_ROOTS[t - 1], n, h)


@pytest.mark.parametrize(("old", "new", "path"), RFC_CONSISTENCY)
def test_rfc6962_consistency(old: int, new: int, path: list[str]) -> None:
    proof = [bytes.fromhex(h) for h in path]
    assert tlog.prove_tree(new, old, _rfc_storage()) == proof
    tlog.check_tree(proof, new, RFC_ROOTS[new - 1], old, RFC_ROOTS[old - 1])
    if not proof:
        return
    r1, r2 = RFC_ROOTS[old - 1], RFC_ROOTS[new - 1]
    for p, a, b in [
        (proof, r2, r1),  # swapped roots
        ([], r1, r2),
        ([*proof, r1], r1, r2),
        ([proof[0], *proof], r1, r2),
        (proof[:-1], r1, r2),
        *((_flip(proof, k), r1, r2) for k in range(len(proof))),
    ]:
        with pytest.raises(tlog.ProofError):
            tlog.check_tree(p, new, b, old, a)


# ---- Tree heads and records: Go's tlog/note_test.go ----

GOLDEN_TREE = b"go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n"


def test_format_tree() -> None:
    tree = Tree(123456789012, tlog.record_hash(b"hello world"))
    assert tlog.format_tree(tree) == GOLDEN_TREE
    assert tlog.parse_tree(GOLDEN_TREE) == tree
    for extra in (b"JOE", b"JOE\n", b"JOE\n" * 1000):
        assert tlog.parse_tree(GOLDEN_TREE + extra) == tree


@pytest.mark.parametrize(
    "text",
    [
        b"not-" + GOLDEN_TREE,
        b"go.sum database tree\n0xabcdef\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
        b"go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBTOOBIG=\n",
        b"go.sum database tree\n0123\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
        b"go.sum database tree\n-1\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
        b"go.sum database tree\n9223372036854775808\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
        b"go.sum database tree\n1\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=",
    ],
)
def test_parse_tree_refuses(text: bytes) -> None:
    with pytest.raises(tlog.MalformedTreeError):
        tlog.parse_tree(text)


def test_format_record() -> None:
    assert tlog.format_record(123456789012, b"hello, world\n") == b"123456789012\nhello, world\n\n"
    for bad in (b"", b"hello\nworld", b"hello\n\nworld\n", b"hello\x01world\n"):
        with pytest.raises(tlog.MalformedRecordError):
            tlog.format_record(1, bad)


def test_parse_record() -> None:
    msg = b"123456789012\nhello, world\n\njunk on end\x01\xff"
    assert tlog.parse_record(msg) == (123456789012, b"hello, world\n", b"junk on end\x01\xff")
    assert tlog.parse_record(b"123456789012\nhello, world\n\n") == (
        123456789012,
        b"hello, world\n",
        b"",
    )
    for bad in (
        b"not-123456789012\nhello, world\n\n",
        b"123\nhello\x01world\n\n",
        b"123\nhello\xffworld\n\n",
        b"123\nhello world\n",
        b"0x123\nhello world\n\n",
        b"-1\nhello world\n\n",
        b"9223372036854775808\nhello world\n\n",
    ):
        with pytest.raises(tlog.MalformedRecordError):
            tlog.parse_record(bad)


def test_hash_text() -> None:
    h = tlog.record_hash(b"hello world")
    assert tlog.format_hash(h) == "TszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0="
    assert tlog.parse_hash(tlog.format_hash(h)) == h
    for bad in ("", "TszzRgjT", "TszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0", "é"):
        with pytest.raises(tlog.TlogError):
            tlog.parse_hash(bad)


def test_tile_paths_round_trip() -> None:
    rng = random.Random(6962)
    for _ in range(2000):
        h = rng.randint(1, 30)
        tile = Tile(h, rng.randint(-1, 63), rng.randint(0, 10 ** rng.randint(0, 15)), 0)
        tile = tile._replace(W=rng.choice([1 << h, rng.randint(1, 1 << h)]))
        assert tlog.parse_tile_path(tile.path()) == tile


def test_stored_hash_index_round_trips_far_out() -> None:
    rng = random.Random(8)
    for _ in range(2000):
        level, n = rng.randint(0, 40), rng.randint(0, 1 << 40)
        assert tlog.split_stored_hash_index(tlog.stored_hash_index(level, n)) == (level, n)


def test_tiles_of_a_tree_of_height_8() -> None:
    """The tiles a 1000-record log publishes give every stored hash, and the tree hash."""
    storage = HashStorage()
    for i in range(1000):
        storage.extend(tlog.stored_hashes(i, b"%d" % i, storage))
    tiles = {t: tlog.read_tile_data(t, storage) for t in tlog.new_tiles(8, 0, 1000)}
    assert Tile(8, 0, 3, 232) in tiles and Tile(8, 1, 0, 3) in tiles
    assert tlog.parse_tile_path("tile/8/0/003.p/232") == Tile(8, 0, 3, 232)
    for index in range(len(storage)):
        tile = tlog.tile_for_index(8, index)
        full = tlog.TileHashReader(
            Tree(1000, tlog.tree_hash(1000, storage)), TileStorage(tiles, height=8)
        )
        if tile.L == 0 and index % 97 == 0:
            assert full([index]) == [storage[index]]
        widest = max((t for t in tiles if t[:3] == tile[:3]), key=lambda t: t.W)
        assert tlog.hash_from_tile(widest, tiles[widest], index) == storage[index]
