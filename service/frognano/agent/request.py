"""The chat-completion request: its sampling values, and its body prebuilt around the history."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from frognano.agent.turns import Conversation, dumps

__all__ = ["RequestBody", "RequestFields", "SamplingConfig", "SamplingSummary"]


class TemplateSwitches(TypedDict):
    enable_thinking: bool


class RequestFields(TypedDict):
    """The sampling values of a request, with the chat template's switch and `stream`."""

    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    min_p: float
    presence_penalty: float
    chat_template_kwargs: TemplateSwitches
    stream: bool


class SamplingSummary(TypedDict):
    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    enable_thinking: bool


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

    def request_fields(self) -> RequestFields:
        """The fields every chat-completion request ends with, in the order they are sent."""
        return {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "min_p": self.min_p,
            "presence_penalty": self.presence_penalty,
            "chat_template_kwargs": {"enable_thinking": self.enable_thinking},
            "stream": False,
        }

    def summary(self) -> SamplingSummary:
        """What a trajectory's `run_info` records: the values a policy can set."""
        return {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "enable_thinking": self.enable_thinking,
        }


class RequestBody:
    """The bytes of each request: the parts that never change during a run (model, tools,
    sampling) are serialised once, and the messages are the conversation's stored fragments,
    so the same conversation always gives the same bytes and an earlier message never
    changes between requests (the server's prefix cache depends on it)."""

    def __init__(self, model: str, tools_json: bytes, sampling: SamplingConfig) -> None:
        """`tools_json` is sent byte for byte as the request's `tools`."""
        self._head = b'{"model":' + dumps(model) + b',"messages":'
        self._tools = b',"tools":' + tools_json
        self._tail = b"," + dumps(sampling.request_fields())[1:]

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
