"""The .pawspec format: defaults, every key, and errors with positions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wgtpm._errors import ParseError
from wgtpm.paw.examples import Example, examples_sha256, read_jsonl
from wgtpm.paw.spec import Recipe, RuntimeSpec, TeacherModel, TeacherSpec, parse_spec

MINIMAL = 'spec = "Classify a message."\ninterpreter = "hf.co/Qwen/Qwen3-0.6B"\nexamples = "triage.jsonl"\n'


def test_minimal_spec_takes_the_prototype_defaults(tmp_path: Path) -> None:
    spec = parse_spec(MINIMAL, tmp_path / "triage.pawspec")
    assert spec.spec == spec.pseudo_program == "Classify a message."
    assert spec.examples == tmp_path / "triage.jsonl" and spec.teacher is None
    assert spec.recipe == Recipe()
    assert (
        spec.recipe.steps,
        spec.recipe.batch_size,
        spec.recipe.learning_rate,
        spec.recipe.lora_rank,
    ) == (100, 48, 2e-4, 64)
    assert (spec.recipe.lora_alpha, spec.recipe.quantization, spec.recipe.device) == (
        16.0,
        "Q4_0",
        "auto",
    )
    assert spec.runtime == RuntimeSpec() and spec.runtime.is_builtin
    assert spec.local_path(spec.interpreter) is None
    assert "device" not in spec.recipe.identity()


def test_every_key(tmp_path: Path) -> None:
    (tmp_path / "spec.md").write_text("  From a file.\n")
    text = """
spec_file = "spec.md"
pseudo_program = "  Short form.  "
interpreter = "./models/tiny"

[teacher]
url = "http://127.0.0.1:1/v1"
api_key_env = "KEY"
models = [{ name = "a", examples = 10 }, { name = "b", examples = 5 }]
examples_per_call = 5
temperature = 0.5
concurrency = 2
retries = 1
retry_backoff = 0
timeout = 9

[recipe]
target_examples = 12
lora_init = "random"
base_compiler = "paw-x"
steps = 3
batch_size = 4
micro_batch_size = 2
learning_rate = 1e-3
min_learning_rate = 0
warmup = 0.1
lora_rank = 8
lora_alpha = 16
target_modules = ["v_proj", "q_proj"]
max_length = 64
loss_chunk_size = 8
gradient_checkpointing = true
seed = 3
device = "cpu"
quantization = "F16"

