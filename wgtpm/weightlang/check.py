"""The type check of a parsed WeightLang program.

What is checked, each with the position of the offending word:

- names: layers and data sets are declared once; ``train data=`` and every
  ``import`` name something declared; an import goes into a layer with weights;
- shapes: the width flows from the input through the layers to the output
  (``linear(in=...)`` and ``layernorm(n=...)`` must take the width they get,
  the last width must be the output's); ``embedding`` takes the ids of an
  ``i64`` input and must be the first layer, and an ``i64`` input needs it;
  no tensor has more than :data:`MAX_TENSOR_ELEMENTS` values;
- tensor imports (``import tok.weight from MODULE/FILE#TENSOR``): the layer
  has that tensor and no tensor is imported twice (the imported tensor's own
  shape is checked against the layer's when the import is resolved,
  :func:`wgtpm.weightlang.imports.resolve_tensor_imports`);
- the loss fits the model: ``bce`` needs a final ``sigmoid``; ``ce`` takes
  logits (no final ``softmax`` or ``sigmoid``) and two or more classes;
- the targets fit the loss: ``mse`` and ``bce`` rows carry one target per
  output (``bce``: 0 or 1), ``ce`` rows one class index ``[k]``, 0 <= k < classes;
  the inputs of an ``i64`` model are token ids, whole numbers 0 <= id < vocab.

:func:`check` covers the program and its inline rows; rows read from data
files are checked by :func:`check_rows` once :mod:`wgtpm.weightlang.data` has
read them. Both report every problem, never just the first.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from .._errors import ParseError, PositionedError
from .ops import OPS, LayerSpec, tensor_shapes
from .syntax import InlineData, Layer, Program, Row

__all__ = ["MAX_TENSOR_ELEMENTS", "check", "check_rows", "layer_specs", "raise_errors"]

#: The most values one tensor may hold (8 GiB of f32): a typo like ``vocab=1519360000`` is
#: refused with its position rather than failing to allocate. Qwen3-0.6B's embedding has 0.16e9.
MAX_TENSOR_ELEMENTS = 1 << 31


def check(program: Program) -> None:
    """Raise :class:`ParseError` listing every type error of ``program``."""
    errors = [
        *_check_names(program),
        *_check_widths(program),
        *_check_train(program),
        *_check_imports(program),
        *_check_ids(program),
        *_check_sizes(program),
        *_check_tensor_imports(program),
    ]
    for data in program.data:
        if isinstance(data, InlineData):
            errors += check_rows(program, data.name, data.rows)
    raise_errors(errors)


def raise_errors(errors: Iterable[PositionedError]) -> None:
    """Raise one ParseError with ``errors`` in file and line order, if there are any."""
    ordered = sorted(errors, key=lambda e: (e.pos.file, e.pos.line, e.pos.col))
    if ordered:
        raise ParseError(ordered)


def layer_specs(program: Program) -> list[LayerSpec]:
    """The declarative layer list of ``program``, as the manifest records it."""
    return [LayerSpec(layer.name, layer.op, dict(layer.args)) for layer in program.layers]


def _check_names(program: Program) -> Iterator[PositionedError]:
    seen: dict[str, Layer] = {}
    for layer in program.layers:
        first = seen.setdefault(layer.name, layer)
        if first is not layer:
            yield PositionedError(
                layer.pos,
                f"layer {layer.name} is declared twice (first at {first.pos.line}:{first.pos.col}), "
                "expected a new name",
            )
    names: set[str] = set()
    for data in program.data:
        if data.name in names:
            yield PositionedError(
                data.pos, f"data {data.name} is declared twice, expected a new name"
            )
        names.add(data.name)
        if isinstance(data, InlineData) and not data.rows:
            yield PositionedError(
                data.pos, f"data {data.name} has no rows, expected rows like [0, 1] -> [1]"
            )


def _describe(layer: Layer) -> str:
    args = ", ".join(f"{k}={v}" for k, v in layer.args.items())
    return (
        f"layer {layer.name} = {layer.op}({args})" if args else f"layer {layer.name} = {layer.op}"
    )


def _check_widths(program: Program) -> Iterator[PositionedError]:
    width = program.input.width
    source = f"input {program.input.name}: {program.input.dtype}[{width}]"
    for layer in program.layers:
        op = OPS[layer.op]
        if op.width_in is not None and layer.args[op.width_in] != width:
            yield PositionedError(
                layer.arg_pos.get(op.width_in, layer.op_pos),
                f"{op.width_in}={layer.args[op.width_in]} does not fit: {source} gives width "
                f"{width}, expected {op.width_in}={width}",
            )
        if op.width_out is not None:
            per = width if op.takes_ids else 1
            width = per * int(layer.args[op.width_out])
            source = _describe(layer)
    if width != program.output.width:
        out = program.output
        yield PositionedError(
            out.pos,
            f"output {out.name}: f32[{out.width}] does not fit: {source} gives width {width}, "
            f"expected f32[{width}] or a last layer of width {out.width}",
        )


def _check_train(program: Program) -> Iterator[PositionedError]:
    train = program.train
    if train is None:
        return
    if program.dataset(train.data) is None:
        known = ", ".join(dict.fromkeys(d.name for d in program.data)) or "none declared"
        yield PositionedError(
            train.key_pos["data"],
            f"train data={train.data}: no data statement has that name, expected one of: {known}",
        )
    last = program.layers[-1]
    loss_pos = train.key_pos["loss"]
    if train.loss == "bce" and last.op != "sigmoid":
        yield PositionedError(
            loss_pos,
            f"loss=bce needs probabilities, but the last layer is {_describe(last)}, "
            "expected a final sigmoid layer",
        )
    if train.loss == "ce" and last.op in ("softmax", "sigmoid"):
        yield PositionedError(
            loss_pos,
            f"loss=ce takes logits, but the last layer is {_describe(last)}, "
            "expected the model to end in a layer that gives logits (ce applies softmax itself)",
        )
    if train.loss == "ce" and program.output.width < 2:
        yield PositionedError(
            loss_pos,
            f"loss=ce needs two or more classes, but output {program.output.name} is "
            f"f32[{program.output.width}], expected loss=bce or mse for one output",
        )


def _check_imports(program: Program) -> Iterator[PositionedError]:
    seen: set[str] = set()
    for imp in program.imports:
        layer = program.layer(imp.layer)
        if layer is None:
            known = ", ".join(dict.fromkeys(la.name for la in program.layers))
            yield PositionedError(
                imp.pos,
                f"import {imp.layer}: this model has no such layer, expected one of {known}",
            )
        elif not OPS[layer.op].tensors(layer.args):
            yield PositionedError(
                imp.pos,
                f"import {imp.layer}: {_describe(layer)} has no weights, "
                "expected a layer with weights (linear, layernorm)",
            )
        if imp.layer in seen:
            yield PositionedError(imp.pos, f"layer {imp.layer} is imported twice, expected once")
        seen.add(imp.layer)


def _check_ids(program: Program) -> Iterator[PositionedError]:
    """An embedding comes first and only there, exactly when the input is i64 token ids."""
    first = program.layers[0] if program.layers else None
    inp = program.input
    for layer in program.layers:
        if not OPS[layer.op].takes_ids:
            continue
        if layer is not first:
            yield PositionedError(
                layer.op_pos,
                f"{_describe(layer)} takes token ids, so it must be the first layer, "
                "expected it right after the input",
            )
        elif inp.dtype != "i64":
            yield PositionedError(
                inp.pos,
                f"input {inp.name}: {inp.dtype}[{inp.width}] does not fit: {_describe(layer)} "
                f"takes token ids, expected input {inp.name}: i64[{inp.width}]",
            )
    if inp.dtype == "i64" and (first is None or not OPS[first.op].takes_ids):
        yield PositionedError(
            inp.pos,
            f"input {inp.name}: i64[{inp.width}] holds token ids, which only an embedding "
            "reads, expected a first layer like embedding(vocab=V, dim=D) or an f32 input",
        )


def _check_sizes(program: Program) -> Iterator[PositionedError]:
    for layer in program.layers:
        for name, shape in tensor_shapes(layer.op, layer.args).items():
            count = 1
            for d in shape:
                count *= d
            if count > MAX_TENSOR_ELEMENTS:
                yield PositionedError(
                    layer.op_pos,
                    f"{_describe(layer)}: {layer.name}.{name} would hold {count} values, "
                    f"expected at most {MAX_TENSOR_ELEMENTS}",
                )


def _check_tensor_imports(program: Program) -> Iterator[PositionedError]:
    whole = {imp.layer for imp in program.imports}
    seen: set[str] = set()
    for imp in program.tensor_imports:
        layer = program.layer(imp.layer)
        if layer is None:
            known = ", ".join(dict.fromkeys(la.name for la in program.layers))
            yield PositionedError(
                imp.pos,
                f"import {imp.target}: this model has no layer {imp.layer}, expected one of {known}",
            )
            continue
        shapes = tensor_shapes(layer.op, layer.args)
        if imp.tensor not in shapes:
            has = ", ".join(f"{imp.layer}.{t}" for t in shapes) or "none"
            yield PositionedError(
                imp.pos,
                f"import {imp.target}: {_describe(layer)} has no tensor {imp.tensor}, "
                f"expected one of its tensors: {has}",
            )
        if imp.target in seen or imp.layer in whole:
            yield PositionedError(
                imp.pos, f"tensor {imp.target} is imported twice, expected one import"
            )
        seen.add(imp.target)


def _vocab(program: Program) -> int | None:
    """The vocabulary of an i64 model's first embedding, or None."""
    first = program.layers[0] if program.layers else None
    if program.input.dtype != "i64" or first is None or not OPS[first.op].takes_ids:
        return None
    return int(first.args["vocab"])


