"""Teacher synthesis against a loopback OpenAI-compatible server: retries, cache, the build."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paw.conftest import FAST_RECIPE, Notices, write_package
from tests.servers import Fault
from tests.servers.openai_compat import OpenAICompatServer
from wgtpm._errors import BuildError
from wgtpm.deps import MapResolver
from wgtpm.paw.build import build_program
from wgtpm.paw.examples import Example, examples_sha256
from wgtpm.paw.spec import TeacherModel, TeacherSpec
from wgtpm.paw.teacher import synthesize

COLOURS = ["red", "yellow", "green", "purple", "orange", "blue"]
FRUITS = {
    "red": "apple",
    "yellow": "banana",
    "green": "lime",
    "purple": "grape",
    "orange": "orange",
    "blue": "plum",
}


def writer(model: str, seed: int, n: int) -> list[dict[str, str]]:
    """Each call answers n examples; "big" never repeats an input, "small" does."""
    if model == "small":  # overlapping colours from call to call
        return [
            {"input": c, "output": FRUITS[c]} for c in (COLOURS[(seed + i) % 6] for i in range(n))
        ]
    ks = range(seed * n, seed * n + n)
    return [{"input": f"{COLOURS[k % 6]} {k}", "output": FRUITS[COLOURS[k % 6]]} for k in ks]


@pytest.fixture
def api() -> Iterator[OpenAICompatServer]:
    with OpenAICompatServer(writer) as server:
        yield server


def _teacher(api: OpenAICompatServer, **kw: object) -> TeacherSpec:
    options: dict[str, object] = {
        "url": api.url + "/v1",
        "models": (TeacherModel("big", 6),),
        "examples_per_call": 3,
        "concurrency": 4,
        "retries": 3,
        "retry_backoff": 0.0,
        "timeout": 10.0,
    }
    options.update(kw)
    return TeacherSpec(**options)  # type: ignore[arg-type]


def test_examples_come_in_call_order_and_are_cached(
    api: OpenAICompatServer, tmp_path: Path
) -> None:
    teacher = _teacher(api, models=(TeacherModel("big", 6), TeacherModel("small", 4)))
    notices = Notices()
    first = synthesize(
        "Map colours to fruit.", teacher, seed=7, cache_dir=tmp_path, reporter=notices
    )
    assert first[:6] == [
        Example(f"{COLOURS[k % 6]} {k}", FRUITS[COLOURS[k % 6]]) for k in range(21, 27)
    ]
    # "small" repeats colours across calls: duplicates are dropped, more calls are made.
    assert [e.input for e in first[6:]] == ["yellow", "green", "purple", "orange"]
    assert {r["model"] for r in api.requests} == {"big", "small"}
    assert sorted(r["seed"] for r in api.requests if r["model"] == "big") == [7, 8]
    assert all(r["response_format"] == {"type": "json_object"} for r in api.requests)
    assert "teacher big: 6/6 examples" in notices.lines
    # A rerun is answered from the cache: the same examples, no request.
    count = len(api.requests)
    again = synthesize("Map colours to fruit.", teacher, seed=7, cache_dir=tmp_path)
    assert again == first and len(api.requests) == count
    assert examples_sha256(again) == examples_sha256(first)


def test_retries_on_500_and_malformed_answers(api: OpenAICompatServer, tmp_path: Path) -> None:
    api.inject(Fault.error("/v1/chat/completions", 500, times=2))
    api.misbehave("body")
    api.misbehave("content")
    api.misbehave("shape")
    examples = synthesize(
        "spec",
        _teacher(api, concurrency=1, retries=5),
        seed=0,
        cache_dir=tmp_path,
    )
    assert len(examples) == 6
    assert len(api.log.where(status=500)) == 2
    assert len(api.requests) == 2 + 3  # three malformed answers, then the two good ones


def test_gives_up_after_the_retries(api: OpenAICompatServer, tmp_path: Path) -> None:
    api.inject(Fault.error("/v1/chat/completions", 503, times=-1))
    with pytest.raises(BuildError, match=r"call \d failed 3 times \(last: HTTP 503\)"):
        synthesize("spec", _teacher(api, retries=2), seed=0, cache_dir=tmp_path)


def test_auth_errors_stop_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with OpenAICompatServer(writer, api_key="sk-right") as api:
        monkeypatch.setenv("TEACHER_KEY", "sk-wrong")
        with pytest.raises(BuildError, match=r"answered HTTP 401 .*\$TEACHER_KEY"):
            synthesize(
                "spec",
                _teacher(api, api_key_env="TEACHER_KEY"),
                seed=0,
                cache_dir=tmp_path,
            )
        # the first wave's two calls, neither tried again (retries=3 would make up to 8);
        # the second may be cancelled before it starts once the first has failed
        assert 1 <= len(api.log) <= 2
        assert all(s.status == 401 for s in api.log)
        monkeypatch.setenv("TEACHER_KEY", "sk-right")
        assert (
            len(
                synthesize(
                    "spec",
                    _teacher(api, api_key_env="TEACHER_KEY"),
                    seed=0,
                    cache_dir=tmp_path,
                )
            )
            == 6
        )
        assert all(
            s.header("authorization") == "Bearer sk-right" for s in api.log.where(status=200)
        )


def test_a_teacher_that_repeats_itself_is_an_error(tmp_path: Path) -> None:
    same = [{"input": "same", "output": "x"}]
    with (
        OpenAICompatServer(lambda m, s, n: same * n) as api,
        pytest.raises(BuildError, match=re.escape("only 1 of 6 distinct examples")),
    ):
        synthesize("spec", _teacher(api), seed=0, cache_dir=tmp_path)


def test_teacher_build(
    api: OpenAICompatServer, tmp_path: Path, resolver: MapResolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    teacher = f"""