[runtime]
id = "tiny"
interpreter = "acme/tiny"
base_model = "./tiny.gguf"
url = "https://example.com/tiny.gguf"
n_ctx = 512
display_name = "Tiny"
"""
    spec = parse_spec(text, tmp_path / "x.pawspec")
    assert spec.spec == "From a file." and spec.pseudo_program == "Short form."
    assert spec.local_path(spec.interpreter) == (tmp_path / "models" / "tiny").resolve()
    assert spec.examples is None
    assert spec.teacher == TeacherSpec(
        url="http://127.0.0.1:1/v1",
        api_key_env="KEY",
        models=(TeacherModel("a", 10), TeacherModel("b", 5)),
        examples_per_call=5,
        temperature=0.5,
        concurrency=2,
        retries=1,
        retry_backoff=0.0,
        timeout=9.0,
    )
    assert spec.recipe.target_modules == ("q_proj", "v_proj")  # canonical order
    assert spec.recipe.lora_alpha == 16.0 and isinstance(spec.recipe.lora_alpha, float)
    assert spec.recipe.gradient_checkpointing and spec.recipe.quantization == "F16"
    assert (spec.recipe.target_examples, spec.recipe.lora_init) == (12, "random")
    assert spec.recipe.base_compiler == "paw-x"
    assert spec.runtime == RuntimeSpec(
        "tiny", "acme/tiny", "./tiny.gguf", None, "https://example.com/tiny.gguf", 512, "Tiny"
    )


def test_teacher_defaults(tmp_path: Path) -> None:
    spec = parse_spec(
        'spec = "Classify x."\ninterpreter = "m"\n[teacher]\n', tmp_path / "x.pawspec"
    )
    assert spec.teacher is not None
    assert spec.teacher.models == (
        TeacherModel("gpt-5.4-mini", 2400),
        TeacherModel("gpt-5.5", 1200),
    )
    assert (spec.teacher.examples_per_call, spec.teacher.concurrency, spec.teacher.retries) == (
        8,
        64,
        3,
    )


ERRORS = [
    ('spec = "x"\ninterpreter = \n', 2, 15, "invalid TOML"),
    (MINIMAL + "[recipe]\nstep = 10\n", 5, 0, "recipe.step: unknown key; did you mean steps?"),
    (MINIMAL + '[recipe]\n\nsteps = "ten"\n', 6, 0, "recipe.steps: must be an integer, got 'ten'"),
    (
        MINIMAL + "[recipe]\nbatch_size = 48\nmicro_batch_size = 10\n",
        6,
        0,
        "micro_batch_size: 10 does not divide batch_size 48",
    ),
    (
        MINIMAL + "[recipe]\nlora_rank = 8\n",
        5,
        0,
        "lora_rank: 8 is not a multiple of 32, which Q4_0 needs",
    ),
    (
        MINIMAL + '[recipe]\ndevice = "tpu"\n',
        5,
        0,
        "recipe.device: 'tpu' is not one of auto, cpu, cuda, mps",
    ),
    (
        MINIMAL + '[recipe]\ntarget_modules = ["lm_head"]\n',
        5,
        0,
        "target_modules: want a non-empty list",
    ),
    (MINIMAL + "[recipe]\nwarmup = 1.5\n", 5, 0, "warmup: is a fraction of the steps"),
    (MINIMAL + '[teacher]\nmodels = [{ name = "a" }]\n', 5, 0, "teacher.models: want a list like"),
    (
        MINIMAL + '[runtime]\nid = "tiny"\n',
        4,
        0,
        "runtime.base_model: runtime 'tiny' needs base_model",
    ),
    (MINIMAL + 'runtime = "gpt2-q8_0"\n', 4, 0, 'runtime: only "qwen3-0.6b-q6_k" is built in'),
    ('interpreter = "m"\nexamples = "e.jsonl"\n', 1, 0, "spec: missing"),
    ('spec = "x"\nexamples = "e.jsonl"\n', 1, 0, "interpreter: missing"),
    ('spec = "x"\ninterpreter = "m"\n', 1, 0, "no training examples"),
    (
        'spec = """\nsteps = 3\n"""\ninterpreter = "m"\nexamples = "e"\nsteps = 3\n',
        6,
        0,
        "steps: unknown key",
    ),
]


# Dotted, quoted and spread-out keys: each error on the line that wrote the key.
KEY_POSITIONS = [
    (MINIMAL + "\nrecipe.steps = 0\n", 5, "recipe.steps: must be positive"),
    (MINIMAL + "recipe . lora_alpha = -1\n", 4, "recipe.lora_alpha: must be positive"),
    (MINIMAL + '"recipe".device = "tpu"\n', 4, "recipe.device: 'tpu' is not one of"),
    (MINIMAL + "recipe.'warmup' = 1.5\n", 4, "warmup: is a fraction of the steps"),
    (MINIMAL + "recipe.stepz = 1\n", 4, "recipe.stepz: unknown key; did you mean steps?"),
    (MINIMAL + "recipe.a.b = 1\n", 4, "recipe.a: unknown key"),
    (MINIMAL + "[recipe]\nseed = 1\n[teacher]\nretries = -1\n", 7, "teacher.retries: must not"),
    (
        MINIMAL + "teacher.models = [\n  { name = 'x = [', examples = 0 },\n]\n",
        4,
        "teacher.models",
    ),
    (
        MINIMAL + '[teacher]\nurl = "http://h/#" # steps = 1\n\nconcurrency = 0\n',
        7,
        "teacher.concurrency: must be positive",
    ),
    (
        MINIMAL + "[recipe]\nlearning_rate = 1e-3\n[teacher]\ntimeout = 0.0\n",
        7,
        "teacher.timeout: must be positive",
    ),
    (
        "spec = '''\n[recipe]\nsteps = 0\n'''\n" + MINIMAL.split("\n", 1)[1] + "steps = 1\n",
        7,
        "steps: unknown key",
    ),
    (MINIMAL + "[[recipe]]\nsteps = 1\n", 4, "recipe: must be a table"),
    (MINIMAL + "[runtime]\nn_ctx = 0\n", 5, "runtime.n_ctx: must be positive"),
    (MINIMAL + 'runtime.id = "tiny"\n', 4, "runtime.base_model: runtime 'tiny' needs"),
]


@pytest.mark.parametrize(("text", "line", "message"), KEY_POSITIONS)
def test_errors_name_the_line_of_their_key(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    with pytest.raises(ParseError) as info:
        parse_spec(text, tmp_path / "t.pawspec")
    found = [(e.pos.line, e.message) for e in info.value.errors]
    assert any(ln == line and message in m for ln, m in found), found


@pytest.mark.parametrize(("text", "line", "col", "message"), ERRORS)
def test_errors_have_positions(
    tmp_path: Path, text: str, line: int, col: int, message: str
) -> None:
    with pytest.raises(ParseError) as info:
        parse_spec(text, tmp_path / "t.pawspec")
    found = [(e.pos.line, e.pos.col, e.message) for e in info.value.errors]
    assert any(ln == line and c == col and message in m for ln, c, m in found), found
    assert str(info.value).startswith(f"{tmp_path / 't.pawspec'}:")


def test_all_errors_at_once(tmp_path: Path) -> None:
    text = MINIMAL + "[recipe]\nsteps = 0\nlora_alpha = -1\nseeds = 2\n"
    with pytest.raises(ParseError) as info:
        parse_spec(text, tmp_path / "t.pawspec")
    assert [e.pos.line for e in info.value.errors] == [5, 6, 7]


def test_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('{"input": "a", "output": "b", "note": 1}\n\n{"input": "c", "output": "d"}\n')
    examples = read_jsonl(path)
    assert examples == [Example("a", "b"), Example("c", "d")]
    assert (
        examples_sha256(examples)
        == __import__("hashlib")
        .sha256(b'{"input":"a","output":"b"}\n{"input":"c","output":"d"}\n')
        .hexdigest()
    )
    path.write_text('{"input": "a", "output": "b"}\n{"input": "a"}\n[1,\n')
    with pytest.raises(ParseError) as info:
        read_jsonl(path)
    assert [(e.pos.line, e.pos.col) for e in info.value.errors] == [(2, 0), (3, 4)]
    path.write_text("\n")
    with pytest.raises(ParseError, match=re.escape("holds no examples")):
        read_jsonl(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('spec = "Too short"\ninterpreter = "m"\nexamples = "e.jsonl"\n', "at least 10 characters"),
        (MINIMAL + 'pseudo_program = "p"\n', 'remove pseudo_program or set lora_init = "random"'),
        (MINIMAL + '[recipe]\nlora_init = "zero"\n', "'zero' is not one of mapper, random"),
        (MINIMAL + "[recipe]\ntarget_examples = 0\n", "target_examples: must be positive"),
    ],
)
def test_compile_py_rules(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ParseError, match=re.escape(message)):
        parse_spec(text, tmp_path / "x.pawspec")
