"""Training examples written by teacher models behind an OpenAI-compatible ``/chat/completions``.

Each call asks one model for ``examples_per_call`` input/output pairs that
follow the spec, with a fixed seed (the recipe's seed plus the call's index),
so the same spec asks the same questions. Calls run ``concurrency`` at a time
and their answers are assembled in call order, never in completion order.
A call is retried (with exponential backoff) on HTTP 408/409/425/429/5xx,
network errors, answers that are not the JSON asked for and answers with
fewer than ``examples_per_call`` examples (compile-by-training's rule: a
short answer is not a success; a longer one is cut to ``examples_per_call``);
other HTTP errors stop the build at once with what to fix. A call whose
answers stay short is replaced by a call with the next seed, at most
``max(16, calls needed)`` times per model. The examples are read from the
key ``examples``, ``data`` or ``items`` of the answer, the first holding a list.

The API key is ``$api_key_env`` (default ``OPENAI_API_KEY``), else
``$TEACHER_API_KEY``; ``$TEACHER_API_URL`` replaces the default url. Without
a key, a build goes on only when every answer it needs is cached
(:func:`preflight`, run before any work).

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
from .._cachedir import default_root
from .._errors import BuildError
from .._fs import canonical_json, write_atomic
from .._report import SILENT, Reporter
from .examples import Example
from .spec import TeacherModel, TeacherSpec

__all__ = ["DEFAULT_URL", "PROMPT_VERSION", "default_cache_dir", "preflight", "synthesize"]

DEFAULT_URL = "https://api.openai.com/v1"

#: compile-by-training's teacher prompt, word for word, and its version.
PROMPT_VERSION = "T1S4-v1-2026-05-10"
_SYSTEM = (
    "You synthesize tiny supervised datasets for finetuning small language "
    "models from a natural-language task specification. Return strict JSON "
    "with a top-level key 'examples'. Each example must be an object with "
    "string keys 'input' and 'output'."
)
_USER = (
    "Generate {n} diverse (input, output) example pairs that follow this "
    "specification.\n\n[SPEC]\n{spec}\n[END_SPEC]"
)
_RETRY_STATUS = frozenset({408, 409, 425, 429})


def default_cache_dir() -> Path:
    """``paw-teacher`` in the module cache's root (:func:`wgtpm._cachedir.default_root`)."""
    return default_root() / "paw-teacher"


def synthesize(
    spec_text: str,
    teacher: TeacherSpec,
    *,
    seed: int,
    cache_dir: Path,
    reporter: Reporter = SILENT,
    transport: httpx.BaseTransport | None = None,
    offline: bool = False,
) -> list[Example]:
    """The examples of every teacher model, in the order the models are listed.

    After each wave of calls, ``reporter.notice`` gets ``teacher MODEL: N/M examples``.
    """
    return [
        e
        for pool in synthesize_pools(
            spec_text,
            teacher,
            seed=seed,
            cache_dir=cache_dir,
            reporter=reporter,
            transport=transport,
            offline=offline,
        )
        for e in pool
    ]


def synthesize_pools(
    spec_text: str,
    teacher: TeacherSpec,
    *,
    seed: int,
    cache_dir: Path,
    reporter: Reporter = SILENT,
    transport: httpx.BaseTransport | None = None,
    offline: bool = False,
) -> list[list[Example]]:
    """The examples of each teacher model (one pool per model, in the order listed)."""
    key = api_key(teacher)
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
        caller = _Caller(client, pool, spec_text, teacher, seed, cache_dir, offline)
        return [caller.collect(model, reporter) for model in teacher.models]


def api_key(teacher: TeacherSpec) -> str:
    """``$api_key_env``, else ``$TEACHER_API_KEY``, else ``""``."""
    return os.environ.get(teacher.api_key_env) or os.environ.get("TEACHER_API_KEY") or ""


def teacher_url(teacher: TeacherSpec) -> str:
    """The endpoint's base url: the spec's, with ``$TEACHER_API_URL`` replacing the default."""
    if teacher.url == DEFAULT_URL and os.environ.get("TEACHER_API_URL"):
        return os.environ["TEACHER_API_URL"]
    return teacher.url


def preflight(spec_text: str, teacher: TeacherSpec, *, seed: int, cache_dir: Path) -> bool:
    """Check, before any work, that synthesis can run; ``True`` when it needs no network.

    Without an API key every answer must be in the cache; otherwise a
    :class:`BuildError` names the variables to set and the uncached models.
    """
    if api_key(teacher):
        return False
    missing = []
    for model in teacher.models:
        one = TeacherSpec(**{**teacher.__dict__, "models": (model,)})
        try:
            synthesize(spec_text, one, seed=seed, cache_dir=cache_dir, offline=True)
        except _NotCached:
            missing.append(model.name)
    if missing:
        raise BuildError(
            f"set {teacher.api_key_env} (or TEACHER_API_KEY) for teacher synthesis; "
            f"no complete cache for {', '.join(missing)}"
        )
    return True


class _NotCached(BuildError):
    """An answer that is not in the cache, in offline mode."""


class _Caller:
    def __init__(
        self,
        client: httpx.Client,
        pool: ThreadPoolExecutor,
        spec_text: str,
        teacher: TeacherSpec,
        seed: int,
        cache_dir: Path,
        offline: bool = False,
    ) -> None:
        self.offline = offline
        self.client = client
        self.pool = pool
        self.spec_text = spec_text
        self.teacher = teacher
        self.seed = seed
        self.cache_dir = cache_dir
        self.endpoint = teacher_url(teacher).rstrip("/") + "/chat/completions"

    def collect(self, model: TeacherModel, reporter: Reporter) -> list[Example]:
        """``model.examples`` distinct (by input) examples from ``model``, in call order."""
        per_call = self.teacher.examples_per_call
        needed = math.ceil(model.examples / per_call)
        budget = needed + max(16, needed)
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
        if self.offline:
            raise _NotCached(f"teacher {model}: call {index} is not cached")
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
            if len(examples) >= self.teacher.examples_per_call:
                examples = examples[: self.teacher.examples_per_call]
                self._cache_write(key, examples)
                return examples
            reason = (
                f"the answer held {len(examples)} of {self.teacher.examples_per_call} examples"
                if examples
                else "the answer held no JSON examples"
            )
        if reason.startswith("the answer held") and reason != "the answer held no JSON examples":
            return []  # short answers: the call is replaced by one with the next seed
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
        value = next(
            (value[k] for k in ("examples", "data", "items") if isinstance(value.get(k), list)), []
        )
    if not isinstance(value, list):
        return []
    return [
        Example(item["input"], item["output"])
        for item in value
        if isinstance(item, dict)
        and isinstance(item.get("input"), str)
        and isinstance(item.get("output"), str)
    ]
