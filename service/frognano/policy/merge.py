"""The policy of one repository: built-in defaults, then each file's layers, key by key."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from wcmatch import fnmatch

from frognano.policy.fileformat import EXTRA_SUFFIX, SECTIONS, SECURITY_LISTS
from frognano.policy.issues import PolicyError, PolicyIssue
from frognano.policy.models import EffectivePolicy

__all__ = [
    "BUILT_IN",
    "LEAVES",
    "Addition",
    "Layer",
    "Origin",
    "PolicySet",
    "Setting",
    "repo_matches",
]

BUILT_IN = "built-in default"

#: Every leaf key of the effective policy, in display order ("enabled", "trigger.label", ...).
#: Lists are leaves: a layer that sets one replaces it whole; a layer's `KEY_extra` (for the
#: SECURITY_LISTS) adds entries to it instead.
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
    """Leaf key (see LEAVES) -> the value the layer gives it; `KEY_extra` -> entries added."""
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
class Addition:
    """Entries a layer's `KEY_extra` added to a list (those not in it already)."""

    entries: tuple[Any, ...]
    source: str
    file: Path
    line: int


@dataclass(frozen=True)
class Origin:
    """Where the value of one leaf key of a repository's policy comes from."""

    path: str
    """Leaf key, e.g. `verify.command`."""
    value: Any
    source: str
    """`built-in default`, `FILE:LINE (defaults)` or `FILE:LINE (repos[1] match 'acme/api')`:
    where the value, or for a list its entries before `additions`, was set."""
    file: Path | None = None
    line: int | None = None
    additions: tuple[Addition, ...] = ()
    """For a list, the entries added after it was set, layer by layer."""


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


Found = tuple[Layer, Setting]


@dataclass(frozen=True)
class _Resolved:
    policy: EffectivePolicy
    origins: Mapping[str, Found | None]
    """The layer that set each leaf last (replaced or added to it)."""
    bases: Mapping[str, Found | None]
    """The layer that set each leaf whole last."""
    additions: Mapping[str, tuple[tuple[Found, tuple[Any, ...]], ...]]
    warnings: tuple[PolicyIssue, ...]


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
            added = tuple(
                Addition(entries, layer.source(setting), layer.file, setting.line)
                for (layer, setting), entries in resolved.additions.get(leaf, ())
            )
            found = resolved.bases[leaf]
            if found is None:
                origins.append(Origin(leaf, value, BUILT_IN, additions=added))
            else:
                layer, setting = found
                source = layer.source(setting)
                origins.append(Origin(leaf, value, source, layer.file, setting.line, added))
        return origins

    def warnings(self, repo: str | None = None) -> list[PolicyIssue]:
        """Lists of SECURITY_LISTS that a layer replaces, dropping entries the list had: for
        `repo`'s policy, or (None) for the merges `check` makes."""
        found: list[PolicyIssue] = []
        if repo is not None:
            found.extend(self._resolve(repo).warnings)
        for layers, context in self._candidates() if repo is None else ():
            try:
                resolved = self._merge(layers, context)
            except PolicyError:
                continue
            found.extend(issue for issue in resolved.warnings if issue not in found)
        return sorted(found, key=lambda issue: (self.files.index(issue.file), issue.line or 0))

    def _candidates(self) -> list[tuple[list[Layer], str]]:
        defaults = [layer for layer in self.layers if layer.match is None]
        candidates: list[tuple[list[Layer], str]] = [(defaults, "with the defaults")]
        candidates.extend(
            ([*defaults, layer], f"with {layer.label} of {layer.file}")
            for layer in self.layers
            if layer.match is not None
        )
        return candidates

    def check(self) -> list[PolicyIssue]:
        """Problems of the merged policies a repository can get: the defaults alone, and each
        rule alone on top of them (combinations of rules are checked by `for_repo`)."""
        issues: list[PolicyIssue] = []
        for layers, context in self._candidates():
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
        # Where each entry of a security list came from, for the warnings (a built-in
        # default's entry counts as such whoever lists it again).
        built_in = {".".join(leaf): set(values[".".join(leaf)]) for leaf in SECURITY_LISTS}
        owners = {leaf: dict.fromkeys(entries, BUILT_IN) for leaf, entries in built_in.items()}

        def owned(leaf: str, entries: Iterable[Any], source: str) -> dict[Any, str]:
            return {e: BUILT_IN if e in built_in[leaf] else source for e in entries}

        origins: dict[str, Found | None] = dict.fromkeys(LEAVES)
        bases: dict[str, Found | None] = dict.fromkeys(LEAVES)
        additions: dict[str, list[tuple[Found, tuple[Any, ...]]]] = {}
        warnings: list[PolicyIssue] = []
        for layer in layers:
            for key, setting in layer.settings.items():
                if key in origins:
                    leaf = key
                    if leaf in owners:
                        also = layer.settings.get(key + EXTRA_SUFFIX)  # added back at once
                        kept = (*setting.value, *(also.value if also is not None else ()))
                        dropped = _dropped(layer, setting, kept, leaf, owners[leaf])
                        warnings.extend([dropped] if dropped is not None else [])
                        owners[leaf] = owned(leaf, setting.value, layer.source(setting))
                    values[leaf] = setting.value
                    bases[leaf] = (layer, setting)
                    additions[leaf] = []
                else:  # KEY_extra: the entries not in the list yet, after it
                    leaf = key.removesuffix(EXTRA_SUFFIX)
                    current = tuple(values[leaf])
                    added = tuple(e for e in dict.fromkeys(setting.value) if e not in current)
                    values[leaf] = (*current, *added)
                    if added:
                        additions.setdefault(leaf, []).append(((layer, setting), added))
                    owners[leaf].update(owned(leaf, added, layer.source(setting)))
                origins[leaf] = (layer, setting)
        try:
            policy = EffectivePolicy.model_validate(_nest(values))
        except ValidationError as exc:
            raise PolicyError(self._issues(exc, origins, context)) from None
        frozen = {leaf: tuple(found) for leaf, found in additions.items()}
        return _Resolved(policy, origins, bases, frozen, tuple(warnings))

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


def _dropped(
    layer: Layer, setting: Setting, kept: tuple[Any, ...], leaf: str, before: Mapping[Any, str]
) -> PolicyIssue | None:
    """The warning for a layer whose list replaces one without some of its entries (`before`:
    entry -> where it was set; `kept`: what the layer lists)."""
    dropped = [entry for entry in before if entry not in kept]
    if not dropped:
        return None
    counts: dict[str, int] = {}
    for entry in dropped:
        counts[before[entry]] = counts.get(before[entry], 0) + 1
    origins = "; ".join(
        f"{count} built-in default{'s' if count != 1 else ''}"
        if source == BUILT_IN
        else f"{count} set at {source}"
        for source, count in counts.items()
    )
    shown = ", ".join(map(repr, dropped[:4])) + (
        f" and {len(dropped) - 4} more" if len(dropped) > 4 else ""
    )
    key = leaf.partition(".")[2]
    message = (
        f"replaces the list and drops {len(dropped)} of the {len(before)} entries it had "
        f"({origins}): {shown}; to keep them, list only the new entries under "
        f"`{key}{EXTRA_SUFFIX}`"
    )
    return PolicyIssue(layer.file, setting.line, f"{layer.where}.{leaf}", message, warning=True)
