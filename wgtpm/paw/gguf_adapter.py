"""LoRA adapters in llama.cpp's GGUF format: write from trained tensors, read back.

An adapter GGUF has architecture ``qwen3``, the keys ``general.type =
"adapter"``, ``adapter.type = "lora"`` and ``adapter.lora.alpha`` (float32),
and for each adapted module of layer ``L`` two tensors::

    blk.{L}.{attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down}.weight.lora_a   ne = [in, r]
    blk.{L}.{...}.weight.lora_b                                                        ne = [r, out]

(``ne`` is GGML's dimension order, innermost first; as numpy arrays these are
peft's ``lora_A`` of shape ``(r, in)`` and ``lora_B`` of shape ``(out, r)``.)
llama.cpp adds ``alpha / r * B @ A`` to the base weight. Tensors are written
in compile-by-training's order, which is the order of the peft tensor names
as strings (``safetensors.load_file`` sorts them): ``layers.0.mlp.down_proj``,
``…gate_proj``, ``…up_proj``, ``layers.0.self_attn.k_proj``, ``…o_proj``,
``…q_proj``, ``…v_proj``, then layers 1, 10, 11, …, 19, 2, 20, …; ``lora_a``
before ``lora_b``. The same adapter therefore gives the same bytes as
compile.py's converter, and equal tensors give equal files. Block
quantisations (``Q4_0``, ``Q8_0``) need every row length, so ``in`` and ``r``,
to be a multiple of 32.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _json
from .adapter_format import QUANTIZATIONS, TENSOR_NAME_RE, quantization_block
from .shape import GGUF_MODULE_NAMES

__all__ = [
    "QUANTIZATIONS",
    "AdapterInfo",
    "AdapterTensor",
    "LoraPairs",
    "adapter_bytes",
    "convert_peft_adapter",
    "load_lora_pairs",
    "peft_name_order",
    "peft_state_to_pairs",
    "quantization_block",
    "read_adapter_info",
    "read_gguf_info",
]

FloatArray = npt.NDArray[np.float32]
#: (layer, peft module name) -> (lora_A of shape (r, in), lora_B of shape (out, r)).
LoraPairs = Mapping[tuple[int, str], tuple[FloatArray, FloatArray]]

_GGUF_TO_MODULE = {v: k for k, v in GGUF_MODULE_NAMES.items()}
_PEFT_NAME_RE = re.compile(
    r"(?:^|\.)layers\.(\d+)\.(?:self_attn|mlp)\.("
    + "|".join(GGUF_MODULE_NAMES)
    + r")\.lora_(A|B)(?:\.default)?\.weight\Z"
)


def adapter_bytes(pairs: LoraPairs, *, alpha: float, quantization: str = "Q4_0") -> bytes:
    """The GGUF adapter for ``pairs``; raises ``ValueError`` for shapes the type cannot hold."""
    import gguf
    from gguf.quants import quantize

    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization {quantization!r} is not one of {', '.join(QUANTIZATIONS)}")
    if not pairs:
        raise ValueError("an adapter needs at least one LoRA pair")
    qtype = gguf.GGMLQuantizationType[quantization]
    block = quantization_block(quantization)
    with tempfile.TemporaryDirectory(prefix="wgtpm-gguf-") as tmp:
        path = Path(tmp) / "adapter.gguf"
        writer = gguf.GGUFWriter(str(path), arch="qwen3")
        writer.add_type("adapter")
        writer.add_string("adapter.type", "lora")
        writer.add_float32("adapter.lora.alpha", float(alpha))
        for layer, module in sorted(pairs, key=peft_name_order):
            a, b = pairs[(layer, module)]
            base = f"blk.{layer}.{GGUF_MODULE_NAMES[module]}.weight"
            for suffix, matrix in (("lora_a", a), ("lora_b", b)):
                data = np.ascontiguousarray(matrix, dtype=np.float32)
                if data.shape[-1] % block:
                    raise ValueError(
                        f"{base}.{suffix}: rows of {data.shape[-1]} values do not fit {quantization} "
                        f"blocks of {block}; use a LoRA rank and model sizes that are multiples of {block}, "
                        "or quantization = 'F16'"
                    )
                if quantization == "F32":
                    writer.add_tensor(f"{base}.{suffix}", data)
                else:
                    writer.add_tensor(f"{base}.{suffix}", quantize(data, qtype), raw_dtype=qtype)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        return path.read_bytes()


_ATTENTION = frozenset({"q_proj", "k_proj", "v_proj", "o_proj"})


def peft_name_order(key: tuple[int, str]) -> str:
    """The sort key of a (layer, module) pair: its peft module name, compared as a string."""
    layer, module = key
    group = "self_attn" if module in _ATTENTION else "mlp"
    return f"model.layers.{layer}.{group}.{module}."


@dataclass(frozen=True)
class AdapterTensor:
    """One tensor of an adapter: its name, GGML type and shape (``ne``, innermost first)."""

    name: str
    ggml_type: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class AdapterInfo:
    """What an adapter GGUF declares: its key/value fields and tensors, in file order."""

    fields: Mapping[str, Any]
    tensors: tuple[AdapterTensor, ...]


def read_adapter_info(data: bytes) -> AdapterInfo:
    """Parse the header of GGUF bytes; raises ``ValueError`` when they are not GGUF."""
    with _reader(data) as reader:
        return _info(reader)


def read_gguf_info(path: Path) -> AdapterInfo:
    """Parse the header of the GGUF file at ``path`` (memory-mapped, never read whole)."""
    from gguf import GGUFReader

    try:
        return _info(GGUFReader(path))
    except (ValueError, IndexError, KeyError, OverflowError, TypeError) as exc:
        raise ValueError(f"{path}: not a readable GGUF file ({exc})") from exc


def _info(reader: Any) -> AdapterInfo:
    fields = {
        name: _field_value(field)
        for name, field in reader.fields.items()
        if not name.startswith("GGUF.")
    }
    tensors = tuple(
        AdapterTensor(t.name, t.tensor_type.name, tuple(int(d) for d in t.shape))
        for t in reader.tensors
    )
    return AdapterInfo(fields=fields, tensors=tensors)


def load_lora_pairs(data: bytes) -> dict[tuple[int, str], tuple[FloatArray, FloatArray]]:
    """The adapter's LoRA matrices as float32 (dequantised), keyed like :data:`LoraPairs`."""
    from gguf.quants import dequantize

    halves: dict[tuple[int, str], dict[str, FloatArray]] = {}
    with _reader(data) as reader:
        for tensor in reader.tensors:
            match = TENSOR_NAME_RE.fullmatch(tensor.name)
            if not match:
                continue
            shape = tuple(int(d) for d in reversed(tensor.shape))
            values = dequantize(np.array(tensor.data), tensor.tensor_type)
            key = (int(match[1]), _GGUF_TO_MODULE[match[2]])
            halves.setdefault(key, {})[match[3]] = values.reshape(shape).astype(np.float32)
    return {k: (v["a"], v["b"]) for k, v in halves.items() if "a" in v and "b" in v}


