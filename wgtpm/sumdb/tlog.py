"""A tamper-evident log: RFC 6962 Merkle trees, proofs, tiles and tree heads, as Go's tlog.

The formats and numbers are those of ``golang.org/x/mod/sumdb/tlog``, so
that a wgtpm log can be checked by Go's client and the other way round.

Hashing (RFC 6962 section 2.1). A record's hash is ``sha256(0x00 || data)``;
an interior node's is ``sha256(0x01 || left || right)``. The tree of ``n``
records splits at the largest power of two below ``n``. The empty tree's
hash is 32 zero bytes (Go's choice; RFC 6962 says ``sha256("")``; no proof
ever involves it). Hashes are written in standard base64 (44 characters).

Storage order. Every hash of the tree, at level ``L`` (0: the records) and
position ``n``, has one *stored hash index* (Crosby and Wallach, section 3.3):
the hashes are stored in the order they become known while appending
records, so appending record ``n`` stores its hash and then one hash for each
subtree it completes (:func:`stored_hashes`).

Tiles. A tile of height ``H`` at tile level ``L`` and number ``N`` holds
``W`` consecutive hashes of tree level ``H*L`` starting at position ``N*2**H``
(``W`` is ``2**H`` for a full tile, fewer for a partial one): 32 bytes each,
concatenated. Its path is ``tile/H/L/NNN`` with ``.p/W`` for a partial tile;
``N`` is written in 3-digit elements, all but the last prefixed by ``x``
(``Tile(3, 4, 1234067, 1)`` is ``tile/3/4/x001/x234/067.p/1``). Level ``-1``,
written ``data``, holds the records themselves (``tile/8/data/000``): the
records ``N*2**H`` to ``N*2**H+W-1``, each in :func:`format_record` form.
The checksum database uses height 8.

Tree heads. The text a log signs (as a note, :mod:`wgtpm.sumdb.note`) is::

    go.sum database tree
    N
    BASE64HASH

Go's exact first line, on purpose, so that Go's own client can verify a
wgtpm log. Lines after the third are ignored (room for extensions).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

from .._errors import SumdbError

__all__ = [
    "EMPTY_HASH",
    "HASH_SIZE",
    "TREE_HEADER",
    "Hash",
    "HashReader",
    "MalformedRecordError",
    "MalformedTileError",
    "MalformedTreeError",
    "ProofError",
    "Tile",
    "TileHashReader",
    "TileReader",
    "TlogError",
    "Tree",
    "check_record",
    "check_tree",
    "format_hash",
    "format_record",
    "format_tree",
    "hash_from_tile",
    "new_tiles",
    "node_hash",
    "parse_hash",
    "parse_record",
    "parse_tile_path",
    "parse_tree",
    "prove_record",
    "prove_tree",
    "read_tile_data",
    "record_hash",
    "split_stored_hash_index",
    "stored_hash_count",
    "stored_hash_index",
    "stored_hashes",
    "tile_for_index",
    "tree_hash",
]

HASH_SIZE = 32
EMPTY_HASH = bytes(HASH_SIZE)  # the hash of the tree of no records
TREE_HEADER = "go.sum database tree\n"  # Go's first line, kept so Go's client can verify us
MAX_TREE_NOTE = 1_000_000  # a tree note longer than this is malformed
_PATH_BASE = 1000  # tile numbers are written 3 digits a path element
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,18}")  # Go's int64 at most (and a bit more)
_MAX_INT64 = (1 << 63) - 1

Hash = bytes  # 32 bytes: a record, node or tree hash

HashReader = Callable[[Sequence[int]], Sequence[Hash]]
"""Returns the hashes at the given stored hash indexes, one for each, in order."""


class TlogError(SumdbError):
    """A tree, record, tile or proof of the log that does not check."""


class ProofError(TlogError):
    """An inclusion or consistency proof that does not prove what it claims."""

    def __init__(self, message: str = "invalid transparency proof") -> None:
        super().__init__(message)


class MalformedTreeError(TlogError):
    """A tree-head text that is not ``go.sum database tree\\nN\\nHASH\\n``."""

    def __init__(self) -> None:
        super().__init__("malformed tree note")


class MalformedRecordError(TlogError):
    """A record that is not ``ID\\nTEXT\\n`` (text without blank lines or control bytes)."""

    def __init__(self) -> None:
        super().__init__("malformed record data")


class MalformedTileError(TlogError):
    """A tile path that does not parse, or tile data that does not fit its tile or tree."""


def format_hash(h: Hash) -> str:
    """The standard base64 of a hash (44 characters)."""
    return base64.b64encode(h).decode()


def parse_hash(s: str) -> Hash:
    """The hash written in base64 ``s``; raises :class:`TlogError`."""
    try:
        h = base64.b64decode(s.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise TlogError("malformed hash") from None
    if len(h) != HASH_SIZE:
        raise TlogError("malformed hash")
    return h


def record_hash(data: bytes) -> Hash:
    """``sha256(0x00 || data)``: a record's leaf hash."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: Hash, right: Hash) -> Hash:
    """``sha256(0x01 || left || right)``: an interior node's hash."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _maxpow2(n: int) -> tuple[int, int]:
    """``(k, log2 k)`` for k the largest power of two smaller than n (1 for n <= 2)."""
    if n <= 2:
        return 1, 0
    level = (n - 1).bit_length() - 1
    return 1 << level, level


def _trailing_ones(n: int) -> int:
    return ((n + 1) & -(n + 1)).bit_length() - 1


def stored_hash_index(level: int, n: int) -> int:
    """The stored hash index of the ``n``-th hash at ``level`` of the tree."""
    # Level L's n-th hash is stored right after level L+1's (2n+1)-th; at level 0
    # the n-th hash is stored at n + n/2 + n/4 + ... = 2n - popcount(n).
    for _ in range(level):
        n = 2 * n + 1
    return 2 * n - bin(n).count("1") + level


def split_stored_hash_index(index: int) -> tuple[int, int]:
    """``(level, n)`` such that ``stored_hash_index(level, n) == index``."""
    # The record n stored just before index is in [index/2, index/2 + log2(index)].
    n = index // 2
    index_n = stored_hash_index(0, n)
    while True:
        # Record n adds 1 + trailing_ones(n) hashes.
        x = index_n + 1 + _trailing_ones(n)
        if x > index:
            break
        n += 1
        index_n = x
    level = index - index_n
    return level, n >> level


def stored_hash_count(n: int) -> int:
    """How many hashes a tree of ``n`` records stores."""
    if n == 0:
        return 0
    return stored_hash_index(0, n - 1) + 1 + _trailing_ones(n - 1)


def stored_hashes(n: int, data: bytes, read: HashReader) -> list[Hash]:
    """The hashes to store, from ``stored_hash_index(0, n)`` on, when appending record ``n``.

    The record's hash, then one hash for each subtree the record completes,
    built from up to log2(n) earlier hashes that ``read`` returns.
    """
    h = record_hash(data)
    m = _trailing_ones(n)
    indexes = [stored_hash_index(i, (n >> i) - 1) for i in reversed(range(m))]
    old = _read(read, indexes)
    hashes = [h]
    for i in range(m):
        h = node_hash(old[m - 1 - i], h)
        hashes.append(h)
    return hashes


def _read(read: HashReader, indexes: Sequence[int]) -> Sequence[Hash]:
    if not indexes:
        return []
    hashes = read(indexes)
    if len(hashes) != len(indexes):
        raise TlogError(f"read {len(hashes)} hashes for {len(indexes)} indexes")
    return hashes


def _subtree_index(lo: int, hi: int, need: list[int]) -> list[int]:
    """Append the indexes of the stored hashes that make the subtree of records [lo, hi)."""
    while lo < hi:
        k, level = _maxpow2(hi - lo + 1)
        need.append(stored_hash_index(level, lo >> level))
        lo += k
    return need


def _subtree_hash(lo: int, hi: int, hashes: Sequence[Hash]) -> tuple[Hash, Sequence[Hash]]:
    """The hash of the subtree [lo, hi) from the hashes :func:`_subtree_index` named; and the rest."""
    # Split into complete subtrees of decreasing size, left to right; fold from the right.
    count = 0
    while lo < hi:
        k, _ = _maxpow2(hi - lo + 1)
        count += 1
        lo += k
    h = hashes[count - 1]
    for i in range(count - 2, -1, -1):
        h = node_hash(hashes[i], h)
    return h, hashes[count:]


def tree_hash(n: int, read: HashReader) -> Hash:
    """The root hash of the tree of the first ``n`` records (:data:`EMPTY_HASH` for none)."""
    if n == 0:
        return EMPTY_HASH
    indexes = _subtree_index(0, n, [])
    h, rest = _subtree_hash(0, n, _read(read, indexes))
    assert not rest
    return h


def prove_record(t: int, n: int, read: HashReader) -> list[Hash]:
    """The proof that the tree of size ``t`` holds record ``n`` (RFC 6962's audit path)."""
    if not 0 <= n < t:
        raise TlogError(f"cannot prove record {n} in a tree of size {t}")
    indexes = _leaf_proof_index(0, t, n, [])
    proof, rest = _leaf_proof(0, t, n, _read(read, indexes))
    assert not rest
    return proof


def _leaf_proof_index(lo: int, hi: int, n: int, need: list[int]) -> list[int]:
    if lo + 1 == hi:
        return need
    k, _ = _maxpow2(hi - lo)
    if n < lo + k:
        _leaf_proof_index(lo, lo + k, n, need)
        return _subtree_index(lo + k, hi, need)
    _subtree_index(lo, lo + k, need)
    return _leaf_proof_index(lo + k, hi, n, need)


def _leaf_proof(
    lo: int, hi: int, n: int, hashes: Sequence[Hash]
) -> tuple[list[Hash], Sequence[Hash]]:
    if lo + 1 == hi:
        return [], hashes  # the verifier knows the leaf's hash
    k, _ = _maxpow2(hi - lo)
    if n < lo + k:
        proof, hashes = _leaf_proof(lo, lo + k, n, hashes)
        th, hashes = _subtree_hash(lo + k, hi, hashes)
    else:
        th, hashes = _subtree_hash(lo, lo + k, hashes)
        proof, hashes = _leaf_proof(lo + k, hi, n, hashes)
    return [*proof, th], hashes


def check_record(proof: Sequence[Hash], t: int, th: Hash, n: int, h: Hash) -> None:
    """Raise :class:`ProofError` unless ``proof`` shows the tree (``t``, ``th``) has ``h`` at ``n``."""
    if not 0 <= n < t:
        raise ProofError(f"cannot check record {n} in a tree of size {t}")
    if _run_record_proof(proof, 0, t, n, h) != th:
        raise ProofError()


def _run_record_proof(proof: Sequence[Hash], lo: int, hi: int, n: int, leaf: Hash) -> Hash:
    if lo + 1 == hi:
        if proof:
            raise ProofError()  # no unnecessary hashes
        return leaf
    if not proof:
        raise ProofError()
    k, _ = _maxpow2(hi - lo)
    if n < lo + k:
        return node_hash(_run_record_proof(proof[:-1], lo, lo + k, n, leaf), proof[-1])
    return node_hash(proof[-1], _run_record_proof(proof[:-1], lo + k, hi, n, leaf))


def prove_tree(t: int, n: int, read: HashReader) -> list[Hash]:
    """The proof that the tree of size ``t`` extends the tree of size ``n`` (RFC 6962 consistency)."""
    if not 1 <= n <= t:
        raise TlogError(f"cannot prove tree {n} in a tree of size {t}")
    indexes = _tree_proof_index(0, t, n, [])
    proof, rest = _tree_proof(0, t, n, _read(read, indexes))
    assert not rest
    return proof


def _tree_proof_index(lo: int, hi: int, n: int, need: list[int]) -> list[int]:
    if n == hi:
        return need if lo == 0 else _subtree_index(lo, hi, need)
    k, _ = _maxpow2(hi - lo)
    if n <= lo + k:
        _tree_proof_index(lo, lo + k, n, need)
        return _subtree_index(lo + k, hi, need)
    _subtree_index(lo, lo + k, need)
    return _tree_proof_index(lo + k, hi, n, need)


def _tree_proof(
    lo: int, hi: int, n: int, hashes: Sequence[Hash]
) -> tuple[list[Hash], Sequence[Hash]]:
    if n == hi:
        if lo == 0:
            return [], hashes  # exactly the old tree: the verifier knows its hash
        th, hashes = _subtree_hash(lo, hi, hashes)
        return [th], hashes
    k, _ = _maxpow2(hi - lo)
    if n <= lo + k:
        proof, hashes = _tree_proof(lo, lo + k, n, hashes)
        th, hashes = _subtree_hash(lo + k, hi, hashes)
    else:
        th, hashes = _subtree_hash(lo, lo + k, hashes)
        proof, hashes = _tree_proof(lo + k, hi, n, hashes)
    return [*proof, th], hashes


def check_tree(proof: Sequence[Hash], t: int, th: Hash, n: int, h: Hash) -> None:
    """Raise :class:`ProofError` unless ``proof`` shows tree (``t``, ``th``) extends (``n``, ``h``)."""
    if not 1 <= n <= t:
        raise ProofError(f"cannot check tree {n} against a tree of size {t}")
    h2, th2 = _run_tree_proof(proof, 0, t, n, h)
    if th2 != th or h2 != h:
        raise ProofError()


def _run_tree_proof(
    proof: Sequence[Hash], lo: int, hi: int, n: int, old: Hash
) -> tuple[Hash, Hash]:
    """The hashes of the subtree [lo, hi) in the old and the new tree, as the proof implies."""
    if n == hi:
        if lo == 0:
            if proof:
                raise ProofError()
            return old, old
        if len(proof) != 1:
            raise ProofError()
        return proof[0], proof[0]
    if not proof:
        raise ProofError()
    k, _ = _maxpow2(hi - lo)
    if n <= lo + k:
        oh, th = _run_tree_proof(proof[:-1], lo, lo + k, n, old)
        return oh, node_hash(th, proof[-1])
    oh, th = _run_tree_proof(proof[:-1], lo + k, hi, n, old)
    return node_hash(proof[-1], oh), node_hash(proof[-1], th)


# ---- Tree heads and records -------------------------------------------------------------


class Tree(NamedTuple):
    """A tree head: the number of records and the root hash."""

    n: int
    hash: Hash


def format_tree(tree: Tree) -> bytes:
    """The text a log signs for ``tree``: ``go.sum database tree\\nN\\nBASE64HASH\\n``."""
    return f"{TREE_HEADER}{tree.n}\n{format_hash(tree.hash)}\n".encode()


def parse_tree(text: bytes | str) -> Tree:
    """The tree a :func:`format_tree` text describes; lines after the third are ignored."""
    if isinstance(text, bytes):
        try:
            text = text.decode()
        except UnicodeDecodeError:
            raise MalformedTreeError() from None
    if not text.startswith(TREE_HEADER) or text.count("\n") < 3 or len(text) > MAX_TREE_NOTE:
        raise MalformedTreeError()
    lines = text.split("\n", 3)
    if not _DECIMAL.fullmatch(lines[1]) or int(lines[1]) > _MAX_INT64:
        raise MalformedTreeError()
    try:
        h = parse_hash(lines[2])
    except TlogError:
        raise MalformedTreeError() from None
    return Tree(int(lines[1]), h)


def _is_valid_record_text(text: bytes) -> bool:
    try:
        s = text.decode()
    except UnicodeDecodeError:
        return False
    return s.endswith("\n") and "\n\n" not in s and not any(c < " " and c != "\n" for c in s)


def format_record(id: int, text: bytes) -> bytes:
    """A record as a lookup response or data tile holds it: ``ID\\n``, the text, a blank line.

    The text is UTF-8 lines, each ending in a newline, none blank, with no
    control characters.
    """
    if id < 0 or not _is_valid_record_text(text):
        raise MalformedRecordError()
    return f"{id}\n".encode() + text + b"\n"


def parse_record(msg: bytes) -> tuple[int, bytes, bytes]:
    """``(id, text, rest)`` of the record at the start of ``msg``, and what follows it.

    Stricter than Go on one point: the id must be a plain non-negative decimal.
    """
    head, nl, msg = msg.partition(b"\n")
    if not nl or not _DECIMAL.fullmatch(head.decode("ascii", "replace")):
        raise MalformedRecordError()
    if int(head) > _MAX_INT64:
        raise MalformedRecordError()
    end = msg.find(b"\n\n")
    if end < 0:
        raise MalformedRecordError()
    text, rest = msg[: end + 1], msg[end + 2 :]
    if not _is_valid_record_text(text):
        raise MalformedRecordError()
    return int(head), text, rest


# ---- Tiles ------------------------------------------------------------------------------


class Tile(NamedTuple):
    """``W`` hashes of tree level ``H*L`` from position ``N*2**H`` (``L == -1``: record data)."""

    H: int  # height, 1 to 30
    L: int  # tile level, -1 (data) to 63
    N: int  # number within the level
    W: int  # width, 1 to 2**H (full)

    def path(self) -> str:
        """``tile/H/L/NNN[.p/W]``, with ``x``-prefixed 3-digit elements for large ``N``."""
        n = self.N
        elems = [f"{n % _PATH_BASE:03d}"]
        while n >= _PATH_BASE:
            n //= _PATH_BASE
            elems.insert(0, f"x{n % _PATH_BASE:03d}")
        partial = f".p/{self.W}" if self.W != 1 << self.H else ""
        level = "data" if self.L == -1 else str(self.L)
        return f"tile/{self.H}/{level}/{'/'.join(elems)}{partial}"


def parse_tile_path(path: str) -> Tile:
    """The tile at ``path`` (``tile/8/0/x001/234.p/5``); raises :class:`MalformedTileError`."""
    bad = MalformedTileError(f"malformed tile path {path!r}")
    f = path.split("/")
    if len(f) < 4 or f[0] != "tile" or not _DECIMAL.fullmatch(f[1]):
        raise bad
    h = int(f[1])
    if f[2] == "data":
        level = -1
    elif _DECIMAL.fullmatch(f[2]):
        level = int(f[2])
    else:
        raise bad
    if not 1 <= h <= 30:
        raise bad
    w = 1 << h
    elems = f[3:]
    if elems[-2:-1] and elems[-2].endswith(".p"):
        if not _DECIMAL.fullmatch(elems[-1]) or not 0 < int(elems[-1]) < w:
            raise bad
        w = int(elems[-1])
        elems = [*elems[:-2], elems[-2][: -len(".p")]]
    n = 0
    for e in elems:
        digits = e.removeprefix("x")
        if not re.fullmatch(r"[0-9]{1,3}", digits):
            raise bad
        n = n * _PATH_BASE + int(digits)
    tile = Tile(h, level, n, w)
    if tile.path() != path:
        raise bad  # not the one canonical spelling
    return tile


def _tile_for_index(h: int, index: int) -> tuple[Tile, int, int]:
    """The least tile of height ``h`` holding ``index``, and the byte range that hashes to it."""
    level, n = split_stored_hash_index(index)
    tl = level // h
    level -= tl * h  # the level within the tile
    tn = n << level >> h
    n -= tn << h >> level  # the position within the tile, at that level
    return (
        Tile(h, tl, tn, (n + 1) << level),
        (n << level) * HASH_SIZE,
        ((n + 1) << level) * HASH_SIZE,
    )


def tile_for_index(h: int, index: int) -> Tile:
    """The tile of height ``h`` and least width from which the hash at ``index`` can be read."""
    if h <= 0:
        raise ValueError(f"invalid tile height {h}")
    return _tile_for_index(h, index)[0]


def _tile_hash(data: bytes) -> Hash:
    """The subtree hash over the 2**k hashes in data."""
    if len(data) == HASH_SIZE:
        return data
    half = len(data) // 2
    return node_hash(_tile_hash(data[:half]), _tile_hash(data[half:]))


def hash_from_tile(tile: Tile, data: bytes, index: int) -> Hash:
    """The hash at ``index``, read from ``tile`` (that of :func:`tile_for_index` or a wider one)."""
    if not (1 <= tile.H <= 30 and 0 <= tile.L < 64 and 1 <= tile.W <= 1 << tile.H):
        raise MalformedTileError(f"invalid tile {tile.path()}")
    if len(data) < tile.W * HASH_SIZE:
        raise MalformedTileError(f"data len {len(data)} too short for tile {tile.path()}")
    t1, start, end = _tile_for_index(tile.H, index)
    if tile.L != t1.L or tile.N != t1.N or tile.W < t1.W:
        raise MalformedTileError(f"index {index} is in {t1.path()} not {tile.path()}")
    return _tile_hash(data[start:end])


def new_tiles(h: int, old_size: int, new_size: int) -> list[Tile]:
    """The tiles of height ``h`` to publish when the tree grows from ``old_size`` to ``new_size``."""
    if h <= 0:
        raise ValueError(f"invalid tile height {h}")
    tiles = []
    level = 0
    while new_size >> (h * level) > 0:
        old_n = old_size >> (h * level)
        new_n = new_size >> (h * level)
        for n in range(old_n >> h, new_n >> h):
            tiles.append(Tile(h, level, n, 1 << h))
        n = new_n >> h
        max_w = new_n - (n << h)
        min_w = max(1, old_n - (n << h))
        for w in range(min_w, max_w + 1):
            tiles.append(Tile(h, level, n, w))
        level += 1
    return tiles


def read_tile_data(tile: Tile, read: HashReader) -> bytes:
    """A hash tile's bytes: its ``W`` hashes, read from the store, concatenated."""
    start = tile.N << tile.H
    return b"".join(
        _read(read, [stored_hash_index(tile.H * tile.L, start + i) for i in range(tile.W)])
    )


class TileReader(Protocol):
    """Reads tiles of one log (from a cache or a server) for a :class:`TileHashReader`."""

    @property
    def height(self) -> int:
        """The tile height (8 for a checksum database)."""
        ...

    def read_tiles(self, tiles: Sequence[Tile]) -> Sequence[bytes]:
        """The data of each tile, ``W * 32`` bytes each; not yet authenticated, so not yet cached."""
        ...

    def save_tiles(self, tiles: Sequence[Tile], data: Sequence[bytes]) -> None:
        """Called once the tiles were checked against a signed tree: they may now be cached."""
        ...


def _tile_parent(t: Tile, k: int, n: int) -> Tile | None:
    """``t``'s ``k``-th ancestor tile in a tree of ``n`` records, or None when there is none."""
    level, num, w = t.L + k, t.N >> (k * t.H), 1 << t.H
    limit = n >> (level * t.H)
    if (num << t.H) + w >= limit:
        if num << t.H >= limit:
            return None
        w = limit - (num << t.H)
    return Tile(t.H, level, num, w)


class TileHashReader:
    """A :data:`HashReader` over the tiles of one signed tree, authenticating every tile it reads.

    Every tile is checked against the tree's hash (directly, or through the
    tiles above it) before any hash in it is returned, so the hashes it
    returns are proven to be in ``tree``. Checked tiles are handed to
    ``reader.save_tiles``.
    """

    def __init__(self, tree: Tree, reader: TileReader) -> None:
        self.tree = tree
        self.reader = reader

    def __call__(self, indexes: Sequence[int]) -> list[Hash]:
        h, size = self.reader.height, self.tree.n
        if not indexes:
            return []
        order: dict[Tile, int] = {}  # tile -> position in tiles
        tiles: list[Tile] = []

        def want(tile: Tile) -> int:
            if tile not in order:
                order[tile] = len(tiles)
                tiles.append(tile)
            return order[tile]

        # The tiles that give the tree hash: when they match, they are authentic.
        stx = _subtree_index(0, size, [])
        stx_order = [want(_must(_tile_parent(_tile_for_index(h, x)[0], 0, size))) for x in stx]

        # The tiles of the indexes, each after the ancestors that authenticate it.
        index_order = []
        for x in indexes:
            if x >= stored_hash_index(0, size):
                raise MalformedTileError(f"index {x} is not in the tree of size {size}")
            tile = _tile_for_index(h, x)[0]
            k = 0
            while _must(_tile_parent(tile, k, size)) not in order:
                k += 1
            for kk in range(k - 1, -1, -1):
                p = _must(_tile_parent(tile, kk, size))
                if p.W != 1 << p.H:
                    raise AssertionError(f"tile {p.path()} has a parent but is not full")
                want(p)
            index_order.append(order[_must(_tile_parent(tile, 0, size))])

        data = list(self.reader.read_tiles(tiles))
        if len(data) != len(tiles):
            raise MalformedTileError(f"read {len(data)} tiles, want {len(tiles)}")
        for tile, d in zip(tiles, data):
            if len(d) != tile.W * HASH_SIZE:
                raise MalformedTileError(
                    f"tile {tile.path()} has {len(d)} bytes, want {tile.W * HASH_SIZE}"
                )

        # Authenticate the tree-hash tiles against the tree, then each other tile
        # against its parent (parents come before their children in tiles).
        th = hash_from_tile(tiles[stx_order[-1]], data[stx_order[-1]], stx[-1])
        for i in range(len(stx) - 2, -1, -1):
            th = node_hash(hash_from_tile(tiles[stx_order[i]], data[stx_order[i]], stx[i]), th)
        if th != self.tree.hash:
            raise MalformedTileError("downloaded inconsistent tile")
        for i in range(len(stx), len(tiles)):
            tile = tiles[i]
            p = _must(_tile_parent(tile, 1, size))
            parent_hash = hash_from_tile(p, data[order[p]], stored_hash_index(p.L * p.H, tile.N))
            if parent_hash != _tile_hash(data[i]):
                raise MalformedTileError("downloaded inconsistent tile")

        self.reader.save_tiles(tiles, data)
        return [hash_from_tile(tiles[j], data[j], x) for j, x in zip(index_order, indexes)]


def _must(tile: Tile | None) -> Tile:
    if tile is None:
        raise AssertionError("tile index arithmetic went wrong")
    return tile
