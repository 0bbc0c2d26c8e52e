"""A loopback GitHub REST API: repositories, tags, releases and their assets.

What it serves (``$API`` is :attr:`GitHubServer.url`; shapes follow the
GitHub REST API, version 2022-11-28)::

    GET $API/repos/O/R                                  the repository
    GET $API/repos/O/R/releases?per_page=N&page=P       newest first; drafts only with a token
    GET $API/repos/O/R/releases/latest                  newest non-draft, non-prerelease
    GET $API/repos/O/R/releases/tags/TAG                one published release
    GET $API/repos/O/R/releases/ID
    GET $API/repos/O/R/releases/assets/ID               JSON; with Accept: application/octet-stream
                                                        a 302 to the CDN server
    GET $API/repos/O/R/tags?per_page=N&page=P           [{"name", "commit": {"sha"}}]
    GET $API/repos/O/R/commits/REF                      a commit (a branch, tag or sha, short or full);
                                                        Accept: application/vnd.github.sha gives the sha only
    GET $API/O/R/releases/download/TAG/NAME             browser_download_url: a 302 to the CDN
    GET $API/repos/O/R/releases/ID/assets               the assets of a release (drafts with a token)
    GET $API/repos/O/R/git/ref/tags/TAG                 one tag ref, or 404

and the write side (every write needs the token; 401 "Requires authentication"
without one)::

    POST   $API/repos/O/R/releases                      create: 201; a draft gets no tag yet, a
                                                        published release tags target_commitish
    PATCH  $API/repos/O/R/releases/ID                   update: "draft": false publishes (and tags)
    DELETE $API/repos/O/R/releases/ID                   204
    DELETE $API/repos/O/R/releases/assets/ID            204
    POST   $API/repos/O/R/git/refs                      {"ref": "refs/tags/T", "sha"}: 201
    POST   $UPLOADS/repos/O/R/releases/ID/assets?name=N[&label=L]
                                                        the raw bytes (Content-Type required): 201

``$UPLOADS`` is a second loopback server (:attr:`GitHubServer.uploads`), the
``uploads.github.com`` of a release's ``upload_url``
(``$UPLOADS/repos/O/R/releases/ID/assets{?name,label}``). Errors are GitHub's
422 "Validation Failed" with an ``errors`` list (``already_exists`` for a
second asset of one name, a second published release of a tag, an existing
ref). With ``GhRepo.immutable`` (GitHub's immutable releases), a published
release's assets and tag are frozen: uploads and asset deletions answer 422
"Cannot upload assets to an immutable release", and its tag cannot be used by
another release. :meth:`GitHubServer.fail_uploads` breaks uploads the way
GitHub documents: a 502 that leaves an empty asset in state ``starter``; an
upload whose client hangs up before the whole body arrived leaves one too.

Lists are paginated with ``Link: <...&page=2>; rel="next", <...>; rel="last"``
(``per_page`` defaults to 30, at most 100). Every answer carries an
``ETag``; ``If-None-Match`` with it gets ``304 Not Modified``, which does not
count against the rate limit. ``x-ratelimit-{limit,remaining,used,reset,resource}``
go on every API answer; :meth:`GitHubServer.rate_limit` makes the budget small,
after which the API answers 403 (or 429) with ``x-ratelimit-remaining: 0`` until
the reset time. With ``token`` set, a wrong ``Authorization`` is 401 "Bad
credentials"; private repositories are 404 without the token, as on GitHub.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote

from . import CdnServer, LoopbackServer, Request, RequestLog, Response
from . import _Handler as _BaseHandler

__all__ = ["GhAsset", "GhRelease", "GhRepo", "GitHubServer", "GitHubUploads"]

_ids = itertools.count(1000)
_EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class GhAsset:
    name: str
    data: bytes
    id: int = field(default_factory=lambda: next(_ids))
    content_type: str = "application/octet-stream"
    digest: bool = True  # GitHub has listed "sha256:..." digests since 2025; older assets have none
    state: str = "uploaded"  # "starter": an upload that failed half-way (GitHub: "can be deleted")
    label: str | None = None

    @functools.cached_property
    def sha256(self) -> str:
        """The sha256 of ``data``, computed once (GitHub stores it; it does not hash per listing)."""
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class GhRelease:
    tag_name: str
    assets: list[GhAsset]
    draft: bool = False
    prerelease: bool = False
    created_at: datetime = _EPOCH
    published_at: datetime | None = _EPOCH
    target_commitish: str = "main"
    name: str = ""
    id: int = field(default_factory=lambda: next(_ids))
    body: str = ""
    immutable: bool = False  # published in a repository with immutable releases


@dataclass
class GhRepo:
    """A repository: commits (sha -> time), branches, tags and releases."""

    owner: str
    name: str
    private: bool = False
    default_branch: str = "main"
    commits: dict[str, datetime] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    releases: list[GhRelease] = field(default_factory=list)
    immutable: bool = False  # GitHub's "immutable releases" setting
    frozen_tags: set[str] = field(default_factory=set)  # tags of immutable releases, for ever
    _clock: datetime = _EPOCH

    def _tick(self) -> datetime:
        self._clock += timedelta(hours=1)
        return self._clock

    def commit(self, branch: str | None = None, when: datetime | None = None) -> str:
        """A new commit on ``branch`` (the default branch when omitted); returns its sha."""
        when = when or self._tick()
        sha = hashlib.sha1(
            f"{self.owner}/{self.name}/{len(self.commits)}/{when}".encode()
        ).hexdigest()
        self.commits[sha] = when
        self.branches[branch or self.default_branch] = sha
        return sha

    def tag(self, name: str, sha: str | None = None) -> str:
        """Tag ``sha`` (the default branch's head, or a new commit) as ``name``."""
        if sha is None:
            sha = self.branches.get(self.default_branch) or self.commit()
        self.tags[name] = sha
        return sha

    def release(
        self,
        tag: str,
        assets: dict[str, bytes],
        *,
        draft: bool = False,
        prerelease: bool = False,
        commit: str | None = None,
        digests: bool = True,
    ) -> GhRelease:
        """Publish a release of ``tag`` (a new commit unless given) with these assets.

        A draft has no tag yet, as on GitHub, and no ``published_at``.
        """
        when = self._tick()
        rel = GhRelease(
            tag_name=tag,
            assets=[GhAsset(n, d, digest=digests) for n, d in assets.items()],
            draft=draft,
            prerelease=prerelease,
            created_at=when,
            published_at=None if draft else when,
            name=tag,
        )
        if not draft:
            self.tag(tag, commit or self.commit(when=when))
            rel.immutable = self.immutable
            if self.immutable:
                self.frozen_tags.add(tag)
        self.releases.append(rel)
        return rel

    def resolve(self, ref: str) -> str | None:
        """A branch, a tag, or a full or unambiguous short commit sha."""
        sha = self.branches.get(ref) or self.tags.get(ref)
        if sha is None and len(ref) >= 7:
            hits = [s for s in self.commits if s.startswith(ref.lower())]
            sha = hits[0] if len(hits) == 1 else None
        return sha

    def published(self, tag: str) -> GhRelease | None:
        """The published (non-draft) release of ``tag``, if any."""
        return next((r for r in self.releases if r.tag_name == tag and not r.draft), None)


class _Handler(_BaseHandler):
    """The loopback handler, with the ``PATCH`` GitHub uses to update a release."""

    def do_PATCH(self) -> None:
        self._dispatch()


class GitHubUploads(LoopbackServer):
    """``uploads.github.com``: where a release's ``upload_url`` points; state is the API's."""

    name = "github-uploads"

    def __init__(self, api: GitHubServer) -> None:
        super().__init__(log=api.log)
        self.api = api

    def route(self, req: Request) -> Response:
        return self.api._upload(req)


class GitHubServer(LoopbackServer):
    """The GitHub REST API on loopback; asset downloads redirect to ``cdn``."""

    name = "github"

    def __init__(
        self, cdn: CdnServer, *, token: str | None = None, log: RequestLog | None = None
    ) -> None:
        super().__init__(log=log if log is not None else cdn.log)
        self.cdn = cdn
        self.token = token
        self.repos: dict[tuple[str, str], GhRepo] = {}
        self._limit = 5000
        self._remaining: int | None = None
        self._reset_at = 0.0
        self._limit_status = 403
        self._anonymous_only = False
        self.uploads = GitHubUploads(self)
        self._upload_ok = 0  # uploads that may still succeed before the failures start
        self._upload_failures = 0
        self._upload_status = 502

    def start(self) -> GitHubServer:
        super().start()
        assert self._httpd is not None
        self._httpd.RequestHandlerClass = _Handler  # no request has arrived yet
        self.uploads.start()
        return self

    def stop(self) -> None:
        self.uploads.stop()
        super().stop()

    def fail_uploads(self, after: int = 0, *, times: int = 1, status: int = 502) -> None:
        """Let ``after`` more uploads succeed, then fail ``times`` of them with ``status``.

        Each failed upload leaves what GitHub documents for an upstream failure:
        an asset of that name in state ``starter`` holding the bytes received
        so far (here half of them), which must be deleted before the name can
        be uploaded again.
        """
        with self._lock:
            self._upload_ok, self._upload_failures, self._upload_status = after, times, status

    def repo(self, owner: str, name: str, *, private: bool = False) -> GhRepo:
        key = (owner, name)
        if key not in self.repos:
            self.repos[key] = GhRepo(owner, name, private=private)
        return self.repos[key]

    def rate_limit(
        self,
        remaining: int,
        reset_in: float = 3600,
        *,
        limit: int = 60,
        status: int = 403,
        anonymous_only: bool = False,
    ) -> None:
        """Allow ``remaining`` more API requests, then refuse until ``reset_in`` seconds from now."""
        with self._lock:
            self._limit, self._remaining = limit, remaining
            self._reset_at = time.time() + reset_in
            self._limit_status, self._anonymous_only = status, anonymous_only

    @property
    def remaining(self) -> int | None:
        """Requests left before the rate limit, or ``None`` when unlimited."""
        return self._remaining

    # ------------------------------------------------------------------

    def route(self, req: Request) -> Response:
        seg = req.segments
        if len(seg) >= 5 and seg[2:4] == ("releases", "download"):
            return self._browser_download(seg)
        if not seg or seg[0] != "repos" or len(seg) < 3:
            return _not_found()
        token = req.bearer()
        authed = self.token is not None and token == self.token
        if token is not None and not authed:
            return Response.json({"message": "Bad credentials", "status": "401"}, 401)
        limited = self._charge(req, authed)
        if limited is not None:
            return limited
        resp = self._api(req, authed)
        resp.headers.update(self._rate_headers())
        if resp.status == 200 and "ETag" not in resp.headers:
            etag = 'W/"' + hashlib.sha256(resp.body).hexdigest()[:40] + '"'
            resp.headers["ETag"] = etag
            if req.header("if-none-match") == etag:
                self._refund(authed)
                return Response(304, {"ETag": etag, **self._rate_headers()})
        return resp

    def _charge(self, req: Request, authed: bool) -> Response | None:
        if self._remaining is None or (self._anonymous_only and authed):
            return None
        if time.time() >= self._reset_at:
            self._remaining = self._limit
            self._reset_at = time.time() + 3600
        if self._remaining <= 0:
            msg = "API rate limit exceeded for 127.0.0.1."
            if not authed:
                msg += (
                    " (But here's the good news: Authenticated requests get a higher rate limit.)"
                )
            return Response.json(
                {"message": msg, "documentation_url": "https://docs.github.com/rest/rate-limit"},
                self._limit_status,
                self._rate_headers(),
            )
        self._remaining -= 1
        return None

    def _refund(self, authed: bool) -> None:
        if self._remaining is not None and not (self._anonymous_only and authed):
            self._remaining += 1

    def _rate_headers(self) -> dict[str, str]:
        remaining = self._limit if self._remaining is None else max(self._remaining, 0)
        reset = int(self._reset_at) if self._remaining is not None else int(time.time()) + 3600
        return {
            "x-ratelimit-limit": str(self._limit),
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-used": str(self._limit - remaining),
            "x-ratelimit-reset": str(reset),
            "x-ratelimit-resource": "core",
        }

    def _api(self, req: Request, authed: bool) -> Response:
        seg = req.segments
        repo = self.repos.get((seg[1], seg[2]))
        if repo is None or (repo.private and not authed):
            return _not_found()
        rest = seg[3:]
        if req.method not in ("GET", "HEAD"):
            if not authed:
                return _requires_auth()
            return self._write(req, repo, rest)
        if not rest:
            return Response.json(self._repo_json(repo))
        if rest == ("releases",):
            visible = [r for r in repo.releases if authed or not r.draft]
            visible.sort(key=lambda r: r.created_at, reverse=True)
            return self._page(req, [self._release_json(repo, r) for r in visible])
        if rest == ("releases", "latest"):
            cands = [r for r in repo.releases if not r.draft and not r.prerelease]
            if not cands:
                return _not_found()
            return Response.json(self._release_json(repo, max(cands, key=lambda r: r.created_at)))
        if len(rest) >= 3 and rest[:2] == ("releases", "tags"):
            tag = "/".join(rest[2:])
            for r in repo.releases:
                if r.tag_name == tag and not r.draft:
                    return Response.json(self._release_json(repo, r))
            return _not_found()
        if len(rest) == 3 and rest[:2] == ("releases", "assets"):
            return self._asset(req, repo, rest[2])
        if len(rest) == 2 and rest[0] == "releases":
            for r in repo.releases:
                if str(r.id) == rest[1] and (authed or not r.draft):
                    return Response.json(self._release_json(repo, r))
            return _not_found()
        if len(rest) == 3 and rest[0] == "releases" and rest[2] == "assets":
            rel = self._release_by_id(repo, rest[1], authed)
            if rel is None:
                return _not_found()
            return self._page(req, [self._asset_json(repo, rel, a) for a in rel.assets])
        if len(rest) >= 4 and rest[:3] == ("git", "ref", "tags"):
            name = "/".join(rest[3:])
            if name not in repo.tags:
                return _not_found()
            return Response.json(self._ref_json(repo, "refs/tags/" + name, repo.tags[name]))
        if rest == ("tags",):
            tags = sorted(repo.tags.items(), key=lambda kv: repo.commits[kv[1]], reverse=True)
            return self._page(req, [{"name": n, "commit": {"sha": s, "url": ""}} for n, s in tags])
        if len(rest) >= 2 and rest[0] == "commits":
            return self._commit(req, repo, "/".join(rest[1:]))
        return _not_found()

    def _commit(self, req: Request, repo: GhRepo, ref: str) -> Response:
        sha = repo.resolve(ref)
        if sha is None:
            return Response.json(
                {"message": f"No commit found for SHA: {ref}", "status": "422"}, 422
            )
        if req.header("accept") == "application/vnd.github.sha":
            return Response.text(sha)
        when = _iso(repo.commits[sha])
        who = {"name": "A U Thor", "email": "author@example.com", "date": when}
        return Response.json(
            {"sha": sha, "commit": {"author": who, "committer": who, "message": "commit"}}
        )

    def _release_by_id(self, repo: GhRepo, rid: str, authed: bool) -> GhRelease | None:
        return next(
            (r for r in repo.releases if str(r.id) == rid and (authed or not r.draft)), None
        )

    # the write side ------------------------------------------------------

    def _write(self, req: Request, repo: GhRepo, rest: tuple[str, ...]) -> Response:
        try:
            body = json.loads(req.body or b"{}") if req.method != "DELETE" else {}
        except ValueError:
            return Response.json({"message": "Problems parsing JSON"}, 400)
        if not isinstance(body, dict):
            return Response.json({"message": "Problems parsing JSON"}, 400)
        if req.method == "POST" and rest == ("releases",):
            return self._create_release(repo, body)
        if req.method == "PATCH" and len(rest) == 2 and rest[0] == "releases":
            rel = self._release_by_id(repo, rest[1], True)
            return _not_found() if rel is None else self._update_release(repo, rel, body)
        if req.method == "DELETE" and len(rest) == 2 and rest[0] == "releases":
            rel = self._release_by_id(repo, rest[1], True)
            if rel is None:
                return _not_found()
            repo.releases.remove(rel)  # the tag stays, as on GitHub
            return Response(204)
        if req.method == "DELETE" and len(rest) == 3 and rest[:2] == ("releases", "assets"):
            return self._delete_asset(repo, rest[2])
        if req.method == "POST" and rest == ("git", "refs"):
            return self._create_ref(repo, body)
        return _not_found()

    def _create_release(self, repo: GhRepo, body: dict[str, Any]) -> Response:
        tag = body.get("tag_name")
        if not isinstance(tag, str) or not tag:
            return _invalid("Release", "missing_field", "tag_name")
        target = body.get("target_commitish") or repo.default_branch
        draft = bool(body.get("draft", False))
        if not draft:
            problem = self._publishable(repo, tag, target)
            if problem is not None:
                return problem
        elif tag not in repo.tags and repo.resolve(target) is None:
            return _invalid("Release", "invalid", "target_commitish")
        when = repo._tick()
        rel = GhRelease(
            tag_name=tag,
            assets=[],
            draft=True,
            prerelease=bool(body.get("prerelease", False)),
            created_at=when,
            published_at=None,
            target_commitish=target,
            name=str(body.get("name") or tag),
            body=str(body.get("body") or ""),
        )
        if not draft:
            self._publish(repo, rel)
        repo.releases.append(rel)
        doc = self._release_json(repo, rel)
        return Response.json(doc, 201, {"Location": doc["url"]})

    def _update_release(self, repo: GhRepo, rel: GhRelease, body: dict[str, Any]) -> Response:
        tag = str(body.get("tag_name") or rel.tag_name)
        target = str(body.get("target_commitish") or rel.target_commitish)
        publish = rel.draft and body.get("draft") is False
        if rel.immutable and (
            tag != rel.tag_name or target != rel.target_commitish or body.get("draft") is True
        ):
            return Response.json(
                {"message": "Cannot modify the tag or state of an immutable release"}, 422
            )
        if publish:
            problem = self._publishable(repo, tag, target)
            if problem is not None:
                return problem
        rel.tag_name, rel.target_commitish = tag, target
        if "name" in body:
            rel.name = str(body["name"] or "")
        if "body" in body:
            rel.body = str(body["body"] or "")
        if "prerelease" in body:
            rel.prerelease = bool(body["prerelease"])
        if publish:
            self._publish(repo, rel)
        return Response.json(self._release_json(repo, rel))

    def _publishable(self, repo: GhRepo, tag: str, target: str) -> Response | None:
        """Why a release of ``tag`` at ``target`` cannot be published now, or ``None``."""
        if repo.published(tag) is not None:
            return _invalid("Release", "already_exists", "tag_name")
        if tag in repo.frozen_tags:
            return _invalid(
                "Release", "custom", "tag_name", "tag_name was used by an immutable release"
            )
        if tag not in repo.tags and repo.resolve(target) is None:
            return _invalid("Release", "invalid", "target_commitish")
        return None

    def _publish(self, repo: GhRepo, rel: GhRelease) -> None:
        """Publish a draft: tag ``target_commitish`` unless the tag exists; freeze if immutable."""
        if rel.tag_name not in repo.tags:
            sha = repo.resolve(rel.target_commitish)
            assert sha is not None  # _publishable checked
            repo.tags[rel.tag_name] = sha
        rel.draft = False
        rel.published_at = repo._tick()
        if repo.immutable:
            rel.immutable = True
            repo.frozen_tags.add(rel.tag_name)

    def _delete_asset(self, repo: GhRepo, asset_id: str) -> Response:
        for r in repo.releases:
            for a in r.assets:
                if str(a.id) == asset_id:
                    if r.immutable:
                        return Response.json(
                            {"message": "Cannot delete assets of an immutable release"}, 422
                        )
                    r.assets.remove(a)
                    return Response(204)
        return _not_found()

    def _create_ref(self, repo: GhRepo, body: dict[str, Any]) -> Response:
        ref, sha = body.get("ref"), body.get("sha")
        if not isinstance(ref, str) or not isinstance(sha, str):
            return Response.json({"message": "Invalid request."}, 422)
        kind, _, name = ref.removeprefix("refs/").partition("/")
        if not ref.startswith("refs/") or kind not in ("tags", "heads") or not name:
            return Response.json({"message": "Reference name is invalid"}, 422)
        if sha not in repo.commits:
            return Response.json({"message": "Object does not exist"}, 422)
        refs = repo.tags if kind == "tags" else repo.branches
        if name in refs:
            return Response.json({"message": "Reference already exists"}, 422)
        refs[name] = sha
        doc = self._ref_json(repo, ref, sha)
        return Response.json(doc, 201, {"Location": doc["url"]})

    def _upload(self, req: Request) -> Response:
        """``POST $UPLOADS/repos/O/R/releases/ID/assets?name=N``: the raw bytes become an asset."""
        seg = req.segments
        if (
            req.method != "POST"
            or len(seg) != 6
            or (seg[0], seg[3], seg[5])
            != (
                "repos",
                "releases",
                "assets",
            )
        ):
            return _not_found()
        token = req.bearer()
        if token is None:
            return _requires_auth()
        if token != self.token:
            return Response.json({"message": "Bad credentials", "status": "401"}, 401)
        with self._lock:
            repo = self.repos.get((seg[1], seg[2]))
            rel = None if repo is None else self._release_by_id(repo, seg[4], True)
            if repo is None or rel is None:
                return _not_found()
            name = req.query.get("name", "")
            if not name:
                return _invalid("ReleaseAsset", "missing_field", "name")
            ctype = req.header("content-type")
            if not ctype:
                return _invalid("ReleaseAsset", "missing_field", "content_type")
            if rel.immutable:
                return Response.json(
                    {"message": "Cannot upload assets to an immutable release"}, 422
                )
            if any(a.name == name for a in rel.assets):
                return _invalid("ReleaseAsset", "already_exists", "name")
            declared = req.header("content-length")
            if declared is not None and int(declared) != len(req.body):  # the client gave up
                rel.assets.append(GhAsset(name, req.body, content_type=ctype, state="starter"))
                return Response.json({"message": "Body shorter than Content-Length"}, 400)
            if self._upload_failures and not self._upload_ok:
                self._upload_failures -= 1
                half = req.body[: len(req.body) // 2]
                rel.assets.append(GhAsset(name, half, content_type=ctype, state="starter"))
                return Response.json({"message": "Bad Gateway"}, self._upload_status)
            if self._upload_failures:
                self._upload_ok -= 1
            asset = GhAsset(name, req.body, content_type=ctype, label=req.query.get("label"))
            rel.assets.append(asset)
            return Response.json(self._asset_json(repo, rel, asset), 201)

    def _asset(self, req: Request, repo: GhRepo, asset_id: str) -> Response:
        for r in repo.releases:
            for a in r.assets:
                if str(a.id) == asset_id:
                    if req.header("accept") == "application/octet-stream":
                        return Response.redirect(self.cdn.put(a.data, a.name, digest=a.sha256))
                    return Response.json(self._asset_json(repo, r, a))
        return _not_found()

    def _browser_download(self, seg: tuple[str, ...]) -> Response:
        repo = self.repos.get((seg[0], seg[1]))
        if repo is None or repo.private:
            return _not_found()
        tag, name = "/".join(seg[4:-1]), seg[-1]
        for r in repo.releases:
            if r.tag_name == tag and not r.draft:
                for a in r.assets:
                    if a.name == name:
                        return Response.redirect(self.cdn.put(a.data, a.name, digest=a.sha256))
        return _not_found()

    def _page(self, req: Request, items: list[dict[str, Any]]) -> Response:
        per_page = min(int(req.query.get("per_page") or 30), 100)
        page = max(int(req.query.get("page") or 1), 1)
        last = max((len(items) + per_page - 1) // per_page, 1)
        base = self.url + quote(req.path)

        def link(p: int, rel: str) -> str:
            return f'<{base}?per_page={per_page}&page={p}>; rel="{rel}"'

        links = []
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(page - 1, "prev"), link(1, "first")]
        headers = {"Link": ", ".join(links)} if links else {}
        return Response.json(items[(page - 1) * per_page : page * per_page], headers=headers)

    # JSON shapes ---------------------------------------------------------

    def _repo_json(self, repo: GhRepo) -> dict[str, Any]:
        return {
            "id": abs(hash((repo.owner, repo.name))) % 10**8,
            "name": repo.name,
            "full_name": f"{repo.owner}/{repo.name}",
            "private": repo.private,
            "default_branch": repo.default_branch,
            "url": f"{self.url}/repos/{repo.owner}/{repo.name}",
        }

    def _release_json(self, repo: GhRepo, r: GhRelease) -> dict[str, Any]:
        api = f"{self.url}/repos/{repo.owner}/{repo.name}"
        return {
            "url": f"{api}/releases/{r.id}",
            "assets_url": f"{api}/releases/{r.id}/assets",
            "html_url": f"{self.url}/{repo.owner}/{repo.name}/releases/tag/{r.tag_name}",
            "id": r.id,
            "node_id": f"RE_{r.id}",
            "tag_name": r.tag_name,
            "target_commitish": r.target_commitish,
            "name": r.name,
            "draft": r.draft,
            "prerelease": r.prerelease,
            "immutable": r.immutable,
            "created_at": _iso(r.created_at),
            "published_at": _iso(r.published_at) if r.published_at else None,
            "author": {"login": repo.owner},
            "assets": [self._asset_json(repo, r, a) for a in r.assets],
            "tarball_url": f"{api}/tarball/{r.tag_name}",
            "zipball_url": f"{api}/zipball/{r.tag_name}",
            "upload_url": (
                f"{self.uploads.url}/repos/{repo.owner}/{repo.name}/releases/{r.id}"
                "/assets{?name,label}"
            ),
            "body": r.body,
        }

    def _ref_json(self, repo: GhRepo, ref: str, sha: str) -> dict[str, Any]:
        api = f"{self.url}/repos/{repo.owner}/{repo.name}"
        return {
            "ref": ref,
            "node_id": "REF_" + hashlib.sha1(ref.encode()).hexdigest()[:12],
            "url": f"{api}/git/{ref}",
            "object": {"sha": sha, "type": "commit", "url": f"{api}/git/commits/{sha}"},
        }

    def _asset_json(self, repo: GhRepo, r: GhRelease, a: GhAsset) -> dict[str, Any]:
        return {
            "url": f"{self.url}/repos/{repo.owner}/{repo.name}/releases/assets/{a.id}",
            "browser_download_url": f"{self.url}/{repo.owner}/{repo.name}/releases/download/{r.tag_name}/{a.name}",
            "id": a.id,
            "node_id": f"RA_{a.id}",
            "name": a.name,
            "label": a.label,
            "state": a.state,
            "content_type": a.content_type,
            "size": len(a.data),
            "digest": "sha256:" + a.sha256 if a.digest else None,
            "download_count": 0,
            "created_at": _iso(r.created_at),
            "updated_at": _iso(r.created_at),
            "uploader": {"login": repo.owner},
        }


def _requires_auth() -> Response:
    return Response.json(
        {
            "message": "Requires authentication",
            "documentation_url": "https://docs.github.com/rest",
            "status": "401",
        },
        401,
    )


def _invalid(resource: str, code: str, field_name: str, message: str | None = None) -> Response:
    """GitHub's 422 "Validation Failed" with one error."""
    err = {"resource": resource, "code": code, "field": field_name}
    if message:
        err["message"] = message
    return Response.json(
        {
            "message": "Validation Failed",
            "errors": [err],
            "documentation_url": "https://docs.github.com/rest/releases",
            "status": "422",
        },
        422,
    )


def _not_found() -> Response:
    return Response.json(
        {
            "message": "Not Found",
            "documentation_url": "https://docs.github.com/rest",
            "status": "404",
        },
        404,
    )
