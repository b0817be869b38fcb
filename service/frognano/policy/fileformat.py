"""The policy file's own shape: overlays of the models where every key may be left out."""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import re
import textwrap
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model, field_validator

from frognano.policy.models import (
    AgentPolicy,
    EnvironmentPolicy,
    GatePolicy,
    PublishPolicy,
    SandboxPolicy,
    TriggerPolicy,
    VerifyPolicy,
)
from frognano.policy.paths import check_glob

__all__ = [
    "EXTRA_SUFFIX",
    "SECTIONS",
    "SECURITY_LISTS",
    "DefaultsOverlay",
    "PolicyFile",
    "RepoRuleOverlay",
    "check_repo_glob",
    "file_schema",
    "file_schema_text",
]

FORMAT_VERSION = 1

#: Section name -> its model, in the order of EffectivePolicy.
SECTIONS: dict[str, type[BaseModel]] = {
    "trigger": TriggerPolicy,
    "agent": AgentPolicy,
    "sandbox": SandboxPolicy,
    "environment": EnvironmentPolicy,
    "verify": VerifyPolicy,
    "gate": GatePolicy,
    "publish": PublishPolicy,
}

#: Fields holding path globs, checked with `paths.check_glob`.
PATH_GLOB_FIELDS = {
    ("agent", "protected_files"),
    ("verify", "protected_paths"),
    ("gate", "forbidden_paths"),
    ("gate", "allowed_paths"),
}

#: Lists whose entries protect something, so a file that replaces one and drops entries gets a
#: warning. Each also has a `KEY_extra` key in the file format: entries added to the list as it
#: stands, which keeps the defaults.
SECURITY_LISTS = {
    ("agent", "protected_files"),
    ("verify", "protected_paths"),
    ("gate", "forbidden_paths"),
}
EXTRA_SUFFIX = "_extra"

_OVERLAY_CONFIG = ConfigDict(
    extra="forbid",
    frozen=True,
    # `cpu: 2` and `memory: 4096` are natural YAML for what the models keep as strings.
    coerce_numbers_to_str=True,
)


