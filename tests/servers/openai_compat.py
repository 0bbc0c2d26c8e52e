"""A loopback OpenAI-compatible ``/chat/completions`` endpoint that writes training examples.

The test gives a ``writer(model, seed, n) -> [{"input", "output"}, ...]``;
the server answers each request with those examples as the assistant's JSON
content, the way a teacher model asked for ``{"examples": [...]}`` does::

    with OpenAICompatServer(writer) as api:
        api.misbehave("body", times=1)          # next answer: a body that is not JSON
        api.inject(Fault.error("/v1/chat/completions", 500, times=2))
        ...  # point the client at api.url + "/v1"
        assert len(api.requests) == 4

Misbehaviours (each for the next ``times`` answers, before routing):
``body`` (HTTP 200 whose body is not JSON), ``content`` (the message content
is not JSON), ``shape`` (JSON content without ``examples``). Status faults
(500, 429) come from :class:`tests.servers.Fault`. With ``api_key`` set,
requests without ``Authorization: Bearer <api_key>`` get 401.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from . import LoopbackServer, Request, Response

__all__ = ["OpenAICompatServer", "Writer"]

Writer = Callable[[str, int, int], list[dict[str, str]]]


class OpenAICompatServer(LoopbackServer):
    name = "openai"

    def __init__(self, writer: Writer, *, api_key: str | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.writer = writer
        self.api_key = api_key
        #: The JSON body of every /chat/completions request that reached routing.
        self.requests: list[dict[str, Any]] = []
        self._misbehaviour: list[str] = []
        self._mlock = threading.Lock()

    def misbehave(self, kind: str, *, times: int = 1) -> None:
        if kind not in ("body", "content", "shape"):
            raise ValueError(kind)
        with self._mlock:
            self._misbehaviour += [kind] * times

    def route(self, req: Request) -> Response:
        if req.method != "POST" or not req.path.endswith("/chat/completions"):
            return Response.json({"error": {"message": "not found"}}, 404)
        if self.api_key is not None and req.bearer() != self.api_key:
            return Response.json({"error": {"message": "invalid api key"}}, 401)
        body = json.loads(req.body)
        self.requests.append(body)
        with self._mlock:
            kind = self._misbehaviour.pop(0) if self._misbehaviour else None
        if kind == "body":
            return Response(200, {"Content-Type": "application/json"}, b'{"choices": [{"mess')
        user = body["messages"][-1]["content"]
        n = int(user.split("Generate ", 1)[1].split(" ", 1)[0]) if "Generate " in user else 8
        examples = self.writer(body["model"], int(body.get("seed", 0)), n)
        content = {
            None: json.dumps({"examples": examples}),
            "content": "Sure! Here are some examples: input -> output",
            "shape": json.dumps({"items": "none"}),
        }[kind]
        return Response.json(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
            }
        )
