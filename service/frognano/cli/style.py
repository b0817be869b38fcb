"""One help style for every command: readable metavars, plain switches, choices, no braces."""

# Typer shows Python types in help (`<str>`, `<list[str]>`, `<int range>`), `<bool>` even on
# --help, and required arguments as `{name}` in usage. The classes below are what every
# FrogNano command and group is made of (see `typer_app`); they change how parameters are
# shown, never how they parse. A parameter's own `metavar=` wins over the defaults here.

from __future__ import annotations

from typing import Any, get_args

import typer
from typer import _click
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

__all__ = ["Command", "Group", "typer_app"]


def _label(annotation: Any) -> str:
    if annotation is int:
        return "N"
    if annotation is float:
        return "NUMBER"
    return "TEXT"


class Option(TyperOption):
    """An option whose help shows a word (PATH, N, TEXT), its choices, or nothing (a switch)."""

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        if self.metavar is not None:
            return self.metavar
        if self.is_flag:
            return None
        desc = self.type_descriptor
        if desc.is_choice and desc.choices is not None:
            return "[" + "|".join(str(choice) for choice in desc.choices) + "]"
        if desc.is_path:
            return desc.path_type.upper()
        if desc.is_list:
            (element,) = get_args(desc.annotation) or (str,)
            return _label(element)
        return _label(desc.annotation)


class Argument(TyperArgument):
    """An argument named in capitals (REPO_DIR) in usage and help, its type not repeated."""

    @property
    def display_name_raw(self) -> str:
        return self.metavar if self.metavar is not None else (self.name or "").upper()

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")


def _restyle(params: list[_click.Parameter]) -> None:
    for param in params:
        if type(param) is TyperOption:
            param.__class__ = Option
        elif type(param) is TyperArgument:
            param.__class__ = Argument


class Command(TyperCommand):
    """A command whose parameters, --help included, are shown in FrogNano's style."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _restyle(self.params)

    def get_help_option(self, ctx: _click.Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        _restyle([option] if option is not None else [])
        return option


class Group(TyperGroup):
    """A group shown in FrogNano's style, whose commands are `Command`s."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _restyle(self.params)
        for command in self.commands.values():
            if type(command) is TyperCommand:
                command.__class__ = Command
                _restyle(command.params)

    def get_help_option(self, ctx: _click.Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        _restyle([option] if option is not None else [])
        return option


def typer_app(**kwargs: Any) -> typer.Typer:
    """A `typer.Typer` made of `Group` and `Command`."""
    return typer.Typer(cls=Group, **kwargs)
