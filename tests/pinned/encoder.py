"""A torch model of the tests' own: a Qwen3-shaped embedding and decoder block, and a head.

Its parameter names follow the Qwen3 checkpoint's below ``model.layers.N.``
so that one block's tensors graft in by name; its forward pass is written
here (causal attention with grouped key/value heads and q/k norms, no
rotary embedding, a SwiGLU MLP), not borrowed from transformers.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from wgtpm.paw.tiny import HEAD_DIM, HEADS, HIDDEN, INTERMEDIATE, KV_HEADS


class RMSNorm(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q_proj = nn.Linear(HIDDEN, HEADS * HEAD_DIM, bias=False)
        self.k_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.v_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.o_proj = nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False)
        self.q_norm = RMSNorm(HEAD_DIM)
        self.k_norm = RMSNorm(HEAD_DIM)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, t, HEADS, HEAD_DIM)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, t, KV_HEADS, HEAD_DIM)).transpose(1, 2)
        v = self.v_proj(x).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        k = k.repeat_interleave(HEADS // KV_HEADS, dim=1)
        v = v.repeat_interleave(HEADS // KV_HEADS, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, HEADS * HEAD_DIM))


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.up_proj = nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.down_proj = nn.Linear(INTERMEDIATE, HIDDEN, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(HIDDEN)
        self.self_attn = Attention()
        self.post_attention_layernorm = RMSNorm(HIDDEN)
        self.mlp = MLP()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Encoder(nn.Module):
    """Token ids ``[N, T]`` -> two logits ``[N, 2]`` (mean-pooled block output, a linear head)."""

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, HIDDEN)
        self.block = Block()
        self.head = nn.Linear(HIDDEN, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h: torch.Tensor = self.block(self.tok(ids))
        out: torch.Tensor = self.head(h.mean(dim=1))
        return out
