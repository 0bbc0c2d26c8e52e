"""A tiny Qwen3 interpreter for tests and the demo: a byte-level BPE tokenizer with
a Qwen3-style chat template and a seeded 2-layer model, saved in Hugging Face
format, and a base-model GGUF with the same hyperparameters.

Nothing can be downloaded from Hugging Face where wgtpm is tested, so PAW
programs are compiled on this model instead of Qwen3-0.6B: the same code
paths (chat template, LoRA on all seven projections, GGUF conversion, the
SDK's cache layout) on a model that trains in seconds on one CPU core.
"""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
CORPUS = [
    "user assistant system [INPUT] [END_INPUT] input output",
    "red green blue yellow purple orange apple banana lime grape cherry plum",
    "Map a colour to a fruit. Reply with the fruit only.",
    "the quick brown fox jumps over the lazy dog 0123456789",
]

#: Sizes of the tiny interpreter (rank-32 LoRA fits Q4_0 blocks: in = 64 or 128).
HIDDEN, INTERMEDIATE, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 64, 128, 2, 4, 2, 16


__all__ = ["make_tiny_qwen3", "write_base_gguf"]


def make_tiny_qwen3(directory: Path) -> Path:
    """Write the tokenizer and a seeded random 2-layer Qwen3 to ``directory``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
    )
    fast.save_pretrained(str(directory))

    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=len(fast),
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        head_dim=HEAD_DIM,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
    )
    model = Qwen3ForCausalLM(config)
    with torch.no_grad():
        # The default std of 0.02 caps every logit near 1 with tied embeddings, and a
        # LoRA cannot change embeddings: give the tokens room to be told apart.
        model.model.embed_tokens.weight.normal_(0.0, 0.25)
    model.save_pretrained(str(directory))
    return directory


def write_base_gguf(path: Path) -> Path:
    """A base-model GGUF carrying the tiny interpreter's qwen3 hyperparameters (and a tensor)."""
    import gguf
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), arch="qwen3")
    writer.add_block_count(LAYERS)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(INTERMEDIATE)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_key_length(HEAD_DIM)
    writer.add_tensor("output_norm.weight", np.ones(HIDDEN, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
