"""The service's policy: the last good PolicySet, reloaded when the directory changes."""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge

from frognano.errors import ConfigError
from frognano.log import get_logger
from frognano.policy.issues import PolicyError, PolicyIssue
from frognano.policy.loader import load_policies
from frognano.policy.merge import PolicySet
from frognano.policy.order import name_warnings

__all__ = ["InForce", "PolicyStore"]

log = get_logger(__name__)

Fingerprint = tuple[tuple[str, int, int, int], ...] | str


def _fingerprint(directory: Path) -> Fingerprint:
    """Names, sizes, mtimes and inodes of the candidate files: what a change alters.

    stat follows links, so a Kubernetes ConfigMap update (which swaps the `..data` link the
    files point through) changes the inodes even when sizes and times do not.
    """
    entries = []
    try:
        with os.scandir(directory) as scan:
            names = sorted(
                entry.name
                for entry in scan
                if entry.name.endswith((".yaml", ".yml")) and not entry.name.startswith(".")
            )
    except OSError as exc:
        return f"unreadable: {exc.errno}"
    for name in names:
        try:
            stat = os.stat(directory / name)
        except OSError:
            entries.append((name, -1, -1, -1))
        else:
            entries.append((name, stat.st_size, stat.st_mtime_ns, stat.st_ino))
    return tuple(entries)


def _log_warnings(policies: PolicySet) -> None:
    """One `policy.file_names` and one `policy.drops_entries` warning event for a set that
    took effect, each if it has any."""
    names = name_warnings(policies.files)
    if names:
        log.warning(
            "policy.file_names",
            directory=str(policies.directory),
            warnings=[str(warning) for warning in names],
        )
    warnings = policies.warnings()
    if warnings:
        log.warning(
            "policy.drops_entries",
            directory=str(policies.directory),
            warnings=[str(warning) for warning in warnings],
        )


@dataclass(frozen=True)
class InForce:
    """The policy one run uses, and what the latest attempt to change it found."""

    policies: PolicySet
    generation: int
    """Which set it is (1: the one loaded at start)."""
    loaded_at: datetime
    """When it took effect (UTC)."""
    errors: tuple[PolicyIssue, ...]
    """The problems of the latest load attempt; empty when `policies` is what the files say."""


class PolicyStore:
    """Holds the policy in force and swaps in a new one only when all of it is valid.

    The first load happens here and raises ConfigError (PolicyError when files are invalid):
    the service does not start without a valid policy. Later, an invalid change keeps the
    last good set in `current`, exposes the problems in `errors` and logs them.
    """

    def __init__(
        self,
        directory: Path,
        *,
        interval: float = 2.0,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.directory = directory
        self.interval = interval
        self._lock = threading.Lock()
        self._seen = _fingerprint(directory)
        # One immutable snapshot, replaced whole: a run never sees half of a reload.
        self._state = InForce(load_policies(directory), 1, datetime.now(UTC), ())
        # Made only once the first load worked, so a failed start leaves no metric behind.
        where = registry if registry is not None else REGISTRY
        self._errors_gauge = Gauge(
            "frognano_policy_errors",
            "Problems found in the policy files by the latest load attempt (0: it loaded).",
            registry=where,
        )
        self._reloads = Counter(
            "frognano_policy_reloads",
            "Policy reload attempts after start-up, by result (ok or invalid).",
            ["result"],
            registry=where,
        )
        self._generation_gauge = Gauge(
            "frognano_policy_generation",
            "Number of policy sets that took effect since start-up, the first included.",
            registry=where,
        )
        for result in ("ok", "invalid"):
            self._reloads.labels(result=result)
        self._generation_gauge.set(self.generation)
        log.info(
            "policy.loaded",
            directory=str(directory),
            files=[path.name for path in self.current.files],
            generation=self.generation,
        )
        _log_warnings(self.current)

    @property
    def current(self) -> PolicySet:
        """The last set that loaded without error."""
        return self._state.policies

    @property
    def errors(self) -> list[PolicyIssue]:
        """Problems of the latest attempt; empty when it loaded."""
        return list(self._state.errors)

    @property
    def generation(self) -> int:
        """Counts the sets that took effect, the first included."""
        return self._state.generation

    @property
    def loaded_at(self) -> datetime:
        """When `current` took effect (UTC)."""
        return self._state.loaded_at

    def in_force(self) -> PolicySet:
        """`current`, for one run; see `standing`."""
        return self.standing().policies

    def standing(self) -> InForce:
        """`current` for one run, with the latest attempt's problems; logs
        `policy.last_good_in_force` (a warning naming the problems) when the latest change did
        not load, so the run says which policy it used (its status comment says it too)."""
        standing = self._state
        if standing.errors:
            log.warning(
                "policy.last_good_in_force",
                directory=str(self.directory),
                generation=standing.generation,
                errors=[str(issue) for issue in standing.errors],
            )
        return standing

    def changed(self) -> bool:
        """Whether the directory differs from what the latest attempt read."""
        return _fingerprint(self.directory) != self._seen

    def reload(self) -> bool:
        """Load the directory again; True when a new valid set took effect.

        An invalid directory (or a missing or emptied one) changes nothing but `errors`, the
        metrics and the log: `current` and `generation` stay as they were.
        """
        with self._lock:
            self._seen = _fingerprint(self.directory)
            try:
                policies = load_policies(self.directory)
            except PolicyError as exc:
                issues = exc.issues
            except ConfigError as exc:
                issues = [PolicyIssue(self.directory, None, "(directory)", str(exc))]
            else:
                self._state = InForce(policies, self.generation + 1, datetime.now(UTC), ())
                self._errors_gauge.set(0)
                self._generation_gauge.set(self.generation)
                self._reloads.labels(result="ok").inc()
                log.info(
                    "policy.reloaded",
                    directory=str(self.directory),
                    files=[path.name for path in policies.files],
                    generation=self.generation,
                )
                _log_warnings(policies)
                return True
            state = self._state
            self._state = InForce(state.policies, state.generation, state.loaded_at, tuple(issues))
            self._errors_gauge.set(len(issues))
            self._reloads.labels(result="invalid").inc()
            log.error(
                "policy.invalid",
                directory=str(self.directory),
                kept_generation=self.generation,
                errors=[str(issue) for issue in issues],
            )
            return False

    async def watch(self) -> None:
        """Poll the directory every `interval` seconds and reload when it changed; runs until
        cancelled. Checks and loads run in a worker thread, off the event loop."""
        while True:
            await asyncio.sleep(self.interval)
            try:
                if await asyncio.to_thread(self.changed):
                    await asyncio.to_thread(self.reload)
            except Exception:  # a bug must not stop hot reload for good
                log.exception("policy.watch_failed", directory=str(self.directory))