class _reader:
    """A GGUFReader over bytes (the reader needs a file), removed afterwards."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Any:
        from gguf import GGUFReader

        self._tmp = tempfile.TemporaryDirectory(prefix="wgtpm-gguf-")
        path = Path(self._tmp.name) / "adapter.gguf"
        path.write_bytes(self._data)
        try:
            return GGUFReader(path)
        except (ValueError, IndexError, KeyError, OverflowError, TypeError) as exc:
            self.__exit__()
            raise ValueError(f"not a readable GGUF file ({exc})") from exc

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def _field_value(field: Any) -> Any:
    try:
        return field.contents()
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def peft_state_to_pairs(
    state: Mapping[str, Any],
) -> dict[tuple[int, str], tuple[FloatArray, FloatArray]]:
    """Group a peft LoRA state dict (``...layers.3.self_attn.q_proj.lora_A.weight``) into pairs."""
    halves: dict[tuple[int, str], dict[str, FloatArray]] = {}
    for name, tensor in state.items():
        match = _PEFT_NAME_RE.search(name)
        if match:
            array = np.asarray(
                tensor.detach().float().cpu().numpy() if hasattr(tensor, "detach") else tensor
            )
            halves.setdefault((int(match[1]), match[2]), {})[match[3]] = array.astype(np.float32)
    pairs = {k: (v["A"], v["B"]) for k, v in halves.items() if "A" in v and "B" in v}
    if not pairs:
        raise ValueError("no Qwen3 LoRA tensors (layers.N.{self_attn|mlp}.X_proj.lora_A/B) found")
    return pairs


def convert_peft_adapter(adapter_dir: Path, *, quantization: str = "Q4_0") -> bytes:
    """The GGUF adapter for a peft adapter directory (``adapter_config.json`` + safetensors)."""
    from safetensors.torch import load_file

    config = _json.loads((adapter_dir / "adapter_config.json").read_text(encoding="utf-8"))
    alpha = float(config.get("lora_alpha", config.get("r", 8)))
    state = load_file(str(adapter_dir / "adapter_model.safetensors"))
    return adapter_bytes(peft_state_to_pairs(state), alpha=alpha, quantization=quantization)
