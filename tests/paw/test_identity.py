"""The program ID is a published format: a known document keeps its known ID."""

from __future__ import annotations

from wgtpm._fs import canonical_json
from wgtpm.paw.identity import ID_SCHEME, program_id


def test_a_known_document_keeps_its_program_id() -> None:
    # Pinned when the ID moved onto wgtpm._fs.canonical_json: the bytes must not change.
    assert (
        program_id(
            spec='Classify a message as "immediate" or "wait". Réponds.',
            pseudo_program="",
            recipe={
                "steps": 100,
                "learning_rate": 2e-4,
                "lora_alpha": 16.0,
                "target_modules": ["q_proj", "v_proj"],
            },
            interpreter="Qwen/Qwen3-0.6B",
            runtime={"runtime_id": "qwen3-0.6b-q6_k", "n_ctx": 2048},
            adapter_sha256="ab" * 32,
        )
        == "cd3f858dbefa6da46fe8b4080356a665"
    )


def test_the_document_is_compact_sorted_utf8_json() -> None:
    assert canonical_json({"scheme": ID_SCHEME, "spec": "é", "a": [1.0, 2]}) == (
        '{"a":[1.0,2],"scheme":"wgtpm-paw/1","spec":"é"}'.encode()
    )
