"""embedding and rmsnorm layers, i64 inputs, and ``import LAYER.TENSOR from MODULE/FILE#TENSOR``.

The module here is a local directory of the build list (a MapResolver), whose
tables are computed from its files; tests/weightlang/test_qwen_import.py goes
through a real build list and module cache.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from wgtpm._errors import ParseError
from wgtpm.deps import MapResolver, ResolvedModule
from wgtpm.weightlang.build import build_wgt, check_file
from wgtpm.weightlang.errors import LayerImportError
from wgtpm.weightlang.syntax import TensorImport, parse

from .conftest import tree_hashes, write

torch = pytest.importorskip("torch")

MODULE = "example.com/acme/base"
VOCAB, DIM = 12, 4


@pytest.fixture
def base_module(tmp_path: Path) -> ResolvedModule:
    """A module holding weights/model.safetensors: a BF16 embedding and an F16 norm weight."""
    from safetensors.torch import save_file

    d = tmp_path / "base"
    (d / "weights").mkdir(parents=True)
    g = torch.Generator().manual_seed(3)
    save_file(
        {
            "embed.weight": torch.randn(VOCAB, DIM, generator=g).to(torch.bfloat16),
            "norm.weight": (torch.rand(DIM, generator=g) + 0.5).to(torch.float16),
            "other": torch.zeros(3, 3),
        },
        str(d / "weights/model.safetensors"),
    )
    return ResolvedModule(MODULE, "", d)


def _resolver(module: ResolvedModule) -> MapResolver:
    return MapResolver({module.path: module})


def _stored(module: ResolvedModule, name: str) -> Any:
    from safetensors.torch import load_file

    return load_file(str(module.dir / "weights/model.safetensors"))[name]


def _sha(module: ResolvedModule, name: str) -> str:
    """The sha256 of tensor ``name``'s stored bytes (what the table locks)."""
    from wgtpm.tensors import compute_table

    path = module.dir / "weights/model.safetensors"
    return compute_table(path, "weights/model.safetensors").get(name).sha256


def model(*imports: str, train: bool = True, extra: str = "") -> str:
    text = f"""\
wgt 0.1
model tagger
seed 5
input ids: i64[2]
output y: f32[2]
layer tok = embedding(vocab={VOCAB}, dim={DIM})
layer norm = rmsnorm(n={2 * DIM})
layer head = linear(in={2 * DIM}, out=2)
{extra}data pairs {{
  [1, 2] -> [0]
  [3, 4] -> [1]
  [5, 6] -> [0]
  [7, 8] -> [1]
}}
"""
    if train:
        text += "train data=pairs loss=ce optimizer=adam lr=0.05 epochs=30\n"
    else:
        text = text[: text.index("data pairs")]
    return text + "".join(line + "\n" for line in imports)


EMBED = f"import tok.weight from {MODULE}/weights/model.safetensors#embed.weight freeze"


def _manifest(path: Path) -> dict[str, Any]:
    return json.loads((path / "manifest.json").read_text())


# --- syntax and check ----------------------------------------------------------


def test_parse_tensor_import() -> None:
    sha = "ab" * 32
    program = parse(model(f"{EMBED} sha256={sha.upper()}"), "m.wgt")
    assert program.imports == ()
    (imp,) = program.tensor_imports
    assert isinstance(imp, TensorImport)
    assert (imp.layer, imp.tensor, imp.target) == ("tok", "weight", "tok.weight")
    assert (imp.ref, imp.source_tensor) == (f"{MODULE}/weights/model.safetensors", "embed.weight")
    assert (imp.freeze, imp.sha256) == (True, sha)
    assert (imp.pos.line, imp.source_pos.col) == (16, 24)
    assert program.input.dtype == "i64"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "import tok from a.com/b/model.safetensors#embed.weight",
            "16:8: 'tok' is not valid here, expected LAYER.TENSOR (like tok.weight) for a tensor import",
        ),
        (
            "import tok.weight from model.safetensors#embed.weight",
            "16:24: 'model.safetensors#embed.weight' is not valid here, expected MODULE/FILE#TENSOR",
        ),
        (
            "import tok.weight from a.com/b/model.bin#embed.weight",
            "16:24: 'a.com/b/model.bin#embed.weight': expected a weights file "
            "(.safetensors or .gguf) and one '#' before the tensor name",
        ),
        (
            "import tok.weight from a.com/b/model.safetensors# freeze",
            "16:24: 'a.com/b/model.safetensors#' is not valid here, expected MODULE/FILE#TENSOR",
        ),
        (
            "import tok.weight from a.com/b/model.safetensors#w sha256=12",
            "16:59: sha256 pin is not 64 hex digits, expected sha256=HEX64",
        ),
        (
            "import tok.weight from a.com/b/model/xor.h1",
            "16:8: 'tok.weight' is not valid here, expected a layer name "
            "(LAYER.TENSOR only with a tensor source MODULE/FILE#TENSOR)",
        ),
    ],
)
def test_tensor_import_syntax_errors(line: str, message: str) -> None:
    with pytest.raises(ParseError) as err:
        parse(model(line), "m.wgt")
    assert str(err.value) == f"m.wgt:{message}"


