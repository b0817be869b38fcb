"""What a run is handed by its composition root: how to reach the model, how to make sandboxes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from frognano.agent.loop_types import ChatModel
from frognano.agent.model import ModelClient
from frognano.agent.request import SamplingConfig
from frognano.agent.tools.schema import TOOL_DEFINITIONS, TOOLS_JSON
from frognano.agent.turns import AssistantTurn, Conversation
from frognano.run.environment.stage import EnvironmentPort
from frognano.sandbox import SandboxLimits, SandboxOptions, SandboxSpec, create_sandbox
from frognano.sandbox.base import Sandbox
from frognano.settings import Settings

__all__ = ["ModelSession", "RunPorts", "SandboxFactory", "fixed_model"]


class ModelSession(ChatModel, Protocol):
    """One run's connection to the model: it answers turns, says whether the server is
    there (waiting for it when `wait`), and is closed when the run ends."""

    @property
    def base_url(self) -> str | None:
        """The server's address; None for a model in process (nothing to check)."""
        ...

    async def check(self, *, wait: bool = True) -> object: ...

    def describe(self) -> dict[str, Any]:
        """What the trajectory's `run_info` records of the model (after `check`)."""
        ...

    async def aclose(self) -> None: ...


ModelFactory = Callable[[SamplingConfig], ModelSession]
"""Makes one run's model session for the sampling values its policy sets."""


class SandboxFactory(Protocol):
    """Makes a run's sandboxes: the host's own options (from the settings) joined with what
    the run asks for, and a sandbox of a backend from them."""

    def options(
        self,
        *,
        python_env: Path | None,
        repo_venv: Path | None,
        limits: SandboxLimits,
        spec: SandboxSpec,
    ) -> SandboxOptions: ...

    async def create(self, backend: str, options: SandboxOptions) -> Sandbox: ...


@dataclass(frozen=True)
class RunPorts:
    """The two ports of a run, built by `frognano solve`, the worker or a test."""

    model: ModelFactory
    sandboxes: SandboxFactory
    environments: EnvironmentPort | None = None
    """Where built environments are kept (policy environment.index_url); None: a run whose
    policy names an index stops with a configuration error."""

    @classmethod
    def from_settings(cls, settings: Settings) -> RunPorts:
        """The model server, the sandboxes and the environment cache the settings name."""
        return cls(
            _ServerModels(settings),
            _SettingsSandboxes(settings),
            EnvironmentPort.from_settings(settings),
        )


@dataclass(frozen=True)
class _ServerModels:
    settings: Settings

    def __call__(self, sampling: SamplingConfig) -> ModelSession:
        key = self.settings.model_api_key
        return ModelClient(
            base_url=self.settings.model_base_url,
            model=self.settings.model_name,
            api_key=key.get_secret_value() if key is not None else None,
            tools_json=TOOLS_JSON,
            tool_definitions=TOOL_DEFINITIONS,
            sampling=sampling,
        )


@dataclass(frozen=True)
class _SettingsSandboxes:
    settings: Settings

    def options(
        self,
        *,
        python_env: Path | None,
        repo_venv: Path | None,
        limits: SandboxLimits,
        spec: SandboxSpec,
    ) -> SandboxOptions:
        return SandboxOptions.from_settings(
            self.settings, repo_venv=repo_venv, python_env=python_env, limits=limits, spec=spec
        )

    async def create(self, backend: str, options: SandboxOptions) -> Sandbox:
        return await create_sandbox(backend, options)


@dataclass(frozen=True)
class _Fixed:
    """A model that needs no server: checking it finds it there, closing it does nothing."""

    model: ChatModel
    about: dict[str, Any]
    base_url: str | None = None

    def describe(self) -> dict[str, Any]:
        return self.about

    async def complete(
        self,
        conversation: Conversation,
        *,
        extra: list[dict[str, Any]] | None = None,
        with_tools: bool = True,
    ) -> AssistantTurn:
        return await self.model.complete(conversation, extra=extra, with_tools=with_tools)

    async def check(self, *, wait: bool = True) -> object:
        del wait
        return None

    async def aclose(self) -> None:
        return None


def fixed_model(model: ChatModel, about: dict[str, Any] | None = None) -> ModelFactory:
    """A factory that hands every run `model` itself (a replay, a benchmark's scripted one);
    `about` is what the trajectory records of it (default: its class)."""
    described = about if about is not None else {"kind": type(model).__name__}
    return lambda _sampling: _Fixed(model, described)