def _attribute_docs(cls: type) -> dict[str, str]:
    """The docstrings written under a class's fields (the models' documentation of each key)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # pragma: no cover - source not shipped
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for field, doc in itertools.pairwise(body):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)
        ):
            docs[field.target.id] = " ".join(inspect.cleandoc(doc.value.value).split())
    return docs


def _check_path_glob(pattern: str) -> str:
    problem = check_glob(pattern)
    if problem is not None:
        raise ValueError(problem)
    return pattern


def _overlay(section: type[BaseModel], name: str) -> type[BaseModel]:
    """A copy of `section` whose keys carry the same types and bounds but no cross-key checks.

    Which keys a file set is the validated instance's `model_fields_set`; the defaults copied
    here only document the schema. Checks that span keys belong to EffectivePolicy, which
    sees the merged result.
    """
    docs = _attribute_docs(section)
    fields: dict[str, Any] = {}
    for key, info in section.model_fields.items():
        annotation: Any = info.annotation
        if (name, key) in PATH_GLOB_FIELDS:
            # Checked item by item, so that an error points at the item's own line.
            annotation = list[Annotated[str, AfterValidator(_check_path_glob)]]
        if info.metadata:
            annotation = Annotated[annotation, *info.metadata]
        default = info.get_default(call_default_factory=True)
        fields[key] = (annotation, Field(default=default, description=docs.get(key)))
        if (name, key) in SECURITY_LISTS:
            fields[key + EXTRA_SUFFIX] = (
                annotation,
                Field(
                    default=[],
                    description=f"Entries added to `{key}` as the files before set it (the "
                    f"built-in defaults, earlier files and rules); `{key}` itself replaces "
                    "the whole list.",
                ),
            )
    model: type[BaseModel] = create_model(
        f"{section.__name__}Overlay",
        __config__=_OVERLAY_CONFIG,
        __doc__=" ".join(inspect.cleandoc(section.__doc__ or "").split()),
        **fields,
    )
    return model


OVERLAYS: dict[str, type[BaseModel]] = {
    name: _overlay(model, name) for name, model in SECTIONS.items()
}

# The six sections as optional fields, shared by `defaults` and each rule.
_SECTION_FIELDS: dict[str, Any] = {
    name: (overlay | None, Field(default=None, description=overlay.__doc__))
    for name, overlay in OVERLAYS.items()
}

DefaultsOverlay: type[BaseModel] = create_model(
    "Defaults",
    __config__=_OVERLAY_CONFIG,
    __doc__="Keys for every repository, before the rules.",
    **_SECTION_FIELDS,
)

_ALLOWED_IN_NAME = re.compile(r"[A-Za-z0-9._\-*?\[\]{},!^]")


def _unbalanced(text: str) -> str | None:
    depth = 0
    index = 0
    while index < len(text):
        char = text[index]
        if char == "[":
            start = index + 1
            if start < len(text) and text[start] in "!^":
                start += 1
            if start < len(text) and text[start] == "]":
                start += 1  # a leading ] is a literal member of the class
            close = text.find("]", start)
            if close < 0:
                return "unbalanced `[`: a character class needs its closing `]`"
            index = close
        elif char == "]":
            return "unbalanced `]`: no `[` opens it"
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                return "unbalanced `}`: no `{` opens it"
        index += 1
    if depth:
        return "unbalanced `{`: a brace list needs its closing `}`"
    return None


def check_repo_glob(pattern: str) -> str | None:  # noqa: PLR0911 - one return per rule
    """Why `pattern` cannot match GitHub repositories (`OWNER/NAME` globs), or None."""
    if not pattern.strip():
        return "must not be empty; write OWNER/NAME, e.g. acme/api or acme/*"
    if any(char.isspace() for char in pattern):
        return "must not contain whitespace"
    slashes = pattern.count("/")
    if slashes != 1:
        return (
            f"must be OWNER/NAME with exactly one `/` (found {slashes}); "
            "`*` never crosses `/`, so use */* for every repository"
        )
    owner, _, name = pattern.partition("/")
    if not owner or not name:
        return "OWNER and NAME must both be given; use * for any"
    for char in pattern:
        if char != "/" and not _ALLOWED_IN_NAME.fullmatch(char):
            return f"{char!r} cannot appear in a GitHub owner or repository name"
    for part in (owner, name):
        problem = _unbalanced(part)
        if problem is not None:
            return problem
    return None


class _RuleBase(BaseModel):
    """Keys for the repositories whose `OWNER/NAME` matches `match`, after the defaults."""

    model_config = _OVERLAY_CONFIG

    match: str = Field(
        description="Glob on OWNER/NAME, case-insensitive; `*` does not cross `/`, "
        "`{a,b}` lists alternatives, e.g. `acme/*`, `acme/{api,web}`, `*/docs`."
    )
    enabled: bool = Field(
        default=True,
        description="false: FrogNano ignores the matching repositories' issues.",
    )

    @field_validator("match")
    @classmethod
    def _check_match(cls, value: str) -> str:
        problem = check_repo_glob(value)
        if problem is not None:
            raise ValueError(problem)
        return value


RepoRuleOverlay: type[BaseModel] = create_model(
    "RepoRule",
    __base__=_RuleBase,
    __doc__=_RuleBase.__doc__,
    **_SECTION_FIELDS,
)


class PolicyFile(BaseModel):
    """One FrogNano policy file (every `*.yaml` directly in FROGNANO_POLICY_DIR)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="FrogNano policy file")

    version: Literal[1] = Field(description="Format version; always 1.")
    defaults: DefaultsOverlay | None = Field(  # type: ignore[valid-type]
        default=None, description="Keys for every repository, before the rules."
    )
    repos: list[RepoRuleOverlay] | None = Field(  # type: ignore[valid-type]
        default=None,
        description="Rules applied in order to the repositories they match; later ones win, "
        "key by key.",
    )


def file_schema() -> dict[str, Any]:
    """The JSON Schema of a policy file."""
    schema = PolicyFile.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def file_schema_text() -> str:
    """`file_schema()` as committed in policies/schema.json: sorted keys, indent 2, newline."""
    return json.dumps(file_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
