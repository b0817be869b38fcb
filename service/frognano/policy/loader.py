"""Reads the policy directory: every error with its file and line, or one validated PolicySet."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from frognano.errors import ConfigError
from frognano.policy.fileformat import SECTIONS, PolicyFile
from frognano.policy.issues import PolicyError, PolicyIssue
from frognano.policy.merge import Layer, Origin, PolicySet, Setting

__all__ = [
    "Origin",
    "PolicyError",
    "PolicyIssue",
    "PolicySet",
    "list_policy_files",
    "load_policies",
]

Key = str | int
KeyPath = tuple[Key, ...]

_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_KINDS = {
    type(None): "nothing (null)",
    list: "a list",
    str: "text",
    int: "a number",
    float: "a number",
    bool: "a boolean",
}
_FIX_DIR = (
    "put the policy files (*.yaml) there, starting from a copy of policies/00-default.yaml, "
    "or set FROGNANO_POLICY_DIR to the directory that holds them"
)


def list_policy_files(directory: Path) -> tuple[list[Path], list[Path]]:
    """The policy files of `directory` in the order they apply (sorted by name), and the
    `*.yml` files that look like policy files but are not read.

    Only regular files (or links to them) directly in the directory count; names starting
    with `.` are skipped (editor backups, Kubernetes' `..data`). Raises ConfigError when the
    directory is missing, unreadable or has no policy file.
    """
    if not directory.is_dir():
        problem = "does not exist" if not directory.exists() else "is not a directory"
        raise ConfigError(f"the policy directory {directory} {problem}; {_FIX_DIR}")
    try:
        entries = sorted(directory.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        raise ConfigError(f"cannot list the policy directory {directory}: {exc.strerror}") from None
    visible = [entry for entry in entries if not entry.name.startswith(".") and entry.is_file()]
    files = [entry for entry in visible if entry.suffix == ".yaml"]
    ignored = [entry for entry in visible if entry.suffix == ".yml"]
    if not files:
        hint = f" ({', '.join(p.name for p in ignored)}: only *.yaml is read)" if ignored else ""
        raise ConfigError(f"the policy directory {directory} has no *.yaml file{hint}; {_FIX_DIR}")
    return files, ignored


def load_policies(directory: Path) -> PolicySet:
    """Read and validate every `*.yaml` directly in `directory`, in sorted file-name order.

    Raises PolicyError (a ConfigError) listing every problem of every file, each as
    `FILE:LINE: path.to.key: message`; a missing or empty directory is a plain ConfigError.
    """
    files, ignored = list_policy_files(directory)
    issues = [
        PolicyIssue(
            path,
            1,
            "(file)",
            f"only *.yaml files are read; rename it to {path.stem}.yaml or move it out of "
            f"{directory}",
        )
        for path in ignored
    ]
    defaults: list[Layer] = []
    rules: list[Layer] = []
    for path in files:
        loaded = _load_file(path)
        issues.extend(loaded.issues)
        defaults.extend(loaded.defaults)
        rules.extend(loaded.rules)
    if issues:
        raise PolicyError(issues)
    policy_set = PolicySet(directory, tuple(files), (*defaults, *rules))
    issues = policy_set.check()
    if issues:
        raise PolicyError(issues)
    return policy_set


@dataclass
class _Loaded:
    path: Path
    issues: list[PolicyIssue] = field(default_factory=list)
    defaults: list[Layer] = field(default_factory=list)
    rules: list[Layer] = field(default_factory=list)

    def add(self, line: int, path: str, message: str) -> None:
        self.issues.append(PolicyIssue(self.path, line, path, message))


def _read(loaded: _Loaded) -> str | None:
    try:
        return loaded.path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        loaded.add(1, "(file)", f"cannot read the file: {exc.strerror}")
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        loaded.add(line, "(file)", f"not UTF-8 text ({exc.reason} at byte {exc.start})")
    return None


def _load_file(path: Path) -> _Loaded:
    loaded = _Loaded(path)
    text = _read(loaded)
    if text is None:
        return loaded
    parsed = _parse(text, loaded)
    if parsed is None:
        return loaded
    node, data = parsed
    lines: dict[KeyPath, int] = {}
    _index(node, (), lines, loaded, set())
    if not isinstance(data, dict):
        kind = _KINDS.get(type(data), f"a {type(data).__name__}")
        loaded.add(
            _line_of(node),
            "(file)",
            f"a policy file is a mapping with `version: 1` and `defaults` and/or `repos`; "
            f"this one holds {kind}",
        )
        return loaded
    try:
        policy_file = PolicyFile.model_validate(data)
    except ValidationError as exc:
        found = [_issue(loaded.path, error, data, lines) for error in exc.errors()]
        # Non-text keys were reported by _index already, with a better message.
        loaded.issues.extend(issue for issue in found if issue is not None)
    else:
        if not loaded.issues:
            _layers(policy_file, lines, loaded)
    loaded.issues.sort(key=lambda issue: issue.line or 0)
    return loaded


def _parse(text: str, loaded: _Loaded) -> tuple[Node, Any] | None:
    """The composed node tree (for lines) and the constructed data, or None after an issue."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            loaded.add(1, "(file)", "the file is empty; a policy file starts with `version: 1`")
            return None
        return node, loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        message = exc.problem or "invalid YAML"
        if exc.context:
            message = f"{message} ({exc.context})"
        loaded.add(line, "(yaml)", message)
    except yaml.reader.ReaderError as exc:
        loaded.add(text[: exc.position].count("\n") + 1, "(yaml)", exc.reason)
    except yaml.YAMLError as exc:  # pragma: no cover - every PyYAML error above has a mark
        loaded.add(1, "(yaml)", str(exc))
    finally:
        loader.dispose()
    return None


def _line_of(node: Node) -> int:
    return int(node.start_mark.line) + 1


def _index(
    node: Node, path: KeyPath, lines: dict[KeyPath, int], loaded: _Loaded, seen: set[int]
) -> None:
    """Record the line of every key and list item; report duplicate and non-text keys."""
    if id(node) in seen:  # an alias: its lines are those of the anchor, indexed already
        return
    seen.add(id(node))
    if isinstance(node, MappingNode):
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            line = _line_of(key_node)
            if key_node.tag == _MERGE_TAG:  # `<<: *anchor`: keys of the anchor, overridable
                continue
            if not isinstance(key_node, ScalarNode) or key_node.tag != _STR_TAG:
                shown = key_node.value if isinstance(key_node, ScalarNode) else "a collection"
                kind = key_node.tag.rsplit(":", 1)[-1]
                loaded.add(
                    line,
                    _format(path) or "(file)",
                    f"key {shown!r} is read by YAML as a {kind}, not as a name; no key is "
                    "allowed here but names (quote it if it is one)",
                )
                continue
            key = str(key_node.value)
            if key in first:
                loaded.add(
                    line,
                    _format((*path, key)),
                    f"duplicate key: also set on line {first[key]}; YAML would silently keep "
                    "only this last one, so remove one of them",
                )
            else:
                first[key] = line
            lines[(*path, key)] = line
            _index(value_node, (*path, key), lines, loaded, seen)
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = _line_of(item)
            _index(item, (*path, index), lines, loaded, seen)


def _format(path: Sequence[Key]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _line(lines: dict[KeyPath, int], path: KeyPath) -> int:
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return 1


def _data_path(data: Any, loc: Sequence[Key], missing: bool) -> KeyPath | None:
    """The part of a pydantic error location that exists in the data (union tags and the like
    dropped); None if it goes through a key that is not text."""
    path: list[Key] = []
    current = data
    for part in loc:
        if isinstance(current, dict):
            if part in current and type(part) is str:
                path.append(part)
                current = current[part]
                continue
            if type(part) is not str:
                return None
            if missing or part not in current:
                path.append(part)  # a required key left out, or an unknown key
            break
        if isinstance(current, list) and type(part) is int and 0 <= part < len(current):
            path.append(part)
            current = current[part]
            continue
        break
    return tuple(path)


def _model_at(path: KeyPath) -> type[BaseModel] | None:
    model: type[BaseModel] | None = PolicyFile
    for part in path:
        if isinstance(part, int) or model is None:
            continue
        info = model.model_fields.get(part)
        model = _inner_model(info.annotation) if info is not None else None
    return model


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _unknown_key(path: KeyPath) -> str:
    key = str(path[-1])
    if len(path) == 1 and key in SECTIONS:
        return f"unknown key; `{key}` goes under `defaults:` or under a rule in `repos:`"
    if path[0] == "defaults" and len(path) == 2 and key in ("enabled", "match"):
        return (
            f"unknown key; `{key}` belongs to a rule in `repos:` (`match: '*/*'` covers "
            "every repository)"
        )
    model = _model_at(path[:-1])
    known = list(model.model_fields) if model is not None else []
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f"unknown key; did you mean `{close[0]}`?"
    if known:
        return f"unknown key; the keys here are {', '.join(known)}"
    return "unknown key"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _message(error: ErrorDetails, path: KeyPath) -> str:  # noqa: PLR0911 - one per kind
    kind = error["type"]
    if kind == "missing":
        if path == ("version",):
            return "required: a policy file starts with `version: 1`"
        return "required"
    if kind == "extra_forbidden":
        return _unknown_key(path)
    if path == ("version",):
        return f"must be 1, the only format version (got {_shown(error['input'])})"
    got = f" (got {_shown(error['input'])})"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return "must be a mapping of keys to values" + got
    if kind == "list_type":
        return "must be a list (`[a, b]`, or one `- item` per line)" + got
    message = error["msg"].removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    return message if repr(error["input"]) in message else message + got


def _issue(
    file: Path, error: ErrorDetails, data: Any, lines: dict[KeyPath, int]
) -> PolicyIssue | None:
    path = _data_path(data, error["loc"], missing=error["type"] == "missing")
    if path is None:
        return None
    return PolicyIssue(file, _line(lines, path), _format(path) or "(file)", _message(error, path))


def _settings(sections: BaseModel, where: KeyPath, lines: dict[KeyPath, int]) -> dict[str, Setting]:
    settings: dict[str, Setting] = {}
    for name in SECTIONS:
        overlay = getattr(sections, name)
        if overlay is None:
            continue
        for key in overlay.model_fields_set:
            value = getattr(overlay, key)
            settings[f"{name}.{key}"] = Setting(
                tuple(value) if isinstance(value, list) else value,
                _line(lines, (*where, name, key)),
            )
    return {leaf: settings[leaf] for leaf in sorted(settings)}


def _layers(policy_file: PolicyFile, lines: dict[KeyPath, int], loaded: _Loaded) -> None:
    path = loaded.path
    if policy_file.defaults is not None:
        settings = _settings(policy_file.defaults, ("defaults",), lines)
        if settings:
            loaded.defaults.append(Layer(path, _line(lines, ("defaults",)), "defaults", settings))
    rules: list[Any] = list(policy_file.repos or ())
    for index, rule in enumerate(rules):
        where: KeyPath = ("repos", index)
        settings = _settings(rule, where, lines)
        if "enabled" in rule.model_fields_set:
            settings = {
                "enabled": Setting(rule.enabled, _line(lines, (*where, "enabled"))),
                **settings,
            }
        loaded.rules.append(
            Layer(path, _line(lines, where), _format(where), settings, match=rule.match)
        )
