"""``wgtpm.open``, ``graft`` and ``save`` on a tiny Qwen3 required from the loopback Hub.

Each test's project is made by ``wgtpm init`` and ``wgtpm get`` in child
processes (``consumer`` in conftest.py); the tensors are then read in this
process, checked against the module's tensor tables, grafted into a model
of the tests' own (encoder.py), trained, saved, and inspected.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import wgtpm  # noqa: E402
from tests.pinned.conftest import GGUF_MATRIX, MODULE, VERSION, cli  # noqa: E402
from tests.pinned.encoder import Encoder  # noqa: E402
from tests.servers.huggingface import HuggingFaceServer  # noqa: E402
from wgtpm import ChecksumMismatchError, NotFoundError, ResolveError, UsageError  # noqa: E402
from wgtpm.pinned import GraftError, origin_of  # noqa: E402

EMBED = "model.embed_tokens.weight"
BLOCK = "model.layers.0."


def ranges(path: Path) -> dict[str, tuple[int, int]]:
    """Each tensor's absolute byte range in a safetensors file, read here independently."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    return {
        k: (8 + n + v["data_offsets"][0], 8 + n + v["data_offsets"][1])
        for k, v in header.items()
        if k != "__metadata__"
    }


def tensor_sha(path: Path, name: str) -> str:
    start, end = ranges(path)[name]
    return hashlib.sha256(path.read_bytes()[start:end]).hexdigest()


def grafted_encoder(qwen: wgtpm.pinned.Pinned, *, freeze: bool = True) -> Encoder:
    emb = qwen.tensor(EMBED)
    model = Encoder(vocab=emb.shape[0])
    block = {f"block.{k}": v for k, v in qwen.tensors(BLOCK).items()}
    wgtpm.graft(model, {"tok.weight": emb, **block}, freeze=freeze)
    return model


def train(model: Encoder, steps: int = 30) -> list[float]:
    """A few Adam steps on a toy task: does token 7 occur in the sequence?"""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(10, 300, (32, 6), generator=gen)
    labels = (torch.rand(32, generator=gen) < 0.5).long()
    ids[labels == 1, 2] = 7
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.05)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(ids), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_open_reads_the_build_lists_version_verified(consumer: Path) -> None:
    qwen = wgtpm.open(MODULE, project_dir=consumer)
    assert (qwen.module, qwen.version) == (MODULE, VERSION)
    weights = qwen.path / "model.safetensors"
    emb = qwen.tensor(EMBED)
    vocab = json.loads((qwen.path / "config.json").read_text())["vocab_size"]
    assert emb.dtype == torch.float32 and tuple(emb.shape) == (vocab, 64)
    origin = origin_of(emb)
    assert origin is not None
    assert (origin.module, origin.version, origin.file, origin.tensor) == (
        MODULE,
        VERSION,
        "model.safetensors",
        EMBED,
    )
    assert origin.sha256 == tensor_sha(weights, EMBED)
    assert origin.converted_to is None
    block = qwen.tensors(BLOCK)
    assert "self_attn.q_proj.weight" in block and "mlp.down_proj.weight" in block
    assert not any(k.startswith("model.") for k in block)


def test_a_grafted_block_trains_a_head_and_inspect_shows_each_origin(
    consumer: Path, user_env: dict[str, str], tmp_path: Path
) -> None:
    qwen = wgtpm.open(MODULE, project_dir=consumer)
    model = grafted_encoder(qwen)
    frozen_before = {
        n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad
    }
    assert "tok.weight" in frozen_before and "block.self_attn.q_proj.weight" in frozen_before
    losses = train(model)
    assert losses[-1] < losses[0] * 0.8
    for name, p in model.named_parameters():
        if name in frozen_before:
            assert torch.equal(p, frozen_before[name]), name
    out = wgtpm.save(model, tmp_path / "build" / "encoder")

    manifest = json.loads((out / "manifest.json").read_text())
    tensors = manifest["weights"]["tensors"]
    weights = qwen.path / "model.safetensors"
    assert tensors["tok.weight"]["origin"] == "imported"
    assert tensors["tok.weight"]["source"]["sha256"] == tensor_sha(weights, EMBED)
    assert tensors["tok.weight"]["sha256"] == tensor_sha(weights, EMBED)  # the same bytes
    assert tensors["block.mlp.up_proj.weight"]["source"]["tensor"] == BLOCK + "mlp.up_proj.weight"
    assert tensors["head.weight"]["origin"] == "trained" and "source" not in tensors["head.weight"]
    assert manifest["modules"] == {MODULE: VERSION}

    r = cli("inspect", str(out), cwd=consumer, env=user_env)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert f"imported from {MODULE}@{VERSION}, frozen" in text
    assert f"model.safetensors#{EMBED}" in text
    assert f"model.safetensors#{BLOCK}self_attn.k_norm.weight" in text
    assert f"sha256 {tensor_sha(weights, EMBED)}" in text
    head = next(line for line in text.splitlines() if "head.weight" in line)
    assert head.rstrip().endswith("trained")
    # Every grafted tensor is shown with its own source and hash.
    for name in ranges(weights):
        if name.startswith(BLOCK):
            assert f"sha256 {tensor_sha(weights, name)}" in text, name


