"""WeightLang source text: the grammar, and :func:`parse` from text to a syntax tree.

This module is the public face of three private ones, each one concept: the
lexer (:mod:`._lexer`), the parser (:mod:`._parser`, with the language's words
and limits) and the syntax tree (:mod:`._tree`). Import from here.

A ``.wgt`` file declares one model, one statement per line; ``//`` starts a
comment that runs to the end of the line. The grammar, in EBNF::

    file      = { [ statement ] NEWLINE } ;
    statement = "wgt" VERSION                               (* "0.1" *)
              | "model" NAME
              | "seed" INT
              | "input" IDENT ":" ( "f32" | "i64" ) "[" INT "]"   (* i64: token ids *)
              | "output" IDENT ":" "f32" "[" INT "]"
              | "layer" IDENT "=" OP [ "(" [ arg { "," arg } ] ")" ]
              | "data" IDENT "{" { [ row ] NEWLINE } "}"
              | "data" IDENT "from" STRING [ "targets" "=" INT ]
              | "train" option { option }
              | "import" IDENT "from" source { "freeze" | "sha256" "=" HEX64 }
              | "import" IDENT "." IDENT "from" TENSORREF { "freeze" | "sha256" "=" HEX64 } ;
    arg       = [ IDENT "=" ] NUMBER ;       (* positional arguments first, in the op's order *)
    row       = vector "->" vector ;
    vector    = "[" [ NUMBER { "," NUMBER } ] "]" ;
    option    = "data" "=" IDENT | "loss" "=" ( "mse" | "bce" | "ce" )
              | "optimizer" "=" ( "adam" | "sgd" ) | "lr" "=" NUMBER
              | "epochs" "=" INT | "batch" "=" INT ;
    source    = MODREF                       (* github.com/acme/xor-base/xor.h1 *)
              | STRING "." IDENT ;           (* "../encoder/build/encoder".h2 *)

    IDENT  = [A-Za-z_][A-Za-z0-9_]*          NAME = [A-Za-z_][A-Za-z0-9_-]*
    INT    = [+-]?[0-9]+                     NUMBER = INT or a decimal with fraction/exponent
    STRING = '"' { char | '\\"' | '\\\\' } '"'   (one line)
    MODREF = MODULE "/" ARTIFACT "." LAYER   (the layer follows the first "." of the last "/" element)
    TENSORREF = MODULE "/" FILE "#" TENSOR   (FILE a .safetensors or .gguf file of the module)

The second import form copies one tensor of a weights file of a build-list
module into one tensor of a layer, converted to f32; its ``sha256=`` pins the
tensor's stored bytes (the sha256 of the module's tensor table)::

    layer tok = embedding(vocab=151936, dim=1024)
    import tok.weight from hf.co/Qwen/Qwen3-0.6B/model.safetensors#model.embed_tokens.weight freeze

``OP`` is one of :data:`wgtpm.weightlang.ops.OPS`; ``wgt``, ``model``,
``input``, ``output`` and at least one ``layer`` are required, ``seed``
defaults to 0, ``train`` and ``import`` are optional. An example::

    wgt 0.1
    model xor
    seed 0
    input x: f32[2]
    output y: f32[1]
    layer h1 = linear(in=2, out=8)
    layer a1 = tanh
    layer out = linear(8, 1)
    layer p = sigmoid
    data xor {
      [0, 0] -> [0]
      [1, 1] -> [0]
    }
    train data=xor loss=bce optimizer=adam lr=0.05 epochs=500

Every syntax error of a file is collected and raised together as one
:class:`~wgtpm._errors.ParseError` (``file:line:col: what, expected what``).
Meaning (names, shapes, losses) is checked by :mod:`wgtpm.weightlang.check`.
"""

from __future__ import annotations

from pathlib import Path

from .._errors import ParseError, Position, PositionedError
from ._lexer import tokenize
from ._parser import IDENT, SUPPORTED_VERSIONS, Parser
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

__all__ = [
    "IDENT",
    "SUPPORTED_VERSIONS",
    "DataDecl",
    "FileData",
    "Import",
    "InlineData",
    "Layer",
    "ModuleSource",
    "PathSource",
    "Program",
    "Row",
    "TensorDecl",
    "TensorImport",
    "Train",
    "parse",
    "parse_bytes",
    "parse_file",
]


def parse(text: str, file: str) -> Program:
    """Parse WeightLang ``text``; ``file`` names it in messages. Raises ParseError."""
    tokens, lex_errors = tokenize(text, file)
    parser = Parser(tokens, file)
    parser.parse()
    result = parser.finish()
    # A line with a stray character or quote says so once, not also 'expected ...'.
    bad_lines = {e.pos.line for e in lex_errors}
    errors = lex_errors + [e for e in parser.errors if e.pos.line not in bad_lines]
    if isinstance(result, list):
        errors += result
    if errors:
        raise ParseError(sorted(errors, key=lambda e: (e.pos.line, e.pos.col)))
    assert isinstance(result, Program)
    return result


def parse_bytes(data: bytes, file: str) -> Program:
    """Parse UTF-8 ``data``; ``file`` names it in messages. Raises ParseError."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        where = Position(file, line, 0)
        raise ParseError([PositionedError(where, "not valid UTF-8, expected UTF-8 text")]) from exc
    return parse(text, file)


def parse_file(path: Path, *, name: str | None = None) -> Program:
    """Read and parse ``path``; ``name`` (default: the path as given) is used in messages."""
    file = name if name is not None else str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        where = Position(file, 1, 0)
        raise ParseError([PositionedError(where, f"cannot read: {exc.strerror}")]) from exc
    return parse_bytes(data, file)
