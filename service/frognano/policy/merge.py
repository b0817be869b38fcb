"""The policy of one repository: built-in defaults, then each file's layers, key by key."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from wcmatch import fnmatch

from frognano.policy.fileformat import SECTIONS
from frognano.policy.issues import PolicyError, PolicyIssue
from frognano.policy.models import EffectivePolicy

__all__ = ["BUILT_IN", "LEAVES", "Layer", "Origin", "PolicySet", "Setting", "repo_matches"]

BUILT_IN = "built-in default"

#: Every leaf key of the effective policy, in display order ("enabled", "trigger.label", ...).
#: Lists are leaves: a layer that sets one replaces it whole.
LEAVES: tuple[str, ...] = (
    "enabled",
    *(f"{section}.{key}" for section, model in SECTIONS.items() for key in model.model_fields),
)

_REPO_FLAGS = fnmatch.IGNORECASE | fnmatch.BRACE | fnmatch.DOTMATCH


@lru_cache(maxsize=4096)
def _matcher(part: str) -> fnmatch.WcMatcher[str]:
    return fnmatch.compile(part, flags=_REPO_FLAGS)


def repo_matches(pattern: str, repo: str) -> bool:
    """Whether `OWNER/NAME` matches a rule's glob: case-insensitive, `*` never crosses `/`.

    `pattern` must have passed `fileformat.check_repo_glob` (exactly one `/`); owner and name
    are matched separately, so no wildcard can span the two.
    """
    pattern_owner, _, pattern_name = pattern.partition("/")
    owner, _, name = repo.partition("/")
    return _matcher(pattern_owner).match(owner) and _matcher(pattern_name).match(name)


def check_repo_name(repo: str) -> str:
    """`repo` if it is `OWNER/NAME`, else ValueError."""
    owner, slash, name = repo.partition("/")
    if not slash or not owner or not name or "/" in name or repo != repo.strip():
        raise ValueError(f"a repository is named OWNER/NAME, e.g. acme/api (got {repo!r})")
    return repo


@dataclass(frozen=True)
class Setting:
    """One key a layer sets, with the line that sets it."""

    value: Any
    line: int


@dataclass(frozen=True)
class Layer:
    """A file's `defaults` (match None: every repository) or one of its `repos` rules."""

    file: Path
    line: int
    where: str
    """`defaults` or `repos[1]` (0-based, as in error paths)."""
    settings: Mapping[str, Setting]
    """Leaf key (see LEAVES) -> the value the layer gives it."""
    match: str | None = None

    @property
    def label(self) -> str:
        """`defaults` or `repos[1] match 'acme/api'`."""
        return self.where if self.match is None else f"{self.where} match {self.match!r}"

    def applies_to(self, repo: str) -> bool:
        return self.match is None or repo_matches(self.match, repo)

    def source(self, setting: Setting) -> str:
        return f"{self.file}:{setting.line} ({self.label})"


@dataclass(frozen=True)
class Origin:
    """Where the value of one leaf key of a repository's policy comes from."""

    path: str
    """Leaf key, e.g. `verify.command`."""
    value: Any
    source: str
    """`built-in default`, `FILE:LINE (defaults)` or `FILE:LINE (repos[1] match 'acme/api')`."""
    file: Path | None = None
    line: int | None = None


def _flat_defaults() -> dict[str, Any]:
    dumped = EffectivePolicy().model_dump()
    return {
        leaf: dumped[leaf] if "." not in leaf else dumped[leaf.split(".")[0]][leaf.split(".")[1]]
        for leaf in LEAVES
    }


