"""The environment phase of a run: refuse redirects, detect the install, reuse or build."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from frognano.errors import ConfigError, EnvironmentBuildError
from frognano.policy.models import EnvironmentPolicy
from frognano.run.environment.build import BuildLog, BuildRequest, build_into
from frognano.run.environment.cache import EnvironmentCache
from frognano.run.environment.detect import detect
from frognano.run.environment.key import environment_key, interpreter_identity
from frognano.run.environment.record import EnvironmentUse
from frognano.run.environment.redirects import find_redirects
from frognano.sandbox.base import Sandbox
from frognano.sandbox.options import SandboxOptions
from frognano.sandbox.pyenv import resolve_python_env

if TYPE_CHECKING:
    from frognano.settings import Settings

MAX_REFUSALS_SHOWN = 10
IMAGE_WITHOUT_DIGEST = (
    "the sandbox image is named by a tag, not a digest (@sha256:...): the environment is kept "
    "under the tag, so a rebuilt image with the same tag reuses an environment built on the "
    "old one; name the image by digest in the policy's sandbox.image"
)


@dataclass(frozen=True)
class EnvironmentPort:
    """This host's built environments, and the index token only their builds may see."""

    cache: EnvironmentCache
    token: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> EnvironmentPort:
        token = settings.index_token
        return cls(
            EnvironmentCache(
                settings.environment_cache_dir(), settings.environment_cache_max_bytes
            ),
            token.get_secret_value() if token is not None else None,
        )


@dataclass(frozen=True)
class Plan:
    """The install a repository gets, before anything runs."""

    commands: tuple[str, ...]
    detected: bool
    key_files: tuple[str, ...]
    notes: tuple[str, ...]
    files: tuple[tuple[str, bytes], ...] = ()


def plan_install(repo_dir: Path, policy: EnvironmentPolicy) -> Plan:
    """The install commands and the files that decide them; EnvironmentBuildError naming each
    file and line that would point the install anywhere but the approved index."""
    found = detect(repo_dir)
    refused = find_redirects(repo_dir, found.key_files)
    if refused:
        shown = "\n".join(f"- {item}" for item in refused[:MAX_REFUSALS_SHOWN])
        more = len(refused) - MAX_REFUSALS_SHOWN
        extra = f"\n- and {more} more" if more > 0 else ""
        raise EnvironmentBuildError(
            "the repository's dependency files point the install somewhere other than the "
            f"approved package index, so no environment was built:\n{shown}{extra}\n"
            "Only the policy (environment.index_url, environment.extra_urls) may name where "
            "packages come from"
        )
    if policy.install is not None:
        # What detection would have installed is beside the point; its warnings are not.
        kept = tuple(note for note in found.notes if not _says_what_it_installs(note))
        return Plan(tuple(policy.install), False, found.key_files, kept)
    return Plan(found.commands, True, found.key_files, found.notes, found.files)


def _says_what_it_installs(note: str) -> bool:
    return ": installing " in note or "are not installed:" in note


@dataclass(frozen=True)
class EnvironmentRequest:
    """One run's ask: its repository (as uploaded) and policy, and how its sandboxes are made."""

    repo_dir: Path
    exclude: Sequence[str]
    policy: EnvironmentPolicy
    image: str
    """The sandbox image, or `local` on the local backend: part of the key; on Kubernetes it
    also stands for the interpreter (the image's), which the worker cannot run to ask."""
    backend: str = "local"


async def use_environment(
    request: EnvironmentRequest,
    port: EnvironmentPort | None,
    options: SandboxOptions,
    create: Callable[[SandboxOptions], Awaitable[Sandbox]],
    stack: contextlib.AsyncExitStack,
) -> tuple[SandboxOptions, EnvironmentUse | None]:
    """`options` with the repository's environment bound, held until `stack` closes; the
    options unchanged when the policy names no index."""
    policy = request.policy
    if policy.index_url is None:
        return options, None
    if port is None:
        raise ConfigError(
            "this run has no environment cache; the policy sets environment.index_url"
        )
    if options.repo_venv is not None:
        raise ConfigError(
            "--repo-venv and the policy's environment.index_url both choose the sandbox's "
            "packages; leave out --repo-venv"
        )
    started = time.monotonic()
    plan = await asyncio.to_thread(plan_install, request.repo_dir, policy)
    if request.backend == "local":
        python_env = resolve_python_env(options.python_env, None)
        interpreter = await asyncio.to_thread(interpreter_identity, python_env)
    else:
        # A pod's interpreter is its image's, which the key holds as `image`; the worker
        # cannot run it before the build. Only a digest pins it: see IMAGE_WITHOUT_DIGEST.
        interpreter = f"the image's ({request.backend})"
        if "@sha256:" not in request.image:
            plan = dataclasses.replace(plan, notes=(*plan.notes, IMAGE_WITHOUT_DIGEST))
    key = await asyncio.to_thread(
        environment_key,
        request.repo_dir,
        plan.key_files,
        plan.commands,
        index_urls=[policy.index_url, *policy.extra_urls],
        interpreter=interpreter,
        image=request.image,
        generated=plan.files,
    )
    log = BuildLog()
    build = BuildRequest(
        repo_dir=request.repo_dir,
        exclude=request.exclude,
        commands=plan.commands,
        files=plan.files,
        index_url=policy.index_url,
        extra_urls=policy.extra_urls,
        token=port.token,
        timeout=policy.timeout_seconds,
        backend=request.backend,
        max_bytes=port.cache.max_bytes,
    )

    async def builder(staging: Path) -> None:
        await build_into(staging, build, options, create, log)

    found = await stack.enter_async_context(port.cache.use(key, builder))
    record = EnvironmentUse(
        key=key,
        hit=found.hit,
        seconds=time.monotonic() - started,
        build_seconds=found.build_seconds,
        size_bytes=found.size_bytes,
        index_url=policy.index_url,
        commands=plan.commands,
        detected=plan.detected,
        notes=plan.notes,
        steps=tuple(log.steps),
        refused=tuple(log.refused),
    )
    return dataclasses.replace(options, environment=found.path), record