def test_a_byte_flipped_in_a_cached_tensor_is_refused_when_read(consumer: Path) -> None:
    qwen = wgtpm.open(MODULE, project_dir=consumer)
    qwen.tensor(EMBED)  # the tables are computed from the verified file here
    weights = qwen.path / "model.safetensors"
    start, end = ranges(weights)[EMBED]
    os.chmod(weights, 0o644)
    with weights.open("r+b") as fh:
        fh.seek(start + (end - start) // 2)
        b = fh.read(1)
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([b[0] ^ 0x01]))
    for reader in (qwen, wgtpm.open(MODULE, project_dir=consumer)):
        with pytest.raises(ChecksumMismatchError) as exc:
            reader.tensor(EMBED)
        assert EMBED in str(exc.value) and "model.safetensors" in str(exc.value)
    # The other tensors of the file are whole, and still read.
    assert qwen.tensors(BLOCK)
    with pytest.raises(ChecksumMismatchError):
        qwen.load()  # the whole file is checked before transformers reads it
    # Without the tables computed before the flip, the changed file gets none: refused too.
    for kept in (Path(os.environ["WGTPM_CACHE"]) / "tensors").glob("*.json"):
        kept.unlink()
    with pytest.raises(wgtpm.WgtpmError, match=re.escape("model.safetensors")):
        wgtpm.open(MODULE, project_dir=consumer).tensor(BLOCK + "mlp.up_proj.weight")


def test_graft_refuses_a_wrong_shape_naming_parameter_and_shapes(consumer: Path) -> None:
    qwen = wgtpm.open(MODULE, project_dir=consumer)
    emb = qwen.tensor(EMBED)
    model = Encoder(vocab=emb.shape[0])
    before = model.tok.weight.detach().clone()
    q = qwen.tensor(BLOCK + "self_attn.q_proj.weight")
    with pytest.raises(GraftError) as exc:
        wgtpm.graft(model, {"tok.weight": emb, "block.self_attn.k_proj.weight": q})
    msg = str(exc.value)
    assert "block.self_attn.k_proj.weight" in msg and "[32, 64]" in msg and "[64, 64]" in msg
    assert f"{MODULE}@{VERSION}/model.safetensors#{BLOCK}self_attn.q_proj.weight" in msg
    assert len(msg.splitlines()) == 1
    # Nothing changed: the good pair before the bad one was not copied either.
    assert torch.equal(model.tok.weight, before) and model.tok.weight.requires_grad
    with pytest.raises(
        UsageError, match=re.escape("no parameter tok.weigth; did you mean tok.weight")
    ):
        wgtpm.graft(model, {"tok.weigth": emb})


def test_a_dtype_is_never_converted_silently_and_dtype_is_recorded(
    consumer: Path, tmp_path: Path
) -> None:
    qwen = wgtpm.open(MODULE, project_dir=consumer)
    emb = qwen.tensor(EMBED)
    model = Encoder(vocab=emb.shape[0]).to(torch.bfloat16)
    with pytest.raises(GraftError) as exc:
        wgtpm.graft(model, {"tok.weight": emb})
    assert "torch.bfloat16" in str(exc.value) and "torch.float32" in str(exc.value)
    assert "dtype=" in str(exc.value)
    half = qwen.tensor(EMBED, dtype=torch.bfloat16)
    origin = origin_of(half)
    assert origin is not None and (origin.dtype, origin.converted_to) == ("F32", "bfloat16")
    wgtpm.graft(model, {"tok.weight": half})
    out = wgtpm.save(model, tmp_path / "half")
    entry = json.loads((out / "manifest.json").read_text())["weights"]["tensors"]["tok.weight"]
    assert entry["origin"] == "imported" and entry["dtype"] == "BF16"
    assert entry["source"]["converted_to"] == "bfloat16"
    assert entry["source"]["sha256"] == tensor_sha(qwen.path / "model.safetensors", EMBED)


def test_a_grafted_tensor_trained_further_is_saved_as_imported_and_trained(
    consumer: Path, tmp_path: Path
) -> None:
    qwen = wgtpm.open(MODULE, project_dir=consumer)
    model = grafted_encoder(qwen, freeze=False)
    assert model.tok.weight.requires_grad
    train(model, steps=3)
    entry = json.loads((wgtpm.save(model, tmp_path / "m") / "manifest.json").read_text())
    tok = entry["weights"]["tensors"]["tok.weight"]
    assert tok["origin"] == "imported+trained" and not tok["frozen"]
    assert tok["source"]["tensor"] == EMBED