def check_rows(program: Program, data_name: str, rows: Sequence[Row]) -> list[PositionedError]:
    """The problems of ``rows`` of data set ``data_name``: widths and targets that do not fit."""
    # Every data set of a file is read with the file's loss (an evaluation set of a
    # loss=ce model holds class indices too); without training, one target per output.
    train = program.train
    loss = train.loss if train is not None else None
    width_in, width_out = program.input.width, program.output.width
    errors: list[PositionedError] = []
    vocab = _vocab(program)
    for row in rows:
        if vocab is not None and not all(v.is_integer() and 0 <= v < vocab for v in row.inputs):
            errors.append(
                PositionedError(
                    row.pos,
                    f"row inputs are token ids of input {program.input.name}: i64[{width_in}], "
                    f"expected whole numbers 0 <= id < {vocab}",
                )
            )
        if len(row.inputs) != width_in:
            errors.append(
                PositionedError(
                    row.pos,
                    f"row has {_count(len(row.inputs), 'input')}, expected {width_in} "
                    f"(input {program.input.name}: {program.input.dtype}[{width_in}])",
                )
            )
        problem = _target_problem(loss, row.targets, width_out)
        if problem:
            errors.append(PositionedError(row.pos, problem))
    return errors


def _target_problem(loss: str | None, targets: tuple[float, ...], width: int) -> str | None:
    shown = "[" + ", ".join(f"{t:g}" for t in targets) + "]"
    if loss == "ce":
        if len(targets) != 1 or not targets[0].is_integer() or not 0 <= targets[0] < width:
            return (
                f"target {shown} does not fit loss=ce, expected one class index [k] "
                f"with 0 <= k < {width}"
            )
        return None
    if len(targets) != width:
        why = f"one per output, loss={loss}" if loss else "one per output"
        return f"row has {_count(len(targets), 'target')}, expected {width} ({why})"
    if loss == "bce" and any(t not in (0.0, 1.0) for t in targets):
        return f"target {shown} does not fit loss=bce, expected 0 or 1"
    return None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
