"""Command templates from recipes/<framework>.toml, filled in for one plan.

A recipe is a row of `[[recipe]]` with an `id`, a `manager`, and `commands`: a list of argv
templates. In a token, `{name}` is replaced by a value; a token that is exactly `{name...}` expands
to a list of tokens (e.g. the packages). An optional `steps` list holds things done by hand.

    [[recipe]]
    id = "pip-index"
    manager = "pip"
    commands = [["{python}", "-m", "pip", "install", "{packages...}", "--index-url", "{index_url}"]]
    source = "https://pytorch.org/get-started/locally/"
    checked = "2026-11-29"
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from envdoctor.matrix.loader import MatrixError, load

_FIELD = re.compile(r"\{([a-z_]+)\}")


def recipe(framework: str, recipe_id: str) -> dict[str, Any]:
    for row in load(framework, kind="recipes").get("recipe", []):
        if row.get("id") == recipe_id:
            return row
    raise MatrixError(f"recipes/{framework}.toml: no recipe with id {recipe_id!r}")


def render(framework: str, recipe_id: str, **values: Any) -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]:
    """The argv lists and manual steps of a recipe, with every placeholder filled."""
    row = recipe(framework, recipe_id)
    where = f"recipes/{framework}.toml recipe {recipe_id!r}"
    commands = tuple(fill_argv(argv, values, where) for argv in row.get("commands", []))
    steps = tuple(fill_text(step, values, where) for step in row.get("steps", []))
    return commands, steps


def fill_argv(template: Sequence[str], values: dict[str, Any], where: str) -> tuple[str, ...]:
    argv: list[str] = []
    for token in template:
        if token.startswith("{") and token.endswith("...}"):
            name = token[1:-4]
            argv.extend(str(v) for v in _value(values, name, where))
        else:
            argv.append(fill_text(token, values, where))
    return tuple(argv)


def fill_text(text: str, values: dict[str, Any], where: str) -> str:
    return _FIELD.sub(lambda m: str(_value(values, m.group(1), where)), text)


def _value(values: dict[str, Any], name: str, where: str) -> Any:
    if name not in values or values[name] is None:
        raise MatrixError(f"{where}: no value for placeholder {{{name}}}")
    return values[name]
