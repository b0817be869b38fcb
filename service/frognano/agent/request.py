"""The chat-completion request: its sampling values, and its body prebuilt around the history."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from frognano.agent.turns import Conversation, dumps

__all__ = ["RequestBody", "SamplingConfig"]


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling values sent on every request: the model card's "thinking, precise coding"
    defaults. All are sent explicitly, since SGLang otherwise takes the checkpoint's
    generation_config.json defaults."""

    max_tokens: int = 8192
    temperature: float = 0.6
    top_p: float = 0.95
    top_k: int = 20
    min_p: float = 0.0
    presence_penalty: float = 0.0
    enable_thinking: bool = True


class RequestBody:
    """The bytes of each request: the parts that never change during a run (model, tools,
    sampling) are serialised once, and the messages are the conversation's stored fragments,
    so the same conversation always gives the same bytes and an earlier message never
    changes between requests (the server's prefix cache depends on it)."""

    def __init__(self, model: str, tools_json: bytes, sampling: SamplingConfig) -> None:
        """`tools_json` is sent byte for byte as the request's `tools`."""
        self._head = b'{"model":' + dumps(model) + b',"messages":'
        self._tools = b',"tools":' + tools_json
        tail = {
            "max_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": sampling.top_k,
            "min_p": sampling.min_p,
            "presence_penalty": sampling.presence_penalty,
            "chat_template_kwargs": {"enable_thinking": sampling.enable_thinking},
            "stream": False,
        }
        self._tail = b"," + dumps(tail)[1:]

    def build(
        self,
        conversation: Conversation,
        *,
        extra: list[dict[str, Any]] | None = None,
        with_tools: bool = True,
    ) -> bytes:
        """Model, messages (the conversation's fragments, then `extra`), tools unless
        `with_tools` is False, every sampling value, `stream: false`."""
        fragments = conversation.fragments
        if extra:
            fragments = [*fragments, *(dumps(message) for message in extra)]
        messages = b"[" + b",".join(fragments) + b"]"
        tools = self._tools if with_tools else b""
        return self._head + messages + tools + self._tail