def test_hash_is_still_no_comment() -> None:
    with pytest.raises(ParseError, match=r"m.wgt:1:9: unexpected character '#'"):
        parse(model().replace("wgt 0.1", "wgt 0.1 # note"), "m.wgt")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("input ids: i64[2]", "input ids: f32[2]"),
            "4:1: input ids: f32[2] does not fit: layer tok = embedding(vocab=12, dim=4) "
            "takes token ids, expected input ids: i64[2]",
        ),
        (
            ("layer tok = embedding(vocab=12, dim=4)\n", ""),
            "4:1: input ids: i64[2] holds token ids, which only an embedding reads, expected a "
            "first layer like embedding(vocab=V, dim=D) or an f32 input",
        ),
        (
            (
                "layer head = linear(in=8, out=2)",
                "layer head = linear(in=8, out=2)\nlayer e = embedding(2, 1)",
            ),
            "9:11: layer e = embedding(vocab=2, dim=1) takes token ids, so it must be the first "
            "layer, expected it right after the input",
        ),
        (
            ("rmsnorm(n=8)", "rmsnorm(n=4)"),
            "7:24: n=4 does not fit: layer tok = embedding(vocab=12, dim=4) gives width 8, "
            "expected n=8",
        ),
        (
            ("[5, 6] -> [0]", "[5, 12] -> [0]"),
            "12:3: row inputs are token ids of input ids: i64[2], expected whole numbers 0 <= id < 12",
        ),
        (
            ("[5, 6] -> [0]", "[5, 0.5] -> [0]"),
            "12:3: row inputs are token ids of input ids: i64[2], expected whole numbers 0 <= id < 12",
        ),
        (
            ("vocab=12", "vocab=4000000000"),
            "6:13: layer tok = embedding(vocab=4000000000, dim=4): tok.weight would hold "
            "16000000000 values, expected at most 2147483648",
        ),
        (
            ("model tagger", f"model tagger\n{EMBED.replace('tok.weight', 'tok.bias')}"),
            "3:1: import tok.bias: layer tok = embedding(vocab=12, dim=4) has no tensor bias, "
            "expected one of its tensors: tok.weight",
        ),
        (
            ("model tagger", f"model tagger\n{EMBED.replace('tok.weight', 'emb.weight')}"),
            "3:1: import emb.weight: this model has no layer emb, expected one of tok, norm, head",
        ),
        (
            ("model tagger", f"model tagger\n{EMBED}"),
            "17:1: tensor tok.weight is imported twice, expected one import",
        ),
    ],
)
def test_check_errors(change: tuple[str, str], message: str) -> None:
    from wgtpm.weightlang.check import check

    text = model(EMBED).replace(*change)
    with pytest.raises(ParseError) as err:
        check(parse(text, "m.wgt"))
    assert f"m.wgt:{message}" in str(err.value).splitlines()


# --- the layers ----------------------------------------------------------------


def test_embedding_concatenates_rows_and_refuses_bad_ids() -> None:
    from wgtpm.weightlang.model import IdEmbedding

    emb = IdEmbedding(5, 2)
    with torch.no_grad():
        emb.weight.copy_(torch.arange(10.0).reshape(5, 2))
    out = emb(torch.tensor([[4.0, 0.0], [1.0, 1.0]]))
    assert out.tolist() == [[8.0, 9.0, 0.0, 1.0], [2.0, 3.0, 2.0, 3.0]]
    assert emb(torch.tensor([3])).tolist() == [6.0, 7.0]
    for bad in (5.0, -1.0, 1.5):
        with pytest.raises(ValueError, match=f"token id {bad} is not a whole number 0 <= id < 5"):
            emb(torch.tensor([0.0, bad]))


