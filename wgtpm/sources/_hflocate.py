"""Small LFS files of a Hugging Face repository, downloaded from where their redirect
leads, the redirects asked ahead (:class:`~wgtpm.httpclient.Locator`).

An LFS file's ``resolve`` URL answers with a redirect to a CDN on another host, so each
small file costs two round trips; for files this small the round trips, not the
bytes, take the time. Of each small LFS file the fetcher asks for, the redirects of the
next :data:`LOCATE_AHEAD` of the commit's tree (in the order the fetcher asks: sorted)
are asked meanwhile on :data:`LOCATE_JOBS` threads, so the next file's API round trip
overlaps this file's transfer (issue 30: 500 LFS files of 10 KB went from 0.52x
snapshot_download's time to 0.35-0.40x). Only a tree listed already is looked at: no
request is made to learn the order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..httpclient import Locator, forwarded
from ._base import FileRequest

if TYPE_CHECKING:
    from ..httpclient import HttpClient
    from ._hubapi import HubFile

__all__ = ["LOCATE_AHEAD", "LOCATE_JOBS", "LOCATE_MAX", "SmallLfs"]

LOCATE_MAX = 8 << 20  # LFS files smaller than this are located ahead
LOCATE_AHEAD = 32
LOCATE_JOBS = 16

#: (repo id, commit) -> the commit's tree, when it was listed already
TreeLookup = Callable[[str, str], "dict[str, HubFile] | None"]
#: (module path, commit, file) -> the request for the file's resolve URL
RequestFor = Callable[[str, str, str], FileRequest]


class SmallLfs:
    """Locates the redirects of a commit's small LFS files ahead of the fetcher."""

    def __init__(self, http: HttpClient, tree: TreeLookup, request: RequestFor) -> None:
        self._tree = tree
        self._request = request
        self._lock = threading.Lock()
        # (repo id, commit) -> its small LFS files in order, each one's place, and which
        # were asked ahead (1) so far
        self._small: dict[tuple[str, str], tuple[list[str], dict[str, int], bytearray]] = {}
        self._locator = Locator(http, LOCATE_JOBS)

    def located(self, rid: str, path: str, commit: str, name: str, req: FileRequest) -> FileRequest:
        """``req`` sent straight where its redirect leads, when ``name`` is a small LFS file
        whose redirect was asked ahead; the redirects of the next ones are asked meanwhile."""
        with self._lock:
            small = self._small.get((rid, commit))
            if small is None:
                tree = self._tree(rid, commit)
                if tree is None:
                    return req
                names = [
                    n
                    for n in sorted(tree)
                    if tree[n].lfs_sha256 is not None and (tree[n].size or 0) < LOCATE_MAX
                ]
                place = {n: i for i, n in enumerate(names)}
                small = self._small[(rid, commit)] = (names, place, bytearray(len(names)))
            names, place, asked = small
            i = place.get(name)
            if i is None:
                return req
            # a request (and its credential) only for the names not asked ahead yet
            todo = [j for j in range(i + 1, min(i + 1 + LOCATE_AHEAD, len(names))) if not asked[j]]
            for j in todo:
                asked[j] = 1
        nxt = (self._request(path, commit, names[j]) for j in todo)
        self._locator.ahead((r.url, r.headers) for r in nxt)
        location = self._locator.take(req.url)
        if location is None:
            return req
        return FileRequest(location, forwarded(req.headers, req.url, location))
