"""Fetch module versions into the cache, verifying every byte on the way.

:class:`Fetcher` sits between the sources (which say where things are) and
the cache (which stores them). For each module version it

1. gets the wgt.mod and checks it against the ``/wgt.mod`` line of wgt.sum;
2. gets the index, parses it (safe paths, no case collisions), checks its h1
   against the module line of wgt.sum and that its ``wgt.mod`` entry hashes
   to the wgt.mod from step 1;
3. downloads each file (all of them, or those matching ``select`` globs) to
   ``tmp/<sha256>.partial``, hashing while it streams, resuming with HTTP
   Range after a cut, and renames it into ``blobs/`` only when size and
   sha256 match the index (after an fsync); then links it into the module
   tree. A file of :data:`RANGED_MIN` bytes or more comes as parallel ranges
   written in place, each range resumable on its own (:class:`_Ranges`), and
   is hashed in order as the ranges fill it.

Hashes that wgt.sum does not have yet are handed to a :class:`SumChecker`,
which records them (``wgtpm get``) or refuses (``-mod=readonly``). Checking
new hashes against the checksum database (``WGTSUMDB``) is the checker's
business too: the project's ledger is handed a verifier for that
(:mod:`wgtpm.modload.fetch`), so this package never talks to the database.

One concept a module, each importing only those above it in this list:

- ``_options``: what a fetcher is told (:class:`FetchOptions`, :class:`SumChecker`,
  :class:`TrustHook`, :func:`matches`);
- ``_unit``: a file to fetch (``VersionFile``: a module version and its index
  entry) and one module version's download under way (``Unit``: its progress);
- ``_metadata``: version lists, wgt.mod files and indexes, verified (``Metadata``);
- ``_partial``: a partial file, hashed as it is written;
- ``_transfer``: one transfer of a byte range, with the one retry policy and the
  one minimum-rate rule;
- ``_ranges``: a file filled in place as parallel ranges, with their journals, and
  hashed in order;
- ``_ranged``: ranged downloads and their pacing (how many connections);
- ``_jobs``: tasks run on a few threads (``run_all``), files in two lanes by size
  (``run_files``);
- ``_early``: the early start of the files a source knows before its index;
- ``_fetcher``: fetching and orchestration (:class:`Fetcher`).

The limits below are read from this package at each use, so that a test or a
benchmark may turn them (``modfetch.RANGED_MIN = 16 << 20``).
"""

from __future__ import annotations

import time as time  # the clock of the pace (tests turn modfetch.time.monotonic)

from ._early import Early as _Early  # noqa: F401
from ._fetcher import Fetcher
from ._jobs import run_all as _run_all  # noqa: F401
from ._options import FetchOptions, SumChecker, TrustHook, matches
from ._partial import ByteQueue as _ByteQueue  # noqa: F401
from ._ranged import Pace as _Pace  # noqa: F401
from ._ranges import Ranges as _Ranges  # noqa: F401

# The names marked F401 are internal ones the tests reach for (modfetch._Ranges, ...).
__all__ = ["FetchOptions", "Fetcher", "SumChecker", "TrustHook", "matches"]


CHUNK = 1 << 20
#: Bytes written between background fsyncs of a large download, so that the fsync
#: before the rename (on the critical path) has at most this much left to flush.
SYNC_EVERY = 8 << 20
#: Files up to this size are written and hashed by the receiving thread itself: a
#: writer thread (overlapping hashing with receiving) pays off only for large files.
INLINE_MAX = 4 << 20
#: Received bytes that may wait for the writer thread of one file (or range): the bound
#: on its memory whatever the file's size and however the source reads (64 KiB from
#: HTTP, 1 MiB from ``file://`` and from range files being merged).
QUEUE_BYTES = 32 << 20
#: Files at least this large come as parallel ranges from a server that honours Range
#: (one connection is often capped well below the line's speed).
RANGED_MIN = 32 << 20
#: Files smaller than :data:`RANGED_MIN` come on this many times ``jobs`` threads, in a
#: lane of their own beside the large files' ``jobs`` (``_jobs.run_files``): their time
#: is round trips, not bytes.
SMALL_JOBS = 2
#: The smallest range (ranges are whole MiB; ``FetchOptions.ranges`` at most per file).
RANGE_MIN = 8 << 20
#: Connections a ranged file starts with; the rest come once each is slower than
#: :data:`RANGE_SLOW` bytes a second over :data:`PACE_WINDOW` seconds (see ``_Pace``).
RANGES_FIRST = 1
ALL_RANGES = 1 << 30  # "as many as there are ranges left", to widen()
#: A ranged file whose first range is answered this many seconds or more after it was
#: asked (its connect and redirects included) comes from a far server: the other ranges
#: start then, without a pace window, since one connection over a long round trip
#: seldom carries the line (a loopback or LAN server answers within a few ms).
FAR_ANSWER = 0.03
RANGE_SLOW = 128 << 20
PACE_WINDOW = 0.1
#: A window this many times :data:`PACE_WINDOW` long says this process stalled (the
#: hasher, which ticks the pace about every ``PACE_WINDOW`` while it waits, did not
#: run); one in which each connection still brought half of :data:`RANGE_SLOW` or
#: more says nothing of the line.
PACE_STALE = 2.5
#: Bytes read back from the page cache per hash update while ranges fill a file.
HASH_READ = 4 << 20
#: Bytes of a range go into memory (:mod:`wgtpm._direct`) only while the hash is at
#: most this far behind them; further ahead, they wait in the page cache.
LEAD = 32 << 20
