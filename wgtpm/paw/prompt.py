"""The prompt template of a program: the pseudo-program around the input, in the chat format.

The text sent to the interpreter as the user's message is::

    {pseudo_program}

    [INPUT]
    {INPUT_PLACEHOLDER}
    [END_INPUT]

(without the pseudo-program and blank line when there is none), rendered
with the interpreter's chat template (generation prompt on, thinking off)
into ``prompt_template.txt``. The SDK replaces ``{INPUT_PLACEHOLDER}`` with
the caller's input and lets the model continue.
"""

from __future__ import annotations

from typing import Any

from .._errors import BuildError
from .runtime import INPUT_PLACEHOLDER

__all__ = ["fill", "raw_prompt", "render_chat"]


def raw_prompt(pseudo_program: str) -> str:
    """The user message, before the chat template."""
    body = f"[INPUT]\n{INPUT_PLACEHOLDER}\n[END_INPUT]"
    pseudo = pseudo_program.strip()
    return f"{pseudo}\n\n{body}" if pseudo else body


def render_chat(tokenizer: Any, content: str) -> str:
    """``content`` as one user turn in ``tokenizer``'s chat template, ready for the answer."""
    if not getattr(tokenizer, "chat_template", None):
        raise BuildError(
            "the interpreter's tokenizer has no chat template (tokenizer_config.json chat_template); "
            "use an instruction-tuned interpreter"
        )
    messages = [{"role": "user", "content": content}]
    rendered = tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    if not isinstance(rendered, str) or rendered.count(INPUT_PLACEHOLDER) != content.count(
        INPUT_PLACEHOLDER
    ):
        raise BuildError(
            f"the interpreter's chat template altered the {INPUT_PLACEHOLDER} placeholder"
        )
    return rendered


def fill(template: str, text: str) -> str:
    """The prompt for ``text``: the template with its one placeholder replaced."""
    before, after = template.split(INPUT_PLACEHOLDER)
    return before + text + after