def _nest(values: Mapping[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {section: {} for section in SECTIONS}
    for leaf, value in values.items():
        section, dot, key = leaf.partition(".")
        if dot:
            nested[section][key] = list(value) if isinstance(value, tuple) else value
        else:
            nested[leaf] = value
    return nested


@dataclass(frozen=True)
class _Resolved:
    policy: EffectivePolicy
    origins: Mapping[str, tuple[Layer, Setting] | None]


@dataclass(frozen=True)
class PolicySet:
    """Every policy file of a directory, validated; immutable, so safe to share."""

    directory: Path
    files: tuple[Path, ...]
    layers: tuple[Layer, ...] = field(repr=False)
    """In the order they apply: every file's `defaults` in file order, then every file's rules
    in file order and rule order."""

    def for_repo(self, repo: str) -> EffectivePolicy:
        """The policy in force for `OWNER/NAME` (matched case-insensitively).

        A repository no rule matches gets the defaults. Raises ValueError for a malformed
        name, and PolicyError if this combination of rules breaks a check that spans keys.
        """
        return self._resolve(repo).policy

    def explain(self, repo: str) -> list[Origin]:
        """One Origin per leaf key of `for_repo(repo)`, in LEAVES order."""
        resolved = self._resolve(repo)
        dumped = resolved.policy.model_dump()
        origins = []
        for leaf in LEAVES:
            section, dot, key = leaf.partition(".")
            value = dumped[section][key] if dot else dumped[leaf]
            found = resolved.origins[leaf]
            if found is None:
                origins.append(Origin(leaf, value, BUILT_IN))
            else:
                layer, setting = found
                origins.append(Origin(leaf, value, layer.source(setting), layer.file, setting.line))
        return origins

    def check(self) -> list[PolicyIssue]:
        """Problems of the merged policies a repository can get: the defaults alone, and each
        rule alone on top of them (combinations of rules are checked by `for_repo`)."""
        defaults = [layer for layer in self.layers if layer.match is None]
        candidates: list[tuple[list[Layer], str]] = [(defaults, "with the defaults")]
        candidates.extend(
            ([*defaults, layer], f"with {layer.label} of {layer.file}")
            for layer in self.layers
            if layer.match is not None
        )
        issues: list[PolicyIssue] = []
        for layers, context in candidates:
            try:
                self._merge(layers, context)
            except PolicyError as exc:
                issues.extend(issue for issue in exc.issues if issue not in issues)
        return issues

    def _resolve(self, repo: str) -> _Resolved:
        check_repo_name(repo)
        layers = [layer for layer in self.layers if layer.applies_to(repo)]
        return self._merge(layers, f"in the policy of {repo}")

    def _merge(self, layers: Iterable[Layer], context: str) -> _Resolved:
        values = _flat_defaults()
        origins: dict[str, tuple[Layer, Setting] | None] = dict.fromkeys(LEAVES)
        for layer in layers:
            for leaf, setting in layer.settings.items():
                values[leaf] = setting.value
                origins[leaf] = (layer, setting)
        try:
            policy = EffectivePolicy.model_validate(_nest(values))
        except ValidationError as exc:
            raise PolicyError(self._issues(exc, origins, context)) from None
        return _Resolved(policy, origins)

    def _issues(
        self,
        exc: ValidationError,
        origins: Mapping[str, tuple[Layer, Setting] | None],
        context: str,
    ) -> list[PolicyIssue]:
        issues = []
        for error in exc.errors(include_url=False):
            loc = [str(part) for part in error["loc"]]
            prefix = ".".join(loc[:2]) if loc and loc[0] in SECTIONS else (loc[0] if loc else "")
            # A check of a whole section (or of everything) points at the key set last among
            # those it covers: the one that tipped the combination over.
            candidates = [
                (leaf, found)
                for leaf, found in origins.items()
                if found is not None
                and (leaf == prefix or leaf.startswith(f"{prefix}.") or not prefix)
            ]
            message = f"{error['msg'].removeprefix('Value error, ')} ({context})"
            if not candidates:
                issues.append(PolicyIssue(self.directory, None, prefix or "(policy)", message))
                continue
            leaf, (layer, setting) = max(
                candidates, key=lambda item: (self.layers.index(item[1][0]), item[1][1].line)
            )
            issues.append(PolicyIssue(layer.file, setting.line, f"{layer.where}.{leaf}", message))
        return issues
