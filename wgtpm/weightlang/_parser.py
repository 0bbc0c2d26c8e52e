"""The WeightLang parser: tokens to a :class:`~wgtpm.weightlang._tree.Program`.

A recursive-descent parser over the grammar in :mod:`wgtpm.weightlang.syntax`,
one method per statement. It records every syntax error with its position and
skips to the end of the statement, so one run reports all of a file's errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .._errors import Position, PositionedError
from ._lexer import Token
from ._tree import (
    DataDecl,
    FileData,
    Import,
    InlineData,
    Layer,
    ModuleSource,
    PathSource,
    Program,
    Row,
    TensorDecl,
    TensorImport,
    Train,
)
from .ops import OPS, Number

__all__ = [
    "IDENT",
    "INPUT_TYPES",
    "LOSSES",
    "MAX_EPOCHS",
    "NAME",
    "OPTIMIZERS",
    "STATEMENTS",
    "SUPPORTED_VERSIONS",
    "WEIGHTS_SUFFIXES",
    "Parser",
]

SUPPORTED_VERSIONS = ("0.1",)
LOSSES = ("mse", "bce", "ce")
OPTIMIZERS = ("adam", "sgd")
MAX_EPOCHS = 10_000_000

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
# At most 19 digits: every integer of the language fits in 64 bits, and Python refuses
# to read numbers of over 4,300 digits.
_INT = re.compile(r"[+-]?[0-9]{1,19}\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}\Z")
#: The input types: f32 values, or i64 token ids (for a model whose first layer is an embedding).
INPUT_TYPES = ("f32", "i64")
#: The weights files a tensor import reads.
WEIGHTS_SUFFIXES = (".safetensors", ".gguf")


class _Fail(Exception):
    """One syntax error; the parser records it and skips to the end of the statement."""

    def __init__(self, pos: Position, message: str) -> None:
        super().__init__(message)
        self.error = PositionedError(pos, message)


@dataclass
class _Parts:
    """The statements seen so far, with where each single statement was first written."""

    first: dict[str, Position] = field(default_factory=dict)
    version: str = ""
    model: str = ""
    seed: int = 0
    input: TensorDecl | None = None
    output: TensorDecl | None = None
    layers: list[Layer] = field(default_factory=list)
    data: list[DataDecl] = field(default_factory=list)
    train: Train | None = None
    imports: list[Import] = field(default_factory=list)
    tensor_imports: list[TensorImport] = field(default_factory=list)


STATEMENTS = ("wgt", "model", "seed", "input", "output", "layer", "data", "train", "import")
_SINGLE = ("wgt", "model", "seed", "input", "output", "train")


class Parser:
    def __init__(self, tokens: list[Token], file: str) -> None:
        self.toks = tokens
        self.i = 0
        self.file = file
        self.errors: list[PositionedError] = []
        self.parts = _Parts()
        # Statements written, even with errors: a broken 'model' line is not also 'missing'.
        self.seen: set[str] = set()

    # token helpers

    def peek(self) -> Token:
        return self.toks[self.i]

    def next(self) -> Token:
        tok = self.toks[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def expect(self, kind: str, what: str) -> Token:
        tok = self.peek()
        if tok.kind != kind:
            raise _Fail(tok.pos, f"unexpected {tok.describe()}, expected {what}")
        return self.next()

    def word(self, what: str, pattern: re.Pattern[str] | None = None) -> Token:
        tok = self.expect("word", what)
        if pattern is not None and not pattern.match(tok.text):
            raise _Fail(tok.pos, f"{tok.text!r} is not valid here, expected {what}")
        return tok

    def keyword(self, text: str) -> Token:
        tok = self.peek()
        if tok.kind != "word" or tok.text != text:
            raise _Fail(tok.pos, f"unexpected {tok.describe()}, expected {text!r}")
        return self.next()

    def end(self) -> None:
        tok = self.peek()
        if tok.kind not in ("newline", "eof"):
            raise _Fail(tok.pos, f"unexpected {tok.describe()}, expected end of line")

    def skip_line(self) -> None:
        while self.peek().kind not in ("newline", "eof"):
            self.next()

    # statements

    def parse(self) -> None:
        while self.peek().kind != "eof":
            tok = self.next()
            if tok.kind == "newline":
                continue
            try:
                self.statement(tok)
                self.end()
            except _Fail as fail:
                self.errors.append(fail.error)
                self.skip_line()

    def statement(self, head: Token) -> None:
        if head.kind != "word" or head.text not in STATEMENTS:
            raise _Fail(
                head.pos,
                f"unknown statement {head.describe()}, expected one of {', '.join(STATEMENTS)}",
            )
        self.seen.add(head.text)
        if head.text in _SINGLE:
            first = self.parts.first.get(head.text)
            if first is not None:
                raise _Fail(
                    head.pos,
                    f"{head.text} is declared twice (first at {first.line}:{first.col}), "
                    f"expected one {head.text} statement",
                )
        handlers = {
            "wgt": self._wgt,
            "model": self._model,
            "seed": self._seed,
            "input": self._input,
            "output": self._output,
            "layer": self._layer,
            "data": self._data,
            "train": self._train,
            "import": self._import,
        }
        handlers[head.text](head)
        if head.text in _SINGLE:
            self.parts.first[head.text] = head.pos

    def _wgt(self, head: Token) -> None:
        tok = self.word("the language version, e.g. 'wgt 0.1'")
        if tok.text not in SUPPORTED_VERSIONS:
            raise _Fail(
                tok.pos,
                f"unsupported WeightLang version {tok.text!r}, expected one of "
                f"{', '.join(SUPPORTED_VERSIONS)}",
            )
        self.parts.version = tok.text

    def _model(self, head: Token) -> None:
        self.parts.model = self.word("a model name like xor_base", NAME).text

    def _seed(self, head: Token) -> None:
        tok = self.word("a seed, an integer >= 0")
        if not _INT.match(tok.text) or not 0 <= int(tok.text) < 2**63:
            raise _Fail(tok.pos, f"seed {tok.text!r} is not valid, expected an integer >= 0")
        self.parts.seed = int(tok.text)

    def _input(self, head: Token) -> None:
        self.parts.input = self.tensor_decl(head)

    def _output(self, head: Token) -> None:
        self.parts.output = self.tensor_decl(head)

    def tensor_decl(self, head: Token) -> TensorDecl:
        name = self.word(f"the {head.text}'s name", IDENT).text
        self.expect(":", f"':' and a type like f32[4] after the {head.text} name")
        dtype = self.word("a type like f32[4]")
        allowed = INPUT_TYPES if head.text == "input" else ("f32",)
        if dtype.text not in allowed:
            raise _Fail(
                dtype.pos, f"unsupported type {dtype.text!r}, expected {' or '.join(allowed)}"
            )
        self.expect("[", "'[' and the width, as in f32[4]")
        width = self.integer(self.word("the width, an integer >= 1"), 1, "the width")
        tok = self.peek()
        if tok.kind == ",":
            raise _Fail(tok.pos, "only vectors are supported, expected one width like f32[4]")
        self.expect("]", "']' after the width")
        return TensorDecl(name, dtype.text, width, head.pos)

    def _layer(self, head: Token) -> None:
        name = self.word("a layer name", IDENT)
        self.expect("=", f"'=' and an operation after 'layer {name.text}'")
        op = self.word("an operation like linear(in=2, out=8)")
        if op.text not in OPS:
            raise _Fail(op.pos, f"unknown layer kind {op.text!r}, expected one of {', '.join(OPS)}")
        args, arg_pos = self.layer_args(op)
        self.parts.layers.append(Layer(name.text, op.text, args, head.pos, op.pos, arg_pos))

    def layer_args(self, op: Token) -> tuple[dict[str, Number], dict[str, Position]]:
        written: list[tuple[str | None, Token]] = []
        if self.peek().kind == "(":
            self.next()
            while self.peek().kind != ")":
                if written:
                    self.expect(",", "',' or ')' in the argument list")
                key: str | None = None
                if self.peek().kind == "word" and self.toks[self.i + 1].kind == "=":
                    key = self.next().text
                    self.next()
                written.append((key, self.word("a number")))
            self.next()
        return _bind_args(op, written)

    def _data(self, head: Token) -> None:
        name = self.word("a data set name", IDENT)
        tok = self.peek()
        if tok.kind == "{":
            self.next()
            self.end()
            rows = self.data_rows(name.text, tok.pos)
            self.parts.data.append(InlineData(name.text, tuple(rows), head.pos))
            return
        if tok.kind != "word" or tok.text != "from":
            raise _Fail(tok.pos, f"unexpected {tok.describe()}, expected '{{' or 'from \"FILE\"'")
        self.next()
        path = self.expect("string", 'a quoted file name, as in from "data/rows.csv"')
        if not path.text:
            raise _Fail(path.pos, "empty file name, expected a path to a .csv or .jsonl file")
        targets = None
        if self.peek().kind == "word" and self.peek().text == "targets":
            self.next()
            self.expect("=", "'=' after targets")
            targets = self.integer(self.word("the number of target columns"), 1, "targets")
        self.parts.data.append(FileData(name.text, path.text, targets, head.pos, path.pos))

    def data_rows(self, name: str, opened: Position) -> list[Row]:
        rows: list[Row] = []
        while True:
            tok = self.peek()
            if tok.kind == "newline":
                self.next()
            elif tok.kind == "}":
                self.next()
                return rows
            elif tok.kind == "eof" or (tok.kind == "word" and tok.text in STATEMENTS):
                self.errors.append(
                    PositionedError(
                        tok.pos,
                        f"data {name} opened at {opened.line}:{opened.col} is not closed, "
                        f"expected '}}' before {tok.describe()}",
                    )
                )
                if tok.kind == "word":
                    self.i -= 1  # back to the newline: the statement is parsed next
                return rows
            else:
                try:
                    rows.append(self.row())
                    if self.peek().kind != "}":
                        self.end()
                except _Fail as fail:
                    self.errors.append(fail.error)
                    while self.peek().kind not in ("newline", "eof", "}"):
                        self.next()

    def row(self) -> Row:
        start = self.peek().pos
        inputs = self.vector("a row like [0, 1] -> [1]")
        self.expect("->", "'->' between a row's inputs and targets")
        targets = self.vector("the targets, as in [0, 1] -> [1]")
        return Row(inputs, targets, start)

    def vector(self, what: str) -> tuple[float, ...]:
        self.expect("[", what)
        values: list[float] = []
        while self.peek().kind != "]":
            if values:
                self.expect(",", "',' or ']'")
            values.append(self.number(self.word("a number")))
        self.next()
        return tuple(values)

    def _train(self, head: Token) -> None:
        opts: dict[str, Token] = {}
        while self.peek().kind == "word":
            key = self.next()
            if key.text not in _TRAIN_KEYS:
                raise _Fail(
                    key.pos,
                    f"unknown train option {key.text!r}, expected one of {', '.join(_TRAIN_KEYS)}",
                )
            if key.text in opts:
                raise _Fail(key.pos, f"train option {key.text} is given twice, expected it once")
            self.expect("=", f"'=' after {key.text}")
            opts[key.text] = self.word(f"a value for {key.text}")
        self.parts.train = self.train_options(head, opts)

    def train_options(self, head: Token, opts: dict[str, Token]) -> Train:
        for key in ("data", "loss", "optimizer", "lr", "epochs"):
            if key not in opts:
                raise _Fail(head.pos, f"train has no {key}=, expected {_TRAIN_KEYS[key]}")
        if not IDENT.match(opts["data"].text):
            raise _Fail(opts["data"].pos, "expected data=NAME of a data statement")
        for key, allowed in (("loss", LOSSES), ("optimizer", OPTIMIZERS)):
            if opts[key].text not in allowed:
                raise _Fail(
                    opts[key].pos,
                    f"unknown {key} {opts[key].text!r}, expected one of {', '.join(allowed)}",
                )
        lr = self.number(opts["lr"])
        if lr <= 0:
            raise _Fail(opts["lr"].pos, f"lr={opts['lr'].text} is not valid, expected lr > 0")
        epochs = self.integer(opts["epochs"], 1, "epochs", MAX_EPOCHS)
        batch = self.integer(opts["batch"], 1, "batch") if "batch" in opts else None
        key_pos = {k: t.pos for k, t in opts.items()}
        return Train(
            opts["data"].text,
            opts["loss"].text,
            opts["optimizer"].text,
            lr,
            epochs,
            batch,
            head.pos,
            key_pos,
        )

    def _import(self, head: Token) -> None:
        target = self.word("the name of a layer of this model")
        self.keyword("from")
        ahead = self.peek()
        if ahead.kind == "word" and "#" in ahead.text:
            self._tensor_import(head, target)
            return
        if not IDENT.match(target.text):
            raise _Fail(
                target.pos,
                f"{target.text!r} is not valid here, expected a layer name (LAYER.TENSOR "
                "only with a tensor source MODULE/FILE#TENSOR)",
            )
        layer = target
        source, source_layer, source_pos = self.import_source()
        freeze, sha = self.import_options()
        imp = Import(layer.text, source, source_layer, freeze, sha, head.pos, source_pos)
        self.parts.imports.append(imp)

    def _tensor_import(self, head: Token, target: Token) -> None:
        layer, dot, tensor = target.text.partition(".")
        if not dot or not IDENT.match(layer) or not IDENT.match(tensor):
            raise _Fail(
                target.pos,
                f"{target.text!r} is not valid here, expected LAYER.TENSOR (like tok.weight) "
                "for a tensor import",
            )
        source = self.next()
        ref, _, name = source.text.partition("#")
        module, slash, file = ref.rpartition("/")
        if not slash or not all(module.split("/")) or not name:
            raise _Fail(
                source.pos, f"{source.text!r} is not valid here, expected MODULE/FILE#TENSOR"
            )
        if not file.endswith(WEIGHTS_SUFFIXES) or "#" in name:
            raise _Fail(
                source.pos,
                f"{source.text!r}: expected a weights file ({' or '.join(WEIGHTS_SUFFIXES)}) "
                "and one '#' before the tensor name",
            )
        freeze, sha = self.import_options()
        imp = TensorImport(layer, tensor, ref, name, freeze, sha, head.pos, source.pos)
        self.parts.tensor_imports.append(imp)

    def import_options(self) -> tuple[bool, str | None]:
        freeze, sha = False, None
        while self.peek().kind == "word":
            opt = self.next()
            if opt.text == "freeze" and not freeze:
                freeze = True
            elif opt.text == "sha256" and sha is None:
                self.expect("=", "'=' after sha256")
                value = self.word("64 hex digits after sha256=")
                if not _HEX64.match(value.text):
                    raise _Fail(value.pos, "sha256 pin is not 64 hex digits, expected sha256=HEX64")
                sha = value.text.lower()
            else:
                raise _Fail(opt.pos, f"unexpected {opt.describe()}, expected freeze or sha256=HEX")
        return freeze, sha

    def import_source(self) -> tuple[ModuleSource | PathSource, str, Position]:
        tok = self.peek()
        if tok.kind == "string":
            self.next()
            dot = self.word(f'".LAYER" after "{tok.text}"')
            if not dot.text.startswith(".") or not IDENT.match(dot.text[1:]):
                raise _Fail(dot.pos, 'expected ".LAYER" right after the quoted artifact path')
            if not tok.text:
                raise _Fail(tok.pos, "empty artifact path, expected a directory")
            return PathSource(tok.text), dot.text[1:], tok.pos
        tok = self.word('MODULE/ARTIFACT.LAYER or "PATH".LAYER')
        head, slash, last = tok.text.rpartition("/")
        artifact, sep, layer = last.partition(".")
        if not slash or not sep or not all(head.split("/")):
            raise _Fail(tok.pos, f"{tok.text!r} is not valid here, expected MODULE/ARTIFACT.LAYER")
        if not NAME.match(artifact) or not IDENT.match(layer):
            raise _Fail(
                tok.pos, f"{tok.text!r}: expected an artifact name and a layer name, ARTIFACT.LAYER"
            )
        return ModuleSource(f"{head}/{artifact}"), layer, tok.pos

    # values

    def number(self, tok: Token) -> float:
        value = float(tok.text) if _FLOAT.match(tok.text) else None
        if value is None or value in (float("inf"), float("-inf")):
            raise _Fail(tok.pos, f"{tok.text!r} is not a number, expected a number like 0.5")
        return value

    def integer(self, tok: Token, minimum: int, what: str, maximum: int | None = None) -> int:
        ok = _INT.match(tok.text) is not None and int(tok.text) >= minimum
        if ok and (maximum is None or int(tok.text) <= maximum):
            return int(tok.text)
        upper = f" and <= {maximum}" if maximum is not None else ""
        raise _Fail(
            tok.pos, f"{what} {tok.text!r} is not valid, expected an integer >= {minimum}{upper}"
        )

    def finish(self) -> Program | list[PositionedError]:
        """The program, or the errors for required statements that were never written."""
        p = self.parts
        start = Position(self.file, 1, 1)
        missing = [
            PositionedError(start, f"no {keyword} statement, expected {example}")
            for keyword, example in _REQUIRED
            if keyword not in self.seen
        ]
        if missing or p.input is None or p.output is None:
            return missing
        return Program(
            self.file,
            p.version,
            p.model,
            p.seed,
            p.input,
            p.output,
            tuple(p.layers),
            tuple(p.data),
            p.train,
            tuple(p.imports),
            tuple(p.tensor_imports),
        )


_REQUIRED = (
    ("wgt", "wgt 0.1"),
    ("model", "model NAME"),
    ("input", "input NAME: f32[N]"),
    ("output", "output NAME: f32[N]"),
    ("layer", "layer NAME = OP"),
)

_TRAIN_KEYS = {
    "data": "data=NAME",
    "loss": f"loss={'|'.join(LOSSES)}",
    "optimizer": f"optimizer={'|'.join(OPTIMIZERS)}",
    "lr": "lr=NUMBER",
    "epochs": "epochs=N",
    "batch": "batch=N",
}


def _bind_args(
    op: Token, written: list[tuple[str | None, Token]]
) -> tuple[dict[str, Number], dict[str, Position]]:
    """Bind positional and keyword arguments to ``op``'s parameters and check their values."""
    params = {p.name: p for p in OPS[op.text].params}
    order = list(params)
    usage = f"{op.text}({', '.join(f'{n}=...' for n in order)})" if order else op.text
    args: dict[str, Number] = {}
    arg_pos: dict[str, Position] = {}
    for index, (key, tok) in enumerate(written):
        if key is None:
            if any(k is not None for k, _ in written[:index]):
                raise _Fail(tok.pos, f"positional argument after a named one, expected {usage}")
            if not order:
                raise _Fail(tok.pos, f"{op.text} takes no arguments, expected {usage}")
            if index >= len(order):
                raise _Fail(tok.pos, f"too many arguments, expected {usage}")
            key = order[index]
        elif key not in params:
            raise _Fail(tok.pos, f"{op.text} has no parameter {key!r}, expected {usage}")
        if key in args:
            raise _Fail(tok.pos, f"{key} is given twice, expected {usage}")
        args[key] = _arg_value(tok, params[key].integer)
        arg_pos[key] = tok.pos
        if not params[key].accepts(args[key]):
            raise _Fail(
                tok.pos, f"{key}={tok.text} is not valid, expected {params[key].describe()}"
            )
    for name in order:
        if name not in args:
            raise _Fail(op.pos, f"{op.text} needs {name}=, expected {usage}")
    return args, arg_pos


def _arg_value(tok: Token, integer: bool) -> Number:
    if integer and _INT.match(tok.text):
        return int(tok.text)
    if not integer and _FLOAT.match(tok.text):
        value = float(tok.text)
        if value not in (float("inf"), float("-inf")):
            return value
    kind = "an integer" if integer else "a number"
    raise _Fail(tok.pos, f"{tok.text!r} is not valid, expected {kind}")
