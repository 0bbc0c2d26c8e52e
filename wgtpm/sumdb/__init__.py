"""The checksum database: Go's sumdb formats and a verifying client, with no I/O of its own.

A checksum database is an append-only log of the wgt.sum lines of every
module version its server has seen, kept as an RFC 6962 Merkle tree, so that
everyone who fetches ``mod@v1.2.0`` can prove they were told the same hashes.
The formats and paths are Go's (``golang.org/x/mod/sumdb``), byte for byte,
so that Go's own client could verify a wgtpm log.

Modules, pure (no HTTP, no files):

- :mod:`~wgtpm.sumdb.note`: signed notes and Ed25519 keys (``name+hash+base64``);
- :mod:`~wgtpm.sumdb.tlog`: hashing, proofs, tiles, tree heads, records;
- :mod:`~wgtpm.sumdb.record`: what a record holds, and its lookup path;
- :mod:`~wgtpm.sumdb.client`: :class:`~wgtpm.sumdb.client.Client`, handed a
  :class:`~wgtpm.sumdb.client.ClientOps`;

and one that does I/O: :mod:`~wgtpm.sumdb.remote`, the configuration, the
adapters over HTTP and the cache folder, and the check of new wgt.sum lines.

The server, at ``$URL/sumdb/$NAME/``, serves (all ``GET``, all immutable
except ``latest`` and lookups of new versions):

- ``latest``: the signed tree head (a note over ``go.sum database tree\\nN\\nHASH\\n``);
- ``lookup/M@V``: record ``ID`` of module ``M`` version ``V`` (both escaped as
  :func:`wgtpm.module.escape_path` does), then a signed tree head holding it;
- ``tile/8/L/K[.p/W]``: hash tiles; ``tile/8/data/K[.p/W]``: record tiles.

Configuration (:mod:`~wgtpm.sumdb.remote`, which has the details):
``WGTSUMDB`` is ``off`` (the default, also when unset), the database's
verifier key ``name+hash+base64``, or that key and, after a space, the URL
of the registry that serves it (``sum.example.com+1a2b3c4d+AW5...
https://registry.example.com``); the client then reads
``$URL/sumdb/$NAME/...``. Without a URL, the first ``WGTPROXY`` proxy that
serves ``/sumdb/$NAME/supported`` is used, else ``https://`` and the name's
host (the name up to its first ``/``). ``WGTNOSUMDB`` and ``WGTPRIVATE`` list
module path patterns (:func:`wgtpm.sources.hosts.match_private`) that are
never looked up. :class:`~wgtpm.sumdb.remote.SumdbCheck` checks each line
the project's wgt.sum ledger is about to record.

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
- ``security_error(msg)``: take note of ``msg``; the client then raises
  :class:`~wgtpm.SumdbSecurityError` carrying the same report, and the
  command stops without writing anything. (Library code does not print:
  :class:`~wgtpm.sumdb.remote.RemoteOps` keeps the report, and the command
  line prints the error, so the report is shown once, in full.)
"""
