"""The checksum database: Go's sumdb formats and a verifying client, with no I/O of its own.

A checksum database is an append-only log of the wgt.sum lines of every
module version its server has seen, kept as an RFC 6962 Merkle tree, so that
everyone who fetches ``mod@v1.2.0`` can prove they were told the same hashes.
The formats and paths are Go's (``golang.org/x/mod/sumdb``), byte for byte,
so that Go's own client could verify a wgtpm log.

Modules, each pure (no HTTP, no files):

- :mod:`~wgtpm.sumdb.note`: signed notes and Ed25519 keys (``name+hash+base64``);
- :mod:`~wgtpm.sumdb.tlog`: hashing, proofs, tiles, tree heads, records;
- :mod:`~wgtpm.sumdb.record`: what a record holds, and its lookup path;
- :mod:`~wgtpm.sumdb.client`: :class:`~wgtpm.sumdb.client.Client`, handed a
  :class:`~wgtpm.sumdb.client.ClientOps`.

The server, at ``$URL/sumdb/$NAME/``, serves (all ``GET``, all immutable
except ``latest`` and lookups of new versions):

- ``latest``: the signed tree head (a note over ``go.sum database tree\\nN\\nHASH\\n``);
- ``lookup/M@V``: record ``ID`` of module ``M`` version ``V`` (both escaped as
  :func:`wgtpm.module.escape_path` does), then a signed tree head holding it;
- ``tile/8/L/K[.p/W]``: hash tiles; ``tile/8/data/K[.p/W]``: record tiles.

Configuration (proposed; the adapters' engineer settles it): ``WGTSUMDB``
holds the database's verifier key and, optionally after a space, the URL of
the registry that serves it (``sum.example.com+1a2b3c4d+AW5...
https://registry.example.com``); the client then reads
``$URL/sumdb/$NAME/...``. Without a URL, ``$URL`` is ``https://`` and the
name's host (the name up to its first ``/``). Unset, no checksum database is
used. ``WGTNOSUMDB`` and ``WGTPRIVATE`` list module path patterns
(:func:`wgtpm.module.match_patterns`) that are never looked up: the caller
checks them before calling :meth:`~wgtpm.sumdb.client.Client.lookup`.

What the adapters (the next layer, over httpx and the cache folder) must do
for :class:`~wgtpm.sumdb.client.ClientOps`:

- ``read_remote(path)``: ``GET $URL/sumdb/$NAME`` + ``path`` (``path`` starts
  with ``/``); return the body on 200; raise a ``WgtpmError`` (``FetchError``,
  ``NotFoundError`` on 404/410) otherwise; bound the size of what it reads;
- ``read_config(file)`` / ``write_config(file, old, new)``: the one config file,
  ``NAME/latest`` (the latest signed tree head seen), kept in the cache
  folder; ``b""`` when absent; ``write_config`` takes a cross-process lock,
  compares the file with ``old`` and raises ``SumdbConflictError`` if it
  differs, else writes ``new`` atomically (temporary file, rename);
- ``read_cache(file)`` / ``write_cache(file, data)``: files under
  ``$WGTPM_CACHE/sumdb/`` named ``NAME/lookup/M@V`` and ``NAME/tile/8/L/K``
  (escaped, so safe as paths); ``None`` when absent or unreadable; written
  atomically, failures only logged (the client writes only verified data);
- ``log(msg)``: a debug line;
- ``security_error(msg)``: print ``msg`` to stderr as it is, loudly; the
  client then raises :class:`~wgtpm.SumdbSecurityError` and the command must
  stop without writing anything.
"""
