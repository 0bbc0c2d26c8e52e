"""A loopback Hugging Face Hub, faithful enough for the real ``huggingface_hub`` client.

Point ``HfApi(endpoint=hf.url)`` (or ``HF_ENDPOINT``) at it. What it serves
(``REPO`` is ``owner/name``, ``REV`` a branch, tag, full or short commit, one
URL element with ``/`` written ``%2F``)::

    GET  /api/models/REPO[/revision/REV][?blobs=true][&expand=...]   model info with siblings
                                                                    (blobs: size, blobId, lfs)
    GET  /api/models/REPO/refs[?include_prs=1]                       branches, tags, converts
    GET  /api/models/REPO/tree/REV[/DIR]?recursive=&expand=&cursor=  files and folders, paginated
    GET  /api/models/REPO/commits/REV?p=N                            history, newest first, paginated
    HEAD /REPO/resolve/REV/PATH                                      metadata of one file
    GET  /REPO/resolve/REV/PATH                                      the file (Range works)

and the write side that ``HfApi.create_commit`` and ``HfApi.create_tag`` use
(every write needs the token: 401 without it)::

    POST /api/models/REPO/preupload/REV        {"files": [{path, sample, size}]} -> uploadMode
                                               ("lfs" by .gitattributes pattern or size >= 10 MB,
                                               else "regular"), shouldIgnore, and the oid a file
                                               already has at REV (sha256 for LFS, git blob id else)
    POST /REPO.git/info/lfs/objects/batch      the git-lfs batch API, "basic" transfer: an upload
                                               action (a PUT to /lfs-upload/OID, signed, no token)
                                               and a verify action; objects the store holds
                                               already get no actions
    PUT  /lfs-upload/OID?sig=...               the bytes; 400 unless their sha256 and size are OID's
    POST /REPO.git/info/lfs/objects/verify     {"oid", "size"}: 200 once stored
    POST /api/models/REPO/commit/BRANCH        NDJSON: a "header" line ({"summary", "description",
                                               "parentCommit"}), then "file" (base64), "lfsFile",
                                               "deletedFile", "deletedFolder" lines; 412 when
                                               parentCommit is not the branch's head; 422 for an
                                               LFS object never uploaded
    POST /api/models/REPO/tag/REV              {"tag", "message"}: 409 when the tag exists
    POST /api/validate-yaml                    a README's metadata block; 400 when it is not YAML

The loopback speaks the LFS protocol, not Xet: tests that upload set
``huggingface_hub.constants.HF_HUB_DISABLE_XET`` so that the client does too.

Resolve answers carry ``X-Repo-Commit`` (the commit REV resolved to) and
``ETag`` (the git blob oid for regular files, the sha256 for LFS files). An
LFS file answers ``302`` to the CDN server with ``X-Linked-Etag`` and
``X-Linked-Size``, as the Hub does. Errors carry ``X-Error-Code``
(``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``), which the client
maps to its exception classes. Private repositories need ``Authorization:
Bearer <token>``; without it they answer 401 ``RepoNotFound``.

Repositories are built in the test, commit by commit::

    repo = hf.repo("acme", "tiny")                     # one commit: .gitattributes
    c1 = repo.commit({"config.json": b"{}", "model.safetensors": weights})
    repo.tag("v0.1.0")
    repo.branch("dev")
    c2 = repo.commit({"config.json": b'{"x": 1}'}, branch="dev")
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import cached_property
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from . import CdnServer, LoopbackServer, Request, RequestLog, Response, serve_bytes

__all__ = ["HfBlob", "HfCommit", "HfRepo", "HuggingFaceServer"]

LFS_PATTERNS = (
    "*.safetensors",
    "*.bin",
    "*.gguf",
    "*.pt",
    "*.pth",
    "*.onnx",
    "*.paw",
    "*.h5",
    "*.msgpack",
)
GITATTRIBUTES = b"".join(
    p.encode() + b" filter=lfs diff=lfs merge=lfs -text\n" for p in LFS_PATTERNS
)
_EPOCH = datetime(2026, 3, 1, tzinfo=timezone.utc)
#: Files this large go to LFS whatever their name, as on the Hub.
LFS_THRESHOLD = 10 << 20


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


@dataclass(frozen=True)
class HfBlob:
    """A file's bytes and whether the repo stores it with LFS.

    The hashes are computed once per blob (the bytes never change), so that
    listing or serving a repository of a few hundred MB does not hash it all
    again on every request.
    """

    data: bytes
    lfs: bool

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @cached_property
    def pointer(self) -> bytes:
        return f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\nsize {len(self.data)}\n".encode()

    @cached_property
    def oid(self) -> str:
        """The git blob id (of the LFS pointer for LFS files), as git computes it."""
        body = self.pointer if self.lfs else self.data
        return hashlib.sha1(b"blob %d\x00" % len(body) + body).hexdigest()


@dataclass
class HfCommit:
    id: str
    parent: str | None
    files: dict[str, HfBlob]
    time: datetime
    title: str


@dataclass
class HfRepo:
    """A model repository: commits, branches and tags."""

    repo_id: str
    private: bool = False
    lfs_patterns: tuple[str, ...] = LFS_PATTERNS
    commits: dict[str, HfCommit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    created: datetime = _EPOCH

    def commit(
        self,
        files: dict[str, bytes | None],
        *,
        branch: str = "main",
        title: str | None = None,
        when: datetime | None = None,
    ) -> str:
        """Commit on top of ``branch``: ``None`` deletes a file. Returns the 40-hex commit id."""
        parent = self.branches.get(branch)
        tree = dict(self.commits[parent].files) if parent else {}
        for path, data in files.items():
            if data is None:
                tree.pop(path, None)
            else:
                lfs = any(
                    fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], p) for p in self.lfs_patterns
                )
                tree[path] = HfBlob(data, lfs)
        if when is None:
            last = max((c.time for c in self.commits.values()), default=self.created)
            when = last + timedelta(hours=1)
        title = title or f"Update {len(files)} files"
        h = hashlib.sha1(f"{parent}\n{title}\n{when.isoformat()}\n".encode())
        for path in sorted(tree):
            h.update(f"{path}\x00{tree[path].oid}\n".encode())
        sha = h.hexdigest()
        self.commits[sha] = HfCommit(sha, parent, tree, when, title)
        self.branches[branch] = sha
        return sha

    def branch(self, name: str, rev: str = "main") -> str:
        sha = self.resolve(rev)
        if sha is None:
            raise KeyError(rev)
        self.branches[name] = sha
        return sha

    def tag(self, name: str, rev: str = "main") -> str:
        sha = self.resolve(rev)
        if sha is None:
            raise KeyError(rev)
        self.tags[name] = sha
        return sha

    def resolve(self, rev: str) -> str | None:
        """A branch, a tag, a full commit id, or an unambiguous prefix of at least 7 hex digits."""
        if rev in self.branches:
            return self.branches[rev]
        if rev in self.tags:
            return self.tags[rev]
        if rev in self.commits:
            return rev
        if len(rev) >= 7:
            hits = [c for c in self.commits if c.startswith(rev)]
            if len(hits) == 1:
                return hits[0]
        return None

    def history(self, sha: str) -> list[HfCommit]:
        out = []
        cur: str | None = sha
        while cur is not None:
            c = self.commits[cur]
            out.append(c)
            cur = c.parent
        return out


class HuggingFaceServer(LoopbackServer):
    """The parts of the Hub API that model downloads use; LFS files redirect to ``cdn``."""

    name = "hf"

    def __init__(
        self,
        cdn: CdnServer,
        *,
        token: str | None = None,
        tree_page_size: int = 1000,
        commits_page_size: int = 50,
        log: RequestLog | None = None,
    ) -> None:
        super().__init__(log=log if log is not None else cdn.log)
        self.cdn = cdn
        self.token = token
        self.tree_page_size = tree_page_size
        self.commits_page_size = commits_page_size
        self.repos: dict[str, HfRepo] = {}
        self.lfs_store: dict[str, bytes] = {}  # sha256 -> bytes uploaded through the LFS API
        self.validated: list[str] = []  # README contents sent to /api/validate-yaml

    def repo(self, owner: str, name: str, *, private: bool = False) -> HfRepo:
        """The repository ``owner/name``, created (with a first commit of .gitattributes) if new."""
        rid = f"{owner}/{name}"
        if rid not in self.repos:
            r = HfRepo(rid, private=private)
            r.commit({".gitattributes": GITATTRIBUTES}, title="initial commit", when=_EPOCH)
            self.repos[rid] = r
        return self.repos[rid]

    # ------------------------------------------------------------------

    def route(self, req: Request) -> Response:
        seg = req.segments
        if req.method == "PUT" and len(seg) == 2 and seg[0] == "lfs-upload":
            return self._lfs_put(req, seg[1])  # a pre-signed storage URL: no token
        token = req.bearer()
        if token is not None and self.token is not None and token != self.token:
            return _err(401, "Unauthorized", "Invalid credentials in Authorization header")
        authed = token is not None and token == self.token
        if req.method == "POST" and not authed:
            return _err(401, "Unauthorized", "You must be authenticated to write")
        if req.method == "POST" and seg == ("api", "validate-yaml"):
            return self._validate_yaml(req)
        if req.method == "POST" and len(seg) == 6 and seg[1].endswith(".git"):
            repo = self._repo(seg[0], seg[1][: -len(".git")], authed)
            if repo is None:
                return _err(401, "RepoNotFound", "Repository not found")
            if seg[2:] == ("info", "lfs", "objects", "batch"):
                return self._lfs_batch(req, repo)
            if seg[2:] == ("info", "lfs", "objects", "verify"):
                return self._lfs_verify(req)
        if len(seg) >= 4 and seg[0] == "api" and seg[1] == "models":
            repo = self._repo(seg[2], seg[3], authed)
            if repo is None:
                return _err(401, "RepoNotFound", "Repository not found")
            return self._api(req, repo, seg[4:])
        if len(seg) >= 5 and seg[2] == "resolve" and req.method in ("GET", "HEAD"):
            repo = self._repo(seg[0], seg[1], authed)
            if repo is None:
                return _err(401, "RepoNotFound", "Repository not found")
            return self._resolve(req, repo, seg[3], "/".join(seg[4:]))
        return Response.text("Not Found", 404)

    def _repo(self, owner: str, name: str, authed: bool) -> HfRepo | None:
        repo = self.repos.get(f"{owner}/{name}")
        if repo is None or (repo.private and not authed):
            return None
        return repo

    def _api(self, req: Request, repo: HfRepo, rest: tuple[str, ...]) -> Response:
        if req.method == "POST":
            if len(rest) == 2 and rest[0] == "preupload":
                return self._preupload(req, repo, rest[1])
            if len(rest) == 2 and rest[0] == "commit":
                return self._commit(req, repo, rest[1])
            if len(rest) == 2 and rest[0] == "tag":
                return self._tag(req, repo, rest[1])
            return Response.text("Not Found", 404)
        if not rest or (len(rest) == 2 and rest[0] == "revision"):
            sha = repo.resolve(rest[1] if rest else "main")
            if sha is None:
                return _rev_not_found(rest[1])
            return Response.json(self._info(req, repo, sha))
        if rest == ("refs",):
            return Response.json(self._refs(req, repo))
        if len(rest) >= 2 and rest[0] == "tree":
            sha = repo.resolve(rest[1])
            if sha is None:
                return _rev_not_found(rest[1])
            return self._tree(req, repo, sha, "/".join(rest[2:]))
        if len(rest) == 2 and rest[0] == "commits":
            sha = repo.resolve(rest[1])
            if sha is None:
                return _rev_not_found(rest[1])
            return self._commits(req, repo, sha)
        return Response.text("Not Found", 404)

    def _info(self, req: Request, repo: HfRepo, sha: str) -> dict[str, Any]:
        c = repo.commits[sha]
        blobs = req.query.get("blobs", "").lower() in ("1", "true")
        siblings = []
        for path in sorted(c.files):
            b = c.files[path]
            s: dict[str, Any] = {"rfilename": path}
            if blobs:
                s.update(size=len(b.data), blobId=b.oid)
                if b.lfs:
                    s["lfs"] = {
                        "size": len(b.data),
                        "sha256": b.sha256,
                        "pointerSize": len(b.pointer),
                    }
            siblings.append(s)
        owner = repo.repo_id.split("/")[0]
        info: dict[str, Any] = {
            "_id": hashlib.md5(repo.repo_id.encode()).hexdigest()[:24],
            "id": repo.repo_id,
            "modelId": repo.repo_id,
            "author": owner,
            "sha": sha,
            "lastModified": _iso(c.time),
            "createdAt": _iso(repo.created),
            "private": repo.private,
            "disabled": False,
            "gated": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "library_name": None,
            "siblings": siblings,
            "usedStorage": sum(len(b.data) for b in c.files.values()),
        }
        expand = [v for k, v in _multi(req, "expand")] if "expand" in req.query else []
        if expand:
            info = {k: v for k, v in info.items() if k in ("_id", "id", *expand)}
        return info

    def _refs(self, req: Request, repo: HfRepo) -> dict[str, Any]:
        def refs(kind: str, d: dict[str, str]) -> list[dict[str, str]]:
            return [
                {"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": s}
                for n, s in sorted(d.items())
            ]

        out: dict[str, Any] = {
            "branches": refs("heads", repo.branches),
            "converts": [],
            "tags": refs("tags", repo.tags),
        }
        if req.query.get("include_prs"):
            out["pullRequests"] = []
        return out

    def _tree(self, req: Request, repo: HfRepo, sha: str, base: str) -> Response:
        c = repo.commits[sha]
        recursive = req.query.get("recursive", "").lower() in ("1", "true")
        expand = req.query.get("expand", "").lower() in ("1", "true")
        prefix = base + "/" if base else ""
        if base and not any(p.startswith(prefix) for p in c.files):
            return _err(404, "EntryNotFound", f"{base} does not exist on {sha}")
        dirs: set[str] = set()
        files: list[str] = []
        for path in sorted(c.files):
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix) :].split("/")
            for i in range(1, len(parts)):
                if recursive or i == 1:
                    dirs.add(prefix + "/".join(parts[:i]))
            if recursive or len(parts) == 1:
                files.append(path)
        entries: list[dict[str, Any]] = []
        for d in sorted(dirs):
            oid = hashlib.sha1(f"tree {sha} {d}".encode()).hexdigest()
            entries.append({"type": "directory", "oid": oid, "size": 0, "path": d})
        history = repo.history(sha)
        for path in files:
            b = c.files[path]
            e: dict[str, Any] = {"type": "file", "oid": b.oid, "size": len(b.data), "path": path}
            if b.lfs:
                e["lfs"] = {"oid": b.sha256, "size": len(b.data), "pointerSize": len(b.pointer)}
            if expand:
                last = next(h for h in reversed(history) if h.files.get(path) == b)
                e["lastCommit"] = {"id": last.id, "title": last.title, "date": _iso(last.time)}
            entries.append(e)
        return self._page(req, entries, "cursor", self.tree_page_size)

    def _commits(self, req: Request, repo: HfRepo, sha: str) -> Response:
        items = [
            {
                "id": c.id,
                "title": c.title,
                "message": c.title,
                "authors": [{"user": repo.repo_id.split("/")[0], "avatar": ""}],
                "date": _iso(c.time),
            }
            for c in repo.history(sha)
        ]
        return self._page(req, items, "p", self.commits_page_size)

    def _page(self, req: Request, items: list[dict[str, Any]], param: str, size: int) -> Response:
        start = int(req.query.get(param) or 0) * (size if param == "p" else 1)
        end = start + size
        headers = {}
        if end < len(items):
            query = {k: v for k, v in req.query.items() if k != param}
            query[param] = str(end // size if param == "p" else end)
            headers["Link"] = f'<{self.url}{quote(req.path)}?{urlencode(query)}>; rel="next"'
        return Response.json(items[start:end], headers=headers)

    def _resolve(self, req: Request, repo: HfRepo, rev: str, path: str) -> Response:
        sha = repo.resolve(rev)
        if sha is None:
            return _rev_not_found(rev)
        blob = repo.commits[sha].files.get(path)
        if blob is None:
            return _err(
                404, "EntryNotFound", f"{path} does not exist on {sha}", {"X-Repo-Commit": sha}
            )
        if blob.lfs:
            location = self.cdn.put(blob.data, path.rsplit("/", 1)[-1], digest=blob.sha256)
            return Response(
                302,
                {
                    "Location": location,
                    "X-Repo-Commit": sha,
                    "ETag": f'"{blob.sha256}"',
                    "X-Linked-Etag": f'"{blob.sha256}"',
                    "X-Linked-Size": str(len(blob.data)),
                    "Content-Type": "text/plain; charset=utf-8",
                },
                f"Found. Redirecting to {location}".encode(),
            )
        return serve_bytes(
            req,
            blob.data,
            {
                "X-Repo-Commit": sha,
                "ETag": f'"{blob.oid}"',
                "Content-Type": "text/plain; charset=utf-8",
            },
        )

    # the write side ------------------------------------------------------

    def _is_lfs(self, repo: HfRepo, path: str, size: int) -> bool:
        name = path.rsplit("/", 1)[-1]
        return size >= LFS_THRESHOLD or any(fnmatch.fnmatchcase(name, p) for p in repo.lfs_patterns)

    def _preupload(self, req: Request, repo: HfRepo, rev: str) -> Response:
        sha = repo.resolve(rev)
        if sha is None:
            return _rev_not_found(rev)
        body = _json_body(req)
        files = body.get("files") if isinstance(body, dict) else None
        if not isinstance(files, list):
            return _err(400, "BadRequest", "files must be a list")
        tree = repo.commits[sha].files
        out = []
        for f in files:
            path, size = f.get("path"), f.get("size")
            if not isinstance(path, str) or not isinstance(size, int):
                return _err(400, "BadRequest", "each file needs a path and a size")
            entry: dict[str, Any] = {
                "path": path,
                "uploadMode": "lfs" if self._is_lfs(repo, path, size) else "regular",
                "shouldIgnore": False,
            }
            have = tree.get(path)
            if have is not None:
                entry["oid"] = have.sha256 if have.lfs else have.oid
            out.append(entry)
        return Response.json({"files": out, "commitOid": sha})

    def _lfs_batch(self, req: Request, repo: HfRepo) -> Response:
        body = _json_body(req)
        if not isinstance(body, dict) or body.get("operation") != "upload":
            return _err(422, "BadRequest", "only the upload operation is supported")
        if "basic" not in (body.get("transfers") or ["basic"]):
            return _err(422, "BadRequest", "the basic transfer is the only one offered")
        objects = []
        base = f"{self.url}/{repo.repo_id}.git/info/lfs/objects"
        for o in body.get("objects") or []:
            oid, size = o.get("oid"), o.get("size")
            item: dict[str, Any] = {"oid": oid, "size": size, "authenticated": True}
            if self.lfs_store.get(str(oid)) is None or len(self.lfs_store[str(oid)]) != size:
                item["actions"] = {
                    "upload": {"href": f"{self.url}/lfs-upload/{oid}?sig={_sig(str(oid))}"},
                    "verify": {"href": f"{base}/verify"},
                }
            objects.append(item)
        return Response.json(
            {"transfer": "basic", "objects": objects},
            headers={"Content-Type": "application/vnd.git-lfs+json"},
        )

    def _lfs_put(self, req: Request, oid: str) -> Response:
        if req.query.get("sig") != _sig(oid):
            return Response.text("SignatureDoesNotMatch", 403)
        if hashlib.sha256(req.body).hexdigest() != oid:
            return Response.text("BadDigest: the bytes are not the object named", 400)
        self.lfs_store[oid] = req.body
        return Response(200, {"ETag": f'"{oid[:32]}"'})

    def _lfs_verify(self, req: Request) -> Response:
        body = _json_body(req)
        oid = body.get("oid") if isinstance(body, dict) else None
        data = self.lfs_store.get(str(oid))
        if data is None or len(data) != body.get("size"):
            return _err(404, "EntryNotFound", f"object {oid} was not uploaded")
        return Response.json({"success": True})

    def _commit(self, req: Request, repo: HfRepo, branch: str) -> Response:
        if branch not in repo.branches:
            return _rev_not_found(branch)
        try:
            lines = [json.loads(ln) for ln in req.body.splitlines() if ln.strip()]
        except ValueError:
            return _err(400, "BadRequest", "the commit payload is not NDJSON")
        if not lines or lines[0].get("key") != "header":
            return _err(400, "BadRequest", "the first line must be the header")
        header = lines[0].get("value") or {}
        parent = header.get("parentCommit")
        if parent is not None and parent != repo.branches[branch]:
            return _err(
                412,
                "PreconditionFailed",
                f"A commit has happened since. Please refresh and try again: the head of {branch} "
                f"is {repo.branches[branch]}, not {parent}",
            )
        files: dict[str, bytes | None] = {}
        head = repo.commits[repo.branches[branch]].files
        for ln in lines[1:]:
            key, value = ln.get("key"), ln.get("value") or {}
            path = value.get("path")
            if not isinstance(path, str) or not path:
                return _err(400, "BadRequest", f"a {key} line without a path")
            if key == "file":
                files[path] = base64.b64decode(value.get("content", ""))
            elif key == "lfsFile":
                data = self.lfs_store.get(str(value.get("oid")))
                if data is None:
                    return _err(422, "BadRequest", f"{path}: LFS object {value.get('oid')} unknown")
                files[path] = data
            elif key == "deletedFile":
                if path not in head:
                    return _err(404, "EntryNotFound", "A file with this name doesn't exist")
                files[path] = None
            elif key == "deletedFolder":
                files.update({p: None for p in head if p.startswith(path.rstrip("/") + "/")})
            else:
                return _err(400, "BadRequest", f"unknown line {key!r}")
        title = str(header.get("summary") or "") or None
        sha = repo.commit(files, branch=branch, title=title)
        return Response.json(
            {
                "success": True,
                "commitOid": sha,
                "commitUrl": f"{self.url}/{repo.repo_id}/commit/{sha}",
                "hookOutput": "",
                "pullRequestUrl": None,
            }
        )

    def _tag(self, req: Request, repo: HfRepo, rev: str) -> Response:
        sha = repo.resolve(rev)
        if sha is None:
            return _rev_not_found(rev)
        body = _json_body(req)
        tag = body.get("tag") if isinstance(body, dict) else None
        if not isinstance(tag, str) or not tag:
            return _err(400, "BadRequest", "tag is required")
        if tag in repo.tags:
            return _err(409, "Conflict", f"Tag {tag} already exists")
        repo.tags[tag] = sha
        return Response.json({"success": True})

    def _validate_yaml(self, req: Request) -> Response:
        import yaml

        body = _json_body(req)
        content = body.get("content") if isinstance(body, dict) else None
        if not isinstance(content, str):
            return _err(400, "BadRequest", "content is required")
        self.validated.append(content)
        if content.startswith("---"):
            end = content.find("\n---", 3)
            try:
                if end < 0:
                    raise yaml.YAMLError("the metadata block is not closed by ---")
                meta = yaml.safe_load(content[3:end])
                if meta is not None and not isinstance(meta, dict):
                    raise yaml.YAMLError("the metadata is not a mapping")
            except yaml.YAMLError as exc:
                return Response.json({"errors": [{"message": str(exc)}], "warnings": []}, 400)
        return Response.json({"errors": [], "warnings": []})


def _json_body(req: Request) -> Any:
    try:
        return json.loads(req.body or b"null")
    except ValueError:
        return None


def _sig(oid: str) -> str:
    return hashlib.sha256(b"loopback-lfs/" + oid.encode()).hexdigest()[:32]


def _multi(req: Request, key: str) -> list[tuple[str, str]]:
    return [(k, v) for k, v in parse_qsl(urlsplit(req.raw_path).query) if k == key]


def _err(status: int, code: str, message: str, extra: dict[str, str] | None = None) -> Response:
    return Response.json(
        {"error": message},
        status,
        {"X-Error-Code": code, "X-Error-Message": message, **(extra or {})},
    )


def _rev_not_found(rev: str) -> Response:
    return _err(404, "RevisionNotFound", f"Invalid rev id: {rev}")