def test_rmsnorm_is_qwen3s() -> None:
    from wgtpm.weightlang.model import RMSNorm

    transformers = pytest.importorskip("transformers.models.qwen3.modeling_qwen3")
    theirs = transformers.Qwen3RMSNorm(6, eps=1e-6)
    ours = RMSNorm(6)
    with torch.no_grad():
        w = torch.randn(6, generator=torch.Generator().manual_seed(1))
        theirs.weight.copy_(w)
        ours.weight.copy_(w)
    x = torch.randn(3, 6, generator=torch.Generator().manual_seed(2))
    assert torch.allclose(ours(x), theirs(x), rtol=0, atol=1e-6)


# --- imports -------------------------------------------------------------------


def test_bf16_and_f16_tensors_are_imported_converted_and_recorded(
    tmp_path: Path, base_module: ResolvedModule
) -> None:
    from safetensors.torch import load_file

    src = write(tmp_path, "m.wgt", model(EMBED))
    out = build_wgt(src, tmp_path / "out", resolver=_resolver(base_module)).path
    weights = load_file(str(out / "weights.safetensors"))
    want = _stored(base_module, "embed.weight").to(torch.float32)
    assert torch.equal(weights["tok.weight"], want)
    entry = _manifest(out)["weights"]["tensors"]["tok.weight"]
    assert entry["origin"] == "imported"
    assert entry["dtype"] == "f32"
    assert entry["sha256"] == hashlib.sha256(want.numpy().tobytes()).hexdigest()
    assert entry["source"] == {
        "module": MODULE,
        "version": "",
        "file": "weights/model.safetensors",
        "tensor": "embed.weight",
        "sha256": _sha(base_module, "embed.weight"),
        "dtype": "BF16",
        "converted_to": "f32",
    }
    manifest = _manifest(out)
    assert manifest["interface"]["input"] == {"name": "ids", "dtype": "i64", "shape": [2]}
    assert manifest["training"]["final_loss"] < manifest["training"]["initial_loss"]
    assert manifest["weights"]["tensors"]["norm.weight"]["origin"] == "trained"

    from wgtpm.weightlang.artifact import read_artifact

    stored = read_artifact(out)
    assert stored.manifest.tensors["tok.weight"].source == entry["source"]


def test_f16_norm_weight_import(tmp_path: Path, base_module: ResolvedModule) -> None:
    text = (
        model(
            f"import norm.weight from {MODULE}/weights/model.safetensors#norm.weight", train=False
        )
        .replace("dim=4", "dim=2")
        .replace("rmsnorm(n=8)", "rmsnorm(n=4)")
    )
    text = text.replace("linear(in=8, out=2)", "linear(in=4, out=2)")
    src = write(tmp_path, "m.wgt", text)
    out = build_wgt(src, tmp_path / "out", resolver=_resolver(base_module)).path
    from safetensors.torch import load_file

    got = load_file(str(out / "weights.safetensors"))["norm.weight"]
    assert torch.equal(got, _stored(base_module, "norm.weight").to(torch.float32))
    source = _manifest(out)["weights"]["tensors"]["norm.weight"]["source"]
    assert (source["dtype"], source["converted_to"]) == ("F16", "f32")


def test_frozen_import_stays_bit_identical_and_builds_byte_stably(
    tmp_path: Path, base_module: ResolvedModule
) -> None:
    from safetensors.torch import load_file

    src = write(tmp_path, "m.wgt", model(EMBED))
    first = build_wgt(src, tmp_path / "a", resolver=_resolver(base_module)).path
    second = build_wgt(src, tmp_path / "b", resolver=_resolver(base_module)).path
    assert tree_hashes(first) == tree_hashes(second)
    got = load_file(str(first / "weights.safetensors"))["tok.weight"]
    assert torch.equal(got, _stored(base_module, "embed.weight").to(torch.float32))

    unfrozen = write(tmp_path, "u.wgt", model(EMBED.removesuffix(" freeze")))
    out = build_wgt(unfrozen, tmp_path / "u", resolver=_resolver(base_module)).path
    entry = _manifest(out)["weights"]["tensors"]["tok.weight"]
    assert entry["origin"] == "imported+trained"
    assert entry["source"]["tensor"] == "embed.weight"