[teacher]
url = "{api.url}/v1"
models = [{{ name = "small", examples = 4 }}]
examples_per_call = 2
concurrency = 2
retry_backoff = 0.0
"""
    spec = write_package(
        tmp_path / "pkg", spec_extra=teacher, recipe=FAST_RECIPE.replace("steps = 150", "steps = 3")
    )
    text = spec.read_text().replace('examples = "fruit.jsonl"\n', "")
    spec.write_text(text)
    api.inject(Fault.error("/v1/chat/completions", 500, times=1))
    api.misbehave("body")
    cache = tmp_path / "teacher-cache"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("TEACHER_API_KEY", raising=False)
    with pytest.raises(BuildError, match=r"set OPENAI_API_KEY \(or TEACHER_API_KEY\)"):
        build_program(spec, tmp_path / "a.paw", resolver, name="fruit", teacher_cache=cache)
    assert not api.requests  # the preflight stops before any work
    monkeypatch.setenv("TEACHER_API_KEY", "sk-test")
    first = build_program(spec, tmp_path / "a.paw", resolver, name="fruit", teacher_cache=cache)
    meta = json.loads(__import__("zipfile").ZipFile(first).read("meta.json"))
    recorded = meta["compile_by_training"]["examples"]
    assert recorded["count"] == 4 and recorded["teacher"] == [{"model": "small", "examples": 4}]
    requests = len(api.requests)
    monkeypatch.delenv("TEACHER_API_KEY")  # a complete cache needs no key
    second = build_program(spec, tmp_path / "b.paw", resolver, name="fruit", teacher_cache=cache)
    assert len(api.requests) == requests  # every answer came from the cache
    assert second.read_bytes() == first.read_bytes()


def test_a_short_answer_is_retried_then_replaced(tmp_path: Path) -> None:
    def short_for_seed_0(model: str, seed: int, n: int) -> list[dict[str, str]]:
        return writer(model, seed, 1 if seed == 0 else n + 1)

    with OpenAICompatServer(short_for_seed_0) as api:
        got = synthesize("spec", _teacher(api, retries=1), seed=0, cache_dir=tmp_path)
    seeds = [r["seed"] for r in api.requests]
    assert seeds.count(0) == 2  # one retry, then the call gives up its slot
    assert len(got) == 6 and all(not e.input.startswith("red 0") for e in got)
    # answers longer than examples_per_call are cut to it (4 -> 3 per call)
    assert len({e.input for e in got}) == 6
