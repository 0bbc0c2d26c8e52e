"""The shape of a Qwen3 interpreter, and where LoRA tensors sit in it.

An adapter fits a base model when every ``blk.{L}.{module}.weight.lora_a`` has
``L`` below the base model's layer count and the (in, out) sizes of that
module. :class:`InterpreterShape` holds exactly the numbers needed for that
check; it is read from a Hugging Face ``config.json``, from the ``qwen3.*``
keys of a base-model GGUF, or from the ``interpreter_shape`` a wgtpm-built
bundle records in its ``meta.json``.

The seven LoRA targets of Qwen3 and their names::

    peft name    GGUF name     (in, out)
    q_proj       attn_q        (hidden, heads * head_dim)
    k_proj       attn_k        (hidden, kv_heads * head_dim)
    v_proj       attn_v        (hidden, kv_heads * head_dim)
    o_proj       attn_output   (heads * head_dim, hidden)
    gate_proj    ffn_gate      (hidden, intermediate)
    up_proj      ffn_up        (hidden, intermediate)
    down_proj    ffn_down      (intermediate, hidden)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "GGUF_MODULE_NAMES",
    "HF_MODULE_PATHS",
    "QWEN3_0_6B",
    "TARGET_MODULES",
    "InterpreterShape",
]

#: The LoRA target modules of Qwen3, in the order tensors are written.
TARGET_MODULES: tuple[str, ...] = (
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
)

#: peft/transformers module name -> llama.cpp tensor name.
GGUF_MODULE_NAMES: Mapping[str, str] = {
    "q_proj": "attn_q",
    "k_proj": "attn_k",
    "v_proj": "attn_v",
    "o_proj": "attn_output",
    "gate_proj": "ffn_gate",
    "up_proj": "ffn_up",
    "down_proj": "ffn_down",
}

#: peft/transformers module name -> its place in a Qwen3 decoder layer.
HF_MODULE_PATHS: Mapping[str, str] = {
    "q_proj": "self_attn.q_proj",
    "k_proj": "self_attn.k_proj",
    "v_proj": "self_attn.v_proj",
    "o_proj": "self_attn.o_proj",
    "gate_proj": "mlp.gate_proj",
    "up_proj": "mlp.up_proj",
    "down_proj": "mlp.down_proj",
}


@dataclass(frozen=True)
class InterpreterShape:
    """The sizes of a Qwen3 decoder that decide which LoRA tensors fit it."""

    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int

    def module_dims(self, module: str) -> tuple[int, int]:
        """The (in_features, out_features) of ``module`` (a peft name such as ``q_proj``)."""
        q_out = self.heads * self.head_dim
        kv_out = self.kv_heads * self.head_dim
        dims = {
            "q_proj": (self.hidden, q_out),
            "k_proj": (self.hidden, kv_out),
            "v_proj": (self.hidden, kv_out),
            "o_proj": (q_out, self.hidden),
            "gate_proj": (self.hidden, self.intermediate),
            "up_proj": (self.hidden, self.intermediate),
            "down_proj": (self.intermediate, self.hidden),
        }
        return dims[module]

    def to_json(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_json(cls, value: object) -> InterpreterShape:
        """Read what :meth:`to_json` wrote; raises ``ValueError`` naming the bad field."""
        if not isinstance(value, Mapping):
            raise ValueError("interpreter_shape must be a JSON object")
        fields = ("layers", "hidden", "intermediate", "heads", "kv_heads", "head_dim")
        numbers = {name: value.get(name) for name in fields}
        return cls(**{name: _positive(name, v) for name, v in numbers.items()})

    @classmethod
    def from_hf_config(cls, config: Mapping[str, Any]) -> InterpreterShape:
        """From a transformers ``config.json`` of a Qwen3 model."""
        heads = _positive("num_attention_heads", config.get("num_attention_heads"))
        hidden = _positive("hidden_size", config.get("hidden_size"))
        head_dim = config.get("head_dim") or hidden // heads
        return cls(
            layers=_positive("num_hidden_layers", config.get("num_hidden_layers")),
            hidden=hidden,
            intermediate=_positive("intermediate_size", config.get("intermediate_size")),
            heads=heads,
            kv_heads=_positive("num_key_value_heads", config.get("num_key_value_heads", heads)),
            head_dim=_positive("head_dim", head_dim),
        )

    @classmethod
    def from_gguf_fields(cls, fields: Mapping[str, Any], arch: str = "qwen3") -> InterpreterShape:
        """From the ``{arch}.*`` hyperparameters of a base-model GGUF."""
        heads = _positive(
            f"{arch}.attention.head_count", fields.get(f"{arch}.attention.head_count")
        )
        hidden = _positive(f"{arch}.embedding_length", fields.get(f"{arch}.embedding_length"))
        head_dim = fields.get(f"{arch}.attention.key_length") or hidden // heads
        return cls(
            layers=_positive(f"{arch}.block_count", fields.get(f"{arch}.block_count")),
            hidden=hidden,
            intermediate=_positive(
                f"{arch}.feed_forward_length", fields.get(f"{arch}.feed_forward_length")
            ),
            heads=heads,
            kv_heads=_positive(
                f"{arch}.attention.head_count_kv",
                fields.get(f"{arch}.attention.head_count_kv", heads),
            ),
            head_dim=_positive(f"{arch}.attention.key_length", head_dim),
        )

    def describe(self) -> str:
        return (
            f"{self.layers} layers, hidden {self.hidden}, intermediate {self.intermediate}, "
            f"{self.heads} heads ({self.kv_heads} kv) of {self.head_dim}"
        )


#: Qwen/Qwen3-0.6B, the interpreter of the SDK's ``qwen3-0.6b-q6_k`` runtime.
QWEN3_0_6B = InterpreterShape(
    layers=28, hidden=1024, intermediate=3072, heads=16, kv_heads=8, head_dim=128
)


def _positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value
