"""Run github.com/acme/word-kind's model: python word_kind.py WORD...  (colour or fruit?)

The saved model is read with ``wgtpm.pinned.load_saved``: found in this
project's build list, its bytes checked against wgt.sum, then every tensor
against its manifest; nothing is unpickled and none of the producer's code
runs here. Its forward pass is two lines: the mean of the words' token
embeddings (the tiny Qwen3's, grafted frozen), then the linear head.
"""

from __future__ import annotations

import sys

import torch
from tokenizers import Tokenizer

import wgtpm
from wgtpm.pinned import load_saved

LABELS = ("colour", "fruit")


def main(words: list[str]) -> None:
    saved = load_saved("github.com/acme/word-kind/model")
    origin = saved.origin("tok.weight")  # recorded by wgtpm.graft, checked by load_saved
    assert origin is not None
    print(f"tok.weight: {origin.label}, sha256 {origin.sha256[:16]}…")
    qwen = wgtpm.open(origin.module)  # its tokenizer, at the version of this build list
    if qwen.version != origin.version:
        raise SystemExit(
            f"word-kind was trained on {origin.module}@{origin.version}, not {qwen.label}"
        )
    tokenizer = Tokenizer.from_file(str(qwen.path / "tokenizer.json"))
    w = saved.tensors
    for word in words:
        ids = torch.tensor(tokenizer.encode(word).ids)
        logits = w["head.weight"] @ w["tok.weight"][ids].mean(dim=0) + w["head.bias"]
        print(f"{word}: {LABELS[int(logits.argmax())]}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["purple", "cherry"])
