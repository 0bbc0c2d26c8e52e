"""The ``.pawspec`` file: what a PAW program is compiled from (TOML).

Every relative path is relative to the ``.pawspec``. An example with every
key (the values shown for ``[teacher]`` and ``[recipe]`` are the defaults)::

    spec = '''
    Classify a support message as "immediate" or "wait". Reply with the one word.
    '''
    # spec_file = "triage.md"           # instead of spec
    # pseudo_program = "..."            # with lora_init = "random": the text the prompt is rendered
                                        # from; default: the spec; "" for none. With "mapper" the PAW
                                        # compiler writes it.
    interpreter = "hf.co/Qwen/Qwen3-0.6B" # a module of the build list, or "./dir" (Hugging Face format)
    examples = "triage.jsonl"           # {"input", "output"} per line; and/or [teacher]

    [teacher]                           # an OpenAI-compatible endpoint that writes examples
    url = "https://api.openai.com/v1"   # POST {url}/chat/completions
    api_key_env = "OPENAI_API_KEY"      # sent as a Bearer token when set
    models = [{ name = "gpt-5.4-mini", examples = 2400 }, { name = "gpt-5.5", examples = 1200 }]
    examples_per_call = 8
    temperature = 1.0
    concurrency = 64
    retries = 3                         # per call, on 429/5xx, network errors and malformed answers
    retry_backoff = 1.0                 # seconds, doubled on each retry
    timeout = 240.0

    [recipe]
    target_examples = 4800              # examples per epoch, shared among the pools by size
    steps = 100
    batch_size = 48
    micro_batch_size = 48               # must divide batch_size
    learning_rate = 2e-4                # cosine decay to min_learning_rate
    min_learning_rate = 2e-5
    warmup = 0.0                        # fraction of steps
    lora_rank = 64
    lora_alpha = 16.0
    lora_init = "mapper"                # start from the PAW compiler's adapter ($PAW_API_KEY), or "random"
    base_compiler = "paw-4b-qwen3-0.6b" # the PAW compiler asked for the mapper and pseudo-program
    target_modules = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    max_length = 2048
    loss_chunk_size = 128               # output tokens per chunk of the vocabulary projection
    gradient_checkpointing = false
    seed = 0
    device = "auto"                     # auto | cpu | cuda | mps
    quantization = "Q4_0"               # of the GGUF adapter: Q4_0 | Q8_0 | F16 | BF16 | F32

    # [runtime] is needed only for an interpreter other than Qwen3-0.6B:
    # runtime = "qwen3-0.6b-q6_k"       # the default: the SDK's Qwen3-0.6B runtime
    [runtime]
    id = "tiny-qwen3-f32"               # the SDK's runtime id
    interpreter = "acme/tiny-qwen3"     # the name the SDK shows; default: the interpreter module path
    base_model = "./tiny-qwen3.gguf"    # the GGUF the SDK runs: a local file or MODULE/FILE
    repo = "acme/tiny-qwen3-gguf"       # where the SDK downloads it (Hugging Face), or url = "https://…"
    n_ctx = 2048

Errors carry ``file:line:col`` positions: where TOML reports them for syntax,
and the line of the offending key for everything else, found by
:func:`wgtpm.paw.tomlkeys.key_lines` (dotted and quoted keys, tables and
arrays of tables; ``recipe.steps = 0`` at the top level is that line).
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .._contain import dir_escape_problem, escape_problem
from .._errors import ParseError, Position, PositionedError
from .adapter_format import QUANTIZATIONS, quantization_block
from .runtime import QWEN3_RUNTIME_ID
from .shape import TARGET_MODULES
from .tomlkeys import key_lines

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 needs tomli ("tomli; python_version < '3.11'")
    import tomli as tomllib

__all__ = [
    "PawSpec",
    "Recipe",
    "RuntimeSpec",
    "TeacherModel",
    "TeacherSpec",
    "load_spec",
    "parse_spec",
    "recipe_problems",
]

DEVICES = ("auto", "cpu", "cuda", "mps")
LORA_INITS = ("mapper", "random")
#: compile-by-training refuses shorter specs.
MIN_SPEC_CHARS = 10


@dataclass(frozen=True)
class Recipe:
    """How the LoRA is trained and stored; the defaults are those of PAW's compile-by-training."""

    target_examples: int = 4800
    steps: int = 100
    batch_size: int = 48
    micro_batch_size: int = 48
    learning_rate: float = 2e-4
    min_learning_rate: float = 2e-5
    warmup: float = 0.0
    lora_rank: int = 64
    lora_alpha: float = 16.0
    lora_init: str = "mapper"
    target_modules: tuple[str, ...] = TARGET_MODULES
    max_length: int = 2048
    loss_chunk_size: int = 128
    gradient_checkpointing: bool = False
    seed: int = 0
    device: str = "auto"
    quantization: str = "Q4_0"
    base_compiler: str = "paw-4b-qwen3-0.6b"

    def identity(self) -> dict[str, Any]:
        """The recipe as recorded in the bundle and hashed into the program ID (``device`` left out)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "device"}
        out["target_modules"] = list(self.target_modules)
        return out


@dataclass(frozen=True)
class TeacherModel:
    """One teacher model and how many distinct examples it must write."""

    name: str
    examples: int


@dataclass(frozen=True)
class TeacherSpec:
    """An OpenAI-compatible endpoint that writes training examples from the spec."""

    url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"
    models: tuple[TeacherModel, ...] = (
        TeacherModel("gpt-5.4-mini", 2400),
        TeacherModel("gpt-5.5", 1200),
    )
    examples_per_call: int = 8
    temperature: float = 1.0
    concurrency: int = 64
    retries: int = 3
    retry_backoff: float = 1.0
    timeout: float = 240.0


@dataclass(frozen=True)
class RuntimeSpec:
    """The SDK runtime a program targets: the SDK's Qwen3-0.6B one, or one described here."""

    id: str = QWEN3_RUNTIME_ID
    interpreter: str | None = None
    base_model: str | None = None
    repo: str | None = None
    url: str | None = None
    n_ctx: int = 2048
    display_name: str | None = None

    @property
    def is_builtin(self) -> bool:
        return self.base_model is None