def test_save_is_byte_stable(consumer: Path, tmp_path: Path) -> None:
    qwen = wgtpm.open(MODULE, project_dir=consumer)
    torch.manual_seed(1)
    model = grafted_encoder(qwen)
    a, b = wgtpm.save(model, tmp_path / "a"), wgtpm.save(model, tmp_path / "b")
    for name in ("manifest.json", "weights.safetensors"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


def test_load_is_the_verified_model_with_its_base_identity(consumer: Path) -> None:
    qwen = wgtpm.open(MODULE, project_dir=consumer)
    lm = qwen.load()
    lines = "".join(
        f"{name} {hashlib.sha256((qwen.path / name).read_bytes()).hexdigest()}\n"
        for name in ("gguf/extra.gguf", "model.safetensors")
    )
    assert lm._wgtpm_base == wgtpm.pinned.BaseIdentity(
        MODULE, VERSION, hashlib.sha256(lines.encode()).hexdigest()
    )
    assert torch.equal(lm.model.embed_tokens.weight, qwen.tensor(EMBED))


def test_open_errors_say_what_to_do(consumer: Path) -> None:
    with pytest.raises(
        ResolveError, match=r"hf\.co/acme/other is not in the build list.*wgtpm get"
    ):
        wgtpm.open("hf.co/acme/other", project_dir=consumer)
    with pytest.raises(
        UsageError, match=re.escape("without a version; the version comes from wgt.mod")
    ):
        wgtpm.open(f"{MODULE}@{VERSION}", project_dir=consumer)
    qwen = wgtpm.open(MODULE, project_dir=consumer)
    with pytest.raises(NotFoundError, match=re.escape("model.embed_token.weight")) as exc:
        qwen.tensor("model.embed_token.weight")
    assert EMBED in str(exc.value)  # the close match
    with pytest.raises(NotFoundError, match=re.escape("no weights file model.gguf")):
        qwen.tensor(EMBED, file="model.gguf")
    with pytest.raises(NotFoundError, match=re.escape("model.layers.9.")):
        qwen.tensors("model.layers.9.")


def test_gguf_tensors_come_in_torch_shape_and_quantized_ones_are_refused(consumer: Path) -> None:
    qwen = wgtpm.open(MODULE, project_dir=consumer)
    matrix = qwen.tensor("matrix")  # found in the one file that has it
    assert torch.equal(matrix, torch.tensor(GGUF_MATRIX))  # GGUF stores [32, 2]: ne[0] first
    origin = origin_of(matrix)
    assert origin is not None and (origin.file, origin.dtype) == ("gguf/extra.gguf", "F32")
    half = qwen.tensor("half", file="gguf/extra.gguf", dtype=torch.float32)
    assert half.dtype == torch.float32 and torch.equal(half, matrix)
    with pytest.raises(UsageError, match="dtype Q8_0 has no torch dtype") as exc:
        qwen.tensor("q8")
    assert f"{MODULE}@{VERSION}/gguf/extra.gguf#q8" in str(exc.value)


class _Marker:
    """Unpickling this creates the file ``path``: proof that a pickle was loaded."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.path, "w"))


def test_load_never_unpickles_a_pytorch_bin(
    consumer: Path, hub: HuggingFaceServer, user_env: dict[str, str], qwen_files: dict[str, bytes]
) -> None:
    import pickle

    marker = consumer.parent / "unpickled"
    repo = hub.repo("acme", "pickled")
    repo.commit(
        {
            "config.json": qwen_files["config.json"],
            "pytorch_model.bin": pickle.dumps(_Marker(str(marker))),
        }
    )
    repo.tag("v0.1.0")
    assert cli("get", "hf.co/acme/pickled@v0.1.0", cwd=consumer, env=user_env).returncode == 0
    pickled = wgtpm.open("hf.co/acme/pickled", project_dir=consumer)
    with pytest.raises(
        wgtpm.BuildError, match=re.escape("hf.co/acme/pickled@v0.1.0: transformers cannot")
    ):
        pickled.load()
    with pytest.raises(UsageError, match="trust_remote_code"):
        pickled.load(trust_remote_code=True)
    assert not marker.exists()


def test_a_local_directory_module_reads_and_saves_without_a_version(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    from wgtpm.deps import MapResolver, ResolvedModule

    d = tmp_path / "local"
    d.mkdir()
    save_file({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3)}, str(d / "m.safetensors"))
    resolver = MapResolver({"example.com/local": ResolvedModule("example.com/local", "", d)})
    local = wgtpm.open("example.com/local", resolver=resolver)
    w = local.tensor("w")
    origin = origin_of(w)
    assert (
        origin is not None and origin.label == "example.com/local/m.safetensors#w (local directory)"
    )
    model = torch.nn.Linear(3, 2, bias=False)
    wgtpm.graft(model, {"weight": w})
    out = wgtpm.save(model, tmp_path / "saved")
    r = (out / "manifest.json").read_text()
    assert '"version": ""' in r and '"example.com/local": ""' in r
