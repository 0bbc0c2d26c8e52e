"""``HttpClient.send``, the write side that the publish targets use (a handler-function transport).

A write is sent once unless the caller says it may be repeated; a redirect is
answered, not followed (the token and the body stay where they were sent);
credentials go by origin; a failure names the method and shows no secret.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from wgtpm.httpclient import Credential, HttpClient, HttpOptions, TransportError
from wgtpm.publish._http import send

SECRET = "wgt_send_secret_token"
API = "https://reg.example"


class Handler:
    """Answers each request with the next of ``answers`` (a status or an exception), logging it."""

    def __init__(self, *answers: int | Exception) -> None:
        self.answers = list(answers)
        self.seen: list[httpx.Request] = []
        self.bodies: list[bytes] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        self.bodies.append(request.read())
        a = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(a, Exception):
            raise a
        if a in (301, 302, 307, 308):
            return httpx.Response(a, headers={"Location": "https://elsewhere.example/x"})
        return httpx.Response(a, json={"status": a, "error": f"said {SECRET}"})


def client(h: Handler) -> HttpClient:
    opts = HttpOptions(timeout=5, retries=2, backoff=0.001)
    return HttpClient(opts, transport=httpx.MockTransport(h))


CRED = Credential(API, "Authorization", f"Bearer {SECRET}")


@pytest.mark.parametrize(
    ("method", "retry", "tries"),
    [
        ("POST", None, 1),  # not idempotent: sent once
        ("PATCH", None, 1),
        ("POST", True, 3),  # the caller knows this one may be repeated
        ("PUT", None, 3),  # idempotent: retried
        ("DELETE", None, 3),
        ("PUT", False, 1),
    ],
)
def test_only_idempotent_writes_are_retried(method: str, retry: bool | None, tries: int) -> None:
    h = Handler(503, 429, 201)
    answer = send(client(h), method, f"{API}/a", content=b"abc", retry=retry)
    assert len(h.seen) == tries and h.bodies == [b"abc"] * tries
    assert answer.status == [503, 429, 201][tries - 1]
    assert answer.doc["status"] == answer.status


def test_a_streamed_body_is_sent_whole_again_on_each_try() -> None:
    def chunks() -> Iterator[bytes]:
        yield b"one "
        yield b"two"

    h = Handler(502, 200)
    hdrs = {"Content-Length": "7"}
    assert send(client(h), "PUT", f"{API}/f", content=chunks, headers=hdrs, retry=True).ok
    assert h.bodies == [b"one two", b"one two"]


def test_a_redirect_is_answered_not_followed_and_credentials_go_by_origin() -> None:
    h = Handler(307)
    answer = send(client(h), "POST", f"{API}/a", json={}, credentials=[CRED])
    assert answer.status == 307 and len(h.seen) == 1
    assert h.seen[0].headers["authorization"] == f"Bearer {SECRET}"
    h = Handler(200)
    send(client(h), "POST", "https://other.example/a", json={}, credentials=[CRED])
    assert "authorization" not in h.seen[0].headers


def test_a_failure_names_the_method_and_hides_the_secret() -> None:
    h = Handler(httpx.ConnectError(f"refused for {SECRET}"))
    with pytest.raises(TransportError) as err:
        send(client(h), "PATCH", f"{API}/a", json={}, credentials=[CRED], retry=True)
    text = str(err.value)
    assert text.startswith(f"PATCH {API}/a: ConnectError") and SECRET not in text
    assert len(h.seen) == 3  # 1 + the 2 retries the options allow
    answer = send(client(Handler(403)), "POST", f"{API}/a", json={})
    assert answer.status == 403 and SECRET not in answer.error
