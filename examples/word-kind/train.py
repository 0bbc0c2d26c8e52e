"""Train word-kind: is a word a colour or a fruit? Writes model/ with wgtpm.save.

The token embedding is the tiny Qwen3's (``hf.co/wgtpm-demo/tiny-qwen3``, the
version this package's wgt.mod selects, its bytes checked against wgt.sum and
the tensor's sha256), grafted frozen; only the linear head trains. Seeded and
on the CPU: run it twice, get the same model/ bytes (on the same torch).

    python train.py          # then: git add model && git commit && wgtpm publish ...
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer
from torch import nn

import wgtpm

HERE = Path(__file__).resolve().parent
QWEN = "hf.co/wgtpm-demo/tiny-qwen3"
LABELS = ("colour", "fruit")
WORDS = {
    "colour": ("red", "green", "blue", "yellow", "purple"),
    "fruit": ("apple", "banana", "lime", "grape", "cherry", "plum"),
}
STEPS = 200


class WordKind(nn.Module):
    """Token ids ``[T]`` of one word -> two logits: the mean token embedding, a linear head."""

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, len(LABELS))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.head(self.tok(ids).mean(dim=0))
        return out


def main() -> None:
    torch.manual_seed(0)
    qwen = wgtpm.open(QWEN, project_dir=HERE)
    emb = qwen.tensor("model.embed_tokens.weight")  # verified against the tensor's sha256
    model = WordKind(*emb.shape)
    wgtpm.graft(model, {"tok.weight": emb}, freeze=True)  # frozen, its origin recorded
    tokenizer = Tokenizer.from_file(str(qwen.path / "tokenizer.json"))
    data = [
        (torch.tensor(tokenizer.encode(word).ids), LABELS.index(kind))
        for kind, words in WORDS.items()
        for word in words
    ]
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(trainable, lr=0.05)
    for step in range(1, STEPS + 1):
        opt.zero_grad()
        logits = torch.stack([model(ids) for ids, _ in data])
        loss = nn.functional.cross_entropy(logits, torch.tensor([y for _, y in data]))
        loss.backward()
        opt.step()
        if step in (1, STEPS):
            print(f"step {step}/{STEPS} loss {loss.item():.4f}")
    with torch.no_grad():
        right = sum(int(model(ids).argmax()) == y for ids, y in data)
    print(f"{right}/{len(data)} words right; embedding from {qwen.label}, frozen")
    wgtpm.save(model, HERE / "model")
    print(f"wrote {HERE.name}/model: wgtpm inspect model")


if __name__ == "__main__":
    main()