@dataclass(frozen=True)
class PawSpec:
    """A parsed ``.pawspec``; ``path`` is the file it came from."""

    path: Path
    spec: str
    pseudo_program: str
    interpreter: str
    examples: Path | None = None
    teacher: TeacherSpec | None = None
    recipe: Recipe = field(default_factory=Recipe)
    runtime: RuntimeSpec = field(default_factory=RuntimeSpec)
    pseudo_program_given: bool = False

    def local_path(self, ref: str) -> Path | None:
        """``ref`` as a path when it is one (``./``, ``../`` or ``/`` first), else ``None`` (a module)."""
        if ref.startswith(("./", "../", "/")):
            return (self.path.parent / ref).resolve()
        return None


def load_spec(path: Path, *, root: Path | None = None) -> PawSpec:
    """Read and parse a ``.pawspec``; raises :class:`ParseError` with every problem found.

    ``root`` is the package directory when the spec is an artifact of one: every
    local file it names must then lie inside it (see :func:`parse_spec`).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParseError([PositionedError(Position(str(path), 1), f"cannot read: {exc}")]) from exc
    return parse_spec(text, path, root=root)


_TOP_KEYS = (
    "spec",
    "spec_file",
    "pseudo_program",
    "interpreter",
    "examples",
    "teacher",
    "recipe",
    "runtime",
)
_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)")


def parse_spec(text: str, path: Path, *, root: Path | None = None) -> PawSpec:
    """Parse the text of a ``.pawspec`` read from ``path``.

    With ``root`` (the package directory of an artifact build), ``spec_file``,
    ``examples``, a local ``interpreter`` directory (every file in it) and a
    local ``[runtime] base_model`` must be regular files inside ``root``, links
    followed (:func:`wgtpm._contain.escape_problem`); each that is not is an
    error on its key's line, found here, before anything is read or trained.
    """
    name = str(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_POS.search(str(exc))
        pos = Position(name, int(match[1]), int(match[2])) if match else Position(name, 1)
        message = _TOML_POS.sub("", str(exc)).strip()
        raise ParseError([PositionedError(pos, f"invalid TOML: {message}")]) from exc
    except ValueError as exc:  # an integer of over 4,300 digits
        raise ParseError([PositionedError(Position(name, 1), f"invalid TOML: {exc}")]) from exc
    except RecursionError as exc:
        raise ParseError(
            [PositionedError(Position(name, 1), "invalid TOML: arrays or tables nested too deeply")]
        ) from exc
    checker = _Checker(name, text, root)
    spec = _read_spec_text(doc, checker, path)
    spec_obj = PawSpec(
        path=path,
        spec=spec,
        pseudo_program=checker.string(
            doc, "", "pseudo_program", default=spec, empty_ok=True
        ).strip(),
        interpreter=checker.string(doc, "", "interpreter", default=""),
        examples=_read_examples(doc, checker, path),
        teacher=_read_teacher(doc, checker),
        recipe=_read_recipe(doc, checker),
        runtime=_read_runtime(doc, checker),
        pseudo_program_given="pseudo_program" in doc,
    )
    if spec_obj.pseudo_program_given and spec_obj.recipe.lora_init == "mapper":
        checker.error(
            "",
            "pseudo_program",
            'the PAW compiler writes the pseudo-program when recipe.lora_init = "mapper"; '
            'remove pseudo_program or set lora_init = "random"',
        )
    _check_local_files(spec_obj, checker)
    checker.unknown(doc, "", _TOP_KEYS)
    if not spec_obj.interpreter:
        checker.error(
            "",
            "interpreter",
            'missing: name the base model, e.g. interpreter = "hf.co/Qwen/Qwen3-0.6B"',
        )
    if spec_obj.examples is None and spec_obj.teacher is None:
        checker.error(
            "", "examples", 'no training examples: add examples = "FILE.jsonl" or a [teacher] table'
        )
    if checker.errors:
        raise ParseError(sorted(checker.errors, key=lambda e: (e.pos.line, e.pos.col)))
    return spec_obj


def _read_spec_text(doc: Mapping[str, Any], checker: _Checker, path: Path) -> str:
    if "spec" in doc and "spec_file" in doc:
        checker.error("", "spec_file", "give spec or spec_file, not both")
    if "spec_file" in doc:
        ref = checker.string(doc, "", "spec_file", default="")
        if not checker.inside("", "spec_file", ref, path.parent / ref):
            return ""
        try:
            text = (path.parent / ref).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            checker.error("", "spec_file", f"cannot read {ref}: {exc}")
            return ""
        if len(text) < MIN_SPEC_CHARS:
            checker.error(
                "", "spec_file", f"{ref}: must contain at least {MIN_SPEC_CHARS} characters"
            )
        return text
    spec = checker.string(doc, "", "spec", default="").strip()
    if not spec:
        checker.error("", "spec", 'missing: describe what the program does, spec = "..."')
    elif len(spec) < MIN_SPEC_CHARS:
        checker.error("", "spec", f"must contain at least {MIN_SPEC_CHARS} characters")
    return spec


def _read_examples(doc: Mapping[str, Any], checker: _Checker, path: Path) -> Path | None:
    if "examples" not in doc:
        return None
    ref = checker.string(doc, "", "examples", default="")
    if not ref:
        return None
    checker.inside("", "examples", ref, path.parent / ref)
    return path.parent / ref


def _check_local_files(spec: PawSpec, checker: _Checker) -> None:
    """A local interpreter and base model: inside the package (see :func:`parse_spec`)."""
    if spec.local_path(spec.interpreter) is not None:
        local = spec.path.parent / spec.interpreter
        checker.inside("", "interpreter", spec.interpreter, local, walk=True)
    base = spec.runtime.base_model
    if base is not None and spec.local_path(base) is not None:
        checker.inside("runtime", "base_model", base, spec.path.parent / base)


def _read_teacher(doc: Mapping[str, Any], checker: _Checker) -> TeacherSpec | None:
    table = checker.table(doc, "teacher")
    if table is None:
        return None
    defaults = TeacherSpec()
    models: tuple[TeacherModel, ...] = defaults.models
    if "models" in table:
        raw = table["models"]
        items = raw if isinstance(raw, list) else []
        parsed = [
            TeacherModel(item["name"], item["examples"])
            for item in items
            if isinstance(item, dict)
            and set(item) == {"name", "examples"}
            and isinstance(item["name"], str)
            and item["name"]
            and isinstance(item["examples"], int)
            and not isinstance(item["examples"], bool)
            and item["examples"] > 0
        ]
        if not items or len(parsed) != len(items):
            checker.error(
                "teacher", "models", 'want a list like [{ name = "gpt-5.5", examples = 1200 }]'
            )
        models = tuple(parsed)
    values = checker.values(table, "teacher", defaults, skip=("models",))
    checker.unknown(table, "teacher", [f.name for f in fields(TeacherSpec)])
    for key in ("examples_per_call", "concurrency", "timeout"):
        if values[key] <= 0:
            checker.error("teacher", key, "must be positive")
    for key in ("retries", "retry_backoff", "temperature"):
        if values[key] < 0:
            checker.error("teacher", key, "must not be negative")
    return TeacherSpec(models=models, **values)


def _read_recipe(doc: Mapping[str, Any], checker: _Checker) -> Recipe:
    table = checker.table(doc, "recipe") or {}
    defaults = Recipe()
    values = checker.values(table, "recipe", defaults, skip=("target_modules",))
    checker.unknown(table, "recipe", [f.name for f in fields(Recipe)])
    modules = defaults.target_modules
    if "target_modules" in table:
        raw = table["target_modules"]
        if (
            not isinstance(raw, list)
            or not raw
            or not all(m in TARGET_MODULES for m in raw)
            or len(set(raw)) != len(raw)
        ):
            checker.error(
                "recipe",
                "target_modules",
                f"want a non-empty list of distinct names from {list(TARGET_MODULES)}",
            )
        else:
            modules = tuple(m for m in TARGET_MODULES if m in raw)
    recipe = Recipe(target_modules=modules, **values)
    _check_recipe(recipe, checker)
    return recipe


def _check_recipe(r: Recipe, checker: _Checker) -> None:
    for key, message in recipe_problems(r):
        checker.error("recipe", key, message)


def recipe_problems(r: Recipe) -> list[tuple[str, str]]:
    """Every rule ``r`` breaks, as (recipe key, message); compile.py's rules and wgtpm's."""
    out: list[tuple[str, str]] = []

    def bad(key: str, message: str) -> None:
        out.append((key, message))

    for key in (
        "target_examples",
        "steps",
        "batch_size",
        "micro_batch_size",
        "lora_rank",
        "max_length",
        "loss_chunk_size",
    ):
        if getattr(r, key) <= 0:
            bad(key, "must be positive")
    if r.micro_batch_size > 0 and r.batch_size % r.micro_batch_size:
        bad("micro_batch_size", f"{r.micro_batch_size} does not divide batch_size {r.batch_size}")
    if r.learning_rate <= 0 or r.min_learning_rate < 0 or r.min_learning_rate > r.learning_rate:
        bad("learning_rate", "want learning_rate > 0 and 0 <= min_learning_rate <= learning_rate")
    if not 0.0 <= r.warmup < 1.0:
        bad("warmup", "is a fraction of the steps, in [0, 1)")
    if r.lora_alpha <= 0:
        bad("lora_alpha", "must be positive")
    if r.lora_init not in LORA_INITS:
        bad("lora_init", f"{r.lora_init!r} is not one of {', '.join(LORA_INITS)}")
    if not r.target_modules or not set(r.target_modules) <= set(TARGET_MODULES):
        bad(
            "target_modules", f"want a non-empty list of distinct names from {list(TARGET_MODULES)}"
        )
    if r.device not in DEVICES:
        bad("device", f"{r.device!r} is not one of {', '.join(DEVICES)}")
    if r.quantization not in QUANTIZATIONS:
        bad("quantization", f"{r.quantization!r} is not one of {', '.join(QUANTIZATIONS)}")
    elif r.lora_rank > 0 and r.lora_rank % quantization_block(r.quantization):
        block = quantization_block(r.quantization)
        bad(
            "lora_rank",
            f'{r.lora_rank} is not a multiple of {block}, which {r.quantization} needs; use 32, 64, ... or quantization = "F16"',
        )
    return out


def _read_runtime(doc: Mapping[str, Any], checker: _Checker) -> RuntimeSpec:
    raw = doc.get("runtime")
    if raw is None:
        return RuntimeSpec()
    if isinstance(raw, str):
        if raw != QWEN3_RUNTIME_ID:
            checker.error(
                "",
                "runtime",
                f'only "{QWEN3_RUNTIME_ID}" is built in; describe any other runtime in a [runtime] table',
            )
        return RuntimeSpec()
    table = checker.table(doc, "runtime") or {}
    values = checker.values(
        table,
        "runtime",
        RuntimeSpec(),
        optional=("interpreter", "base_model", "repo", "url", "display_name"),
    )
    checker.unknown(table, "runtime", [f.name for f in fields(RuntimeSpec)])
    runtime = RuntimeSpec(**values)
    if runtime.id != QWEN3_RUNTIME_ID and runtime.base_model is None:
        checker.error(
            "runtime",
            "base_model",
            f"runtime {runtime.id!r} needs base_model = the GGUF the SDK runs (a file or MODULE/FILE)",
        )
    if runtime.id == QWEN3_RUNTIME_ID and runtime.base_model is not None:
        checker.error(
            "runtime",
            "id",
            f"{QWEN3_RUNTIME_ID} is the SDK's own runtime; give a runtime of your own another id",
        )
    if runtime.n_ctx <= 0:
        checker.error("runtime", "n_ctx", "must be positive")
    return runtime


class _Checker:
    """Reads typed values out of the TOML document and collects positioned errors."""

    def __init__(self, name: str, text: str, root: Path | None = None) -> None:
        self.name = name
        self.root = root
        self.errors: list[PositionedError] = []
        self._lines = key_lines(text)

    def inside(self, table: str, key: str, ref: str, path: Path, *, walk: bool = False) -> bool:
        """Whether the file ``path`` (``ref`` as written) may be read, or with ``walk`` the
        directory and every file under it: always without a ``root``; else an error on
        ``key`` when not (:mod:`wgtpm._contain`)."""
        if self.root is None or not ref:
            return True
        if walk:
            found = dir_escape_problem(self.root, path)
        else:
            why = escape_problem(self.root, path)
            found = (path, why) if why is not None else None
        if found is None:
            return True
        at, why = found
        shown = ref if at == path else f"{ref.rstrip('/')}/{at.relative_to(path)}"
        self.error(table, key, f"{shown} {why}")
        return False

    def error(self, table: str, key: str, message: str) -> None:
        """An error about ``table.key`` (``table`` "" for the top level), on the key's line.

        A key that is not written (a missing one) puts the error on its table's line, else line 1.
        """
        path = (table, key) if table else (key,)
        line = self._lines.get(path) or (self._lines.get((table,)) if table else None) or 1
        label = f"{table}.{key}" if table else key
        self.errors.append(PositionedError(Position(self.name, line), f"{label}: {message}"))

    def table(self, doc: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
        value = doc.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            self.error("", key, f"must be a table ([{key}])")
            return None
        return value

    def string(
        self, doc: Mapping[str, Any], table: str, key: str, *, default: str, empty_ok: bool = False
    ) -> str:
        value = doc.get(key, default)
        if not isinstance(value, str) or (not value and not empty_ok and key in doc):
            self.error(
                table, key, "must be a non-empty string" if not empty_ok else "must be a string"
            )
            return default
        return value

    def values(
        self,
        table: Mapping[str, Any],
        table_name: str,
        defaults: object,
        *,
        skip: tuple[str, ...] = (),
        optional: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """Each field of the dataclass ``defaults`` from ``table``, type-checked against the default."""
        out: dict[str, Any] = {}
        for f in fields(defaults):  # type: ignore[arg-type]
            if f.name in skip:
                continue
            default = getattr(defaults, f.name)
            value = table.get(f.name, default)
            check = _STR if f.name in optional else _type_check(default)
            if f.name in table and not check(value):
                self.error(
                    table_name,
                    f.name,
                    f"must be {_type_name(default, f.name in optional)}, got {value!r}",
                )
                value = default
            out[f.name] = float(value) if isinstance(default, float) else value
        return out

    def unknown(self, table: Mapping[str, Any], table_name: str, known: Any) -> None:
        for key in table:
            if key not in known:
                hint = difflib.get_close_matches(key, list(known), n=1)
                suggestion = (
                    f"; did you mean {hint[0]}?" if hint else f"; known keys: {', '.join(known)}"
                )
                self.error(table_name, key, f"unknown key{suggestion}")


def _STR(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _type_check(default: object) -> Callable[[object], bool]:
    if isinstance(default, bool):
        return lambda v: isinstance(v, bool)
    if isinstance(default, int):
        return lambda v: isinstance(v, int) and not isinstance(v, bool)
    if isinstance(default, float):
        return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    return _STR


def _type_name(default: object, optional: bool) -> str:
    if optional or isinstance(default, str):
        return "a non-empty string"
    if isinstance(default, bool):
        return "true or false"
    return "an integer" if isinstance(default, int) else "a number"
