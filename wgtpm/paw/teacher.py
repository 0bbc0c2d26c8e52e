"""Training examples written by teacher models behind an OpenAI-compatible ``/chat/completions``.

Each call asks one model for ``examples_per_call`` input/output pairs that
follow the spec, with a fixed seed (the recipe's seed plus the call's index),
so the same spec asks the same questions. Calls run ``concurrency`` at a time
and their answers are assembled in call order, never in completion order.
A call is retried (with exponential backoff) on HTTP 408/409/425/429/5xx,
network errors and answers that are not the JSON asked for; other HTTP errors
stop the build at once with what to fix.

Answers are cached by content: the sha256 of the canonical request (model,
messages, temperature, seed, response format, prompt version), under
``cache_dir/<2 hex>/<sha256>.json``, written atomically. A rebuild therefore
makes no requests and trains on the same examples; the build records the
examples' hash (:func:`wgtpm.paw.examples.examples_sha256`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from .. import _json
from .._errors import BuildError
from .._fs import canonical_json, write_atomic
from .._report import SILENT, Reporter
from .examples import Example
from .spec import TeacherModel, TeacherSpec

__all__ = ["PROMPT_VERSION", "default_cache_dir", "synthesize"]

PROMPT_VERSION = "wgtpm-teacher/1"
_SYSTEM = (
    "You write small supervised datasets for finetuning a small language model to follow a "
    'task specification. Answer with one JSON object whose key "examples" holds a list of '
    'objects with the string keys "input" and "output". Nothing else.'
)
_USER = (
    "Write {n} varied examples (input, and the exact output the specification demands) for "
    "this specification.\n\n<specification>\n{spec}\n</specification>"
)
_RETRY_STATUS = frozenset({408, 409, 425, 429})


def default_cache_dir() -> Path:
    """``$WGTPM_CACHE/paw-teacher``, else the user cache directory's ``wgtpm/paw-teacher``."""
    root = os.environ.get("WGTPM_CACHE")
    if root:
        return Path(root) / "paw-teacher"
    import platformdirs

    return Path(platformdirs.user_cache_dir("wgtpm")) / "paw-teacher"


def synthesize(
    spec_text: str,
    teacher: TeacherSpec,
    *,
    seed: int,
    cache_dir: Path,
    reporter: Reporter = SILENT,
    transport: httpx.BaseTransport | None = None,
) -> list[Example]:
    """The examples of every teacher model, in the order the models are listed.

    After each wave of calls, ``reporter.notice`` gets ``teacher MODEL: N/M examples``.
    """
    key = os.environ.get(teacher.api_key_env, "")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    limits = httpx.Limits(max_connections=teacher.concurrency)
    with (
        httpx.Client(
            headers=headers, timeout=teacher.timeout, limits=limits, transport=transport
        ) as client,
        ThreadPoolExecutor(
            max_workers=teacher.concurrency, thread_name_prefix="wgtpm-teacher"
        ) as pool,
    ):
        caller = _Caller(client, pool, spec_text, teacher, seed, cache_dir)
        out: list[Example] = []
        for model in teacher.models:
            out += caller.collect(model, reporter)
    return out


class _Caller:
    def __init__(
        self,
        client: httpx.Client,
        pool: ThreadPoolExecutor,
        spec_text: str,
        teacher: TeacherSpec,
        seed: int,
        cache_dir: Path,
    ) -> None:
        self.client = client
        self.pool = pool
        self.spec_text = spec_text
        self.teacher = teacher
        self.seed = seed
        self.cache_dir = cache_dir
        self.endpoint = teacher.url.rstrip("/") + "/chat/completions"

    def collect(self, model: TeacherModel, reporter: Reporter) -> list[Example]:
        """``model.examples`` distinct (by input) examples from ``model``, in call order."""
        per_call = self.teacher.examples_per_call
        budget = 2 * math.ceil(model.examples / per_call) + 8
        examples: list[Example] = []
        inputs: set[str] = set()
        index = 0
        while len(examples) < model.examples:
            wave = math.ceil((model.examples - len(examples)) / per_call)
            if index + wave > budget:
                raise BuildError(
                    f"teacher {model.name}: only {len(examples)} of {model.examples} distinct examples "
                    f"after {index} calls; the model repeats itself or ignores the format; "
                    "lower its examples count or raise the temperature"
                )
            for batch in self.pool.map(
                lambda i: self.call(model.name, i), range(index, index + wave)
            ):
                for example in batch:
                    if example.input not in inputs:
                        inputs.add(example.input)
                        examples.append(example)
            index += wave
            reporter.notice(
                f"teacher {model.name}: {min(len(examples), model.examples)}/{model.examples} examples"
            )
        return examples[: model.examples]

    def call(self, model: str, index: int) -> list[Example]:
        payload = {
            "model": model,
            "messages": [
                {"role": "system", "content": _SYSTEM},
                {
                    "role": "user",
                    "content": _USER.format(n=self.teacher.examples_per_call, spec=self.spec_text),
                },
            ],
            "temperature": self.teacher.temperature,
            "seed": self.seed + index,
            "response_format": {"type": "json_object"},
        }
        key = hashlib.sha256(
            canonical_json({"request": payload, "prompt": PROMPT_VERSION})
        ).hexdigest()
        cached = self._cache_read(key)
        if cached is not None:
            return cached
        reason = ""
        for attempt in range(self.teacher.retries + 1):
            if attempt:
                time.sleep(self.teacher.retry_backoff * 2 ** (attempt - 1))
            try:
                response = self.client.post(self.endpoint, json=payload)
            except httpx.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code in _RETRY_STATUS or response.status_code >= 500:
                reason = f"HTTP {response.status_code}"
                continue
            if response.status_code != 200:
                raise BuildError(
                    f"teacher {self.endpoint} answered HTTP {response.status_code} for model {model}: "
                    f"{response.text[:200]!r}; check the url, the model name and ${self.teacher.api_key_env}"
                )
            examples = parse_answer(response.content)
            if examples:
                self._cache_write(key, examples)
                return examples
            reason = "the answer held no JSON examples"
        raise BuildError(
            f"teacher {model}: call {index} failed {self.teacher.retries + 1} times (last: {reason}); "
            f"is {self.endpoint} up? raise [teacher] retries to wait longer"
        )

    def _cache_path(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def _cache_read(self, key: str) -> list[Example] | None:
        try:
            value = _json.loads(self._cache_path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        examples = _examples_of(value)
        return examples or None

    def _cache_write(self, key: str, examples: Sequence[Example]) -> None:
        path = self._cache_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps(
            {"examples": [{"input": e.input, "output": e.output} for e in examples]},
            ensure_ascii=False,
        )
        write_atomic(path, body.encode("utf-8"))


def parse_answer(body: bytes) -> list[Example]:
    """The examples in a ``/chat/completions`` response body; ``[]`` when it holds none."""
    try:
        content = _json.loads(body)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return []
    if not isinstance(content, str):
        return []
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[-1].rsplit("```", 1)[0]
    try:
        return _examples_of(_json.loads(text))
    except ValueError:
        return []


def _examples_of(value: Any) -> list[Example]:
    if isinstance(value, dict):
        value = value.get("examples")
    if not isinstance(value, list):
        return []
    return [
        Example(item["input"], item["output"])
        for item in value
        if isinstance(item, dict)
        and isinstance(item.get("input"), str)
        and isinstance(item.get("output"), str)
    ]
