"""The HTTP client ``huggingface_hub`` uses while wgtpm runs: timeouts and wgtpm's limits.

``huggingface_hub`` talks to the Hub's API with its own HTTP client, which by
default has no timeout. :func:`install` (called when the Hugging Face source
first talks to the Hub) gives it one with

- the timeout of :class:`~wgtpm.httpclient.HttpOptions` on every read;
- for API requests (``/api/`` paths), bodies of at most
  :data:`~wgtpm.httpclient.MAX_METADATA` bytes, asked for and counted
  without content encoding (``Accept-Encoding: identity``; an encoded
  answer is refused, so a compression bomb cannot get past the count),
  within ``HttpOptions.deadline`` seconds. Over the limit:
  :class:`~wgtpm.httpclient.ResponseTooLargeError`; too slow:
  :class:`~wgtpm.httpclient.DeadlineExceededError`.

Other requests (file downloads, which wgtpm makes itself anyway) pass as
they would. ``huggingface_hub`` is imported only by :func:`install`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from ..httpclient import (
    MAX_METADATA,
    DeadlineExceededError,
    HttpOptions,
    ResponseTooLargeError,
    TransportError,
)

__all__ = ["install"]

_LOCK = threading.Lock()
_INSTALLED = False


def install(opts: HttpOptions | None = None) -> None:
    """Make ``huggingface_hub`` use a client with wgtpm's timeout and limits (once per process)."""
    global _INSTALLED
    with _LOCK:
        if _INSTALLED:
            return
        import httpx2
        from huggingface_hub import set_client_factory
        from huggingface_hub.utils._http import hf_request_event_hook

        o = opts or HttpOptions()

        class _Capped(httpx2.SyncByteStream):
            def __init__(self, inner: Any, url: str) -> None:
                self.inner = inner
                self.url = url
                self.deadline = time.monotonic() + o.deadline

            def __iter__(self) -> Iterator[bytes]:
                n = 0
                for chunk in self.inner:
                    n += len(chunk)
                    if n > MAX_METADATA:
                        raise ResponseTooLargeError(self.url, MAX_METADATA)
                    if time.monotonic() > self.deadline:
                        raise DeadlineExceededError(self.url, o.deadline)
                    yield chunk

            def close(self) -> None:
                self.inner.close()

        class _Limits(httpx2.BaseTransport):
            def __init__(self) -> None:
                self.inner = httpx2.HTTPTransport()

            def handle_request(self, request: Any) -> Any:
                api = "/api/" in request.url.path
                if api:
                    request.headers["Accept-Encoding"] = "identity"
                resp = self.inner.handle_request(request)
                if not api:
                    return resp
                url = str(request.url)
                if resp.headers.get("content-encoding", "identity").lower() != "identity":
                    resp.close()
                    raise TransportError(url, "the Hub sent an encoded body that was not asked for")
                declared = resp.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > MAX_METADATA:
                    resp.close()
                    raise ResponseTooLargeError(url, MAX_METADATA)
                resp.stream = _Capped(resp.stream, url)
                return resp

            def close(self) -> None:
                self.inner.close()

        def factory() -> Any:
            return httpx2.Client(
                event_hooks={"request": [hf_request_event_hook]},
                follow_redirects=True,
                timeout=httpx2.Timeout(o.timeout, connect=min(10.0, o.timeout)),
                transport=_Limits(),
            )

        set_client_factory(factory)
        _INSTALLED = True