def test_sha256_pin(tmp_path: Path, base_module: ResolvedModule) -> None:
    good = _sha(base_module, "embed.weight")
    src = write(tmp_path, "m.wgt", model(f"{EMBED} sha256={good}", train=False))
    build_wgt(src, tmp_path / "ok", resolver=_resolver(base_module))

    wrong = "0" * 64
    src = write(tmp_path, "m.wgt", model(f"{EMBED} sha256={wrong}", train=False))
    with pytest.raises(LayerImportError) as err:
        build_wgt(src, tmp_path / "bad", resolver=_resolver(base_module), name="m.wgt")
    assert str(err.value) == (
        f"m.wgt:9:24: import tok.weight: sha256 pin mismatch: the import pins sha256={wrong} "
        f"but {MODULE} ({base_module.dir}) weights/model.safetensors#embed.weight has "
        f"sha256={good}; if the new tensor is intended, update the pin"
    )
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            f"{MODULE}/weights/model.safetensors#embed.weights",
            f"{MODULE} ({{dir}}): weights/model.safetensors: no tensor named 'embed.weights'",
        ),
        (
            f"{MODULE}/model.safetensors#embed.weight",
            f"module {MODULE} ({{dir}}) has no weights file model.safetensors, expected one of: "
            "weights/model.safetensors",
        ),
        (
            f"{MODULE}/weights/model.safetensors#other",
            f"shape mismatch: {MODULE} ({{dir}}) weights/model.safetensors#other is [3, 3] (F32) "
            "but tok.weight of embedding(vocab=12, dim=4) is [12, 4]; they must agree",
        ),
        (
            "example.com/other/model.safetensors#embed.weight",
            "example.com/other/model.safetensors: no module of the build list is a prefix",
        ),
    ],
)
def test_bad_tensor_imports_at_their_position(
    tmp_path: Path, base_module: ResolvedModule, source: str, message: str
) -> None:
    src = write(tmp_path, "m.wgt", model(f"import tok.weight from {source}", train=False))
    want = f"m.wgt:9:24: import tok.weight: {message.format(dir=base_module.dir)}"
    with pytest.raises(ParseError) as err:
        check_file(src, name="m.wgt", resolver=_resolver(base_module))
    assert str(err.value).startswith(want)
    with pytest.raises(LayerImportError) as err2:
        build_wgt(src, tmp_path / "out", resolver=_resolver(base_module), name="m.wgt")
    assert str(err2.value).startswith(want)


def test_tensor_import_needs_a_build_list(tmp_path: Path) -> None:
    src = write(tmp_path, "m.wgt", model(EMBED, train=False))
    with pytest.raises(
        LayerImportError, match=r"m\.wgt:9:24: import tok\.weight: .* no build list"
    ):
        build_wgt(src, tmp_path / "out", name="m.wgt")


def test_gguf_tensor_is_imported_with_its_shape_reversed(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    import numpy as np
    from safetensors.torch import load_file

    d = tmp_path / "ggufmod"
    d.mkdir()
    matrix = np.arange(2 * 32, dtype=np.float32).reshape(2, 32) / 8
    writer = gguf.GGUFWriter(str(d / "m.gguf"), arch="qwen3")
    writer.add_tensor("half", matrix.astype(np.float16))  # stored as ne = [32, 2]
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    module = ResolvedModule("example.com/acme/gguf", "", d)
    text = model(
        "import tok.weight from example.com/acme/gguf/m.gguf#half freeze", train=False
    ).replace("vocab=12, dim=4", "vocab=2, dim=32")
    text = text.replace("rmsnorm(n=8)", "rmsnorm(n=64)").replace("in=8", "in=64")
    src = write(tmp_path, "m.wgt", text)
    out = build_wgt(src, tmp_path / "out", resolver=_resolver(module)).path
    got = load_file(str(out / "weights.safetensors"))["tok.weight"]
    assert got.tolist() == matrix.tolist()
    source = _manifest(out)["weights"]["tensors"]["tok.weight"]["source"]
    assert (source["file"], source["dtype"], source["converted_to"]) == ("m.gguf", "F16", "f32")
