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
from typing import Any, Optional, Sequence

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


# --- package indexes: the user's index, a known mirror of the vendor's, the configured registry -----
#
# A `[[mirror]]` row of recipes/mirrors.toml: `name`, `framework`, `upstream` (the vendor index's URL
# prefix), `url` (the mirror's prefix), `kind` ("index" | "find-links"), `note`, `source`, `checked`.

INDEX_FLAGS = ("--index-url", "-i")
TAGGED_PACKAGES = ("torch", "torchvision", "torchaudio")  # the vendor index gives them the build tag


def mirrors() -> list[dict[str, Any]]:
    return list(load("mirrors", kind="recipes").get("mirror", []))


def mirror_names() -> list[str]:
    return [row["name"] for row in mirrors()]


def mirrored(url: str, name: str) -> Optional[tuple[str, str]]:
    """(mirror URL, kind) of the vendor index `url` on mirror `name`, or None when it has no copy."""
    for row in mirrors():
        if row["name"] == name and url.startswith(row["upstream"]):
            return row["url"] + url[len(row["upstream"]):], row.get("kind", "index")
    return None


def apply_indexes(plan, request):
    """The plan with the user's index choices applied to its commands: --index-url / ENVDOCTOR_INDEX
    or --mirror instead of the vendor's index, and a word about the configured default registry."""
    import dataclasses

    reasons, warnings = list(plan.reasons), list(plan.warnings)
    commands, index_url = plan.commands, plan.index_url
    if plan.index_url and request.index_url:
        commands = tuple(_swap_index(argv, plan.index_url, request.index_url) for argv in commands)
        index_url = request.index_url
        reasons.append(f"using the index {request.index_url} (--index-url / ENVDOCTOR_INDEX) instead of {plan.index_url}")
    elif plan.index_url and request.mirror:
        found = mirrored(plan.index_url, request.mirror)
        if found is None:
            warnings.append(f"the mirror {request.mirror} has no copy of {plan.index_url}; the vendor's index is kept")
        else:
            commands, index_url = _use_mirror(commands, plan.index_url, *found), found[0]
            how = "an index" if found[1] == "index" else "a page of wheels (--find-links; the pins name the build)"
            reasons.append(f"using the mirror {request.mirror} ({how}) {found[0]} instead of {plan.index_url}")
            loose = _untagged(commands) if found[1] == "find-links" else []
            if loose:
                warnings.append(f"with a page of wheels beside the registry, {', '.join(loose)} cannot name the build, "
                                f"so pip may take the registry's; an index mirror ({', '.join(index_mirrors(plan.framework)) or 'none known'}) avoids that")
    elif request.index_url or request.mirror:
        reasons.append("this plan uses no vendor index, so --index-url / --mirror do not apply "
                       "(the default registry is pip's or uv's own setting)")
    vendor = index_url if not (request.index_url or request.mirror) else None  # the user chose it: no hint
    commands = _name_registry(commands, request, reasons, warnings, vendor, plan.framework)
    return dataclasses.replace(plan, commands=commands, index_url=index_url, reasons=tuple(reasons),
                               warnings=tuple(warnings))


def _swap_index(argv: Sequence[str], old: str, new: str) -> tuple[str, ...]:
    return tuple(new if i and argv[i - 1] in INDEX_FLAGS and token == old else token for i, token in enumerate(argv))


def _use_mirror(commands, old: str, url: str, kind: str):
    if kind == "index":
        return tuple(_swap_index(argv, old, url) for argv in commands)
    tag = old.rstrip("/").rsplit("/", 1)[-1]
    out = []
    for argv in commands:
        if old not in argv:
            out.append(tuple(argv))
            continue
        fixed: list[str] = []
        for i, token in enumerate(argv):
            if token in INDEX_FLAGS and i + 1 < len(argv) and argv[i + 1] == old:
                fixed.append("--find-links")
            elif token == old and i and argv[i - 1] in INDEX_FLAGS:
                fixed.append(url)
            else:
                fixed.append(_tagged(token, tag))
        out.append(tuple(fixed))
    return tuple(out)


def index_mirrors(framework: str) -> list[str]:
    return [row["name"] for row in mirrors() if row.get("kind", "index") == "index" and row.get("framework") == framework]


def _untagged(commands) -> list[str]:
    """Requirements of the tagged packages that are ranges, not pins (they cannot carry +cu126)."""
    pattern = re.compile(r"(" + "|".join(TAGGED_PACKAGES) + r")\s*[<>=!~]")
    return [t for argv in commands for t in argv if pattern.match(t) and not re.fullmatch(r"[a-z]+==[^+]+\+\S+", t)]


def _tagged(token: str, tag: str) -> str:
    """'torch==2.9.1' -> 'torch==2.9.1+cu128' (a find-links page beside the registry: the tag picks the build)."""
    m = re.fullmatch(r"([A-Za-z0-9._-]+)==([0-9][^+;\s]*)", token)
    if m and m.group(1).lower() in TAGGED_PACKAGES:
        return f"{token}+{tag}"
    return token


def _name_registry(commands, request, reasons: list[str], warnings: list[str], vendor: Optional[str], framework: str):
    """The configured default registry: pip reads its own setting; uv reads no pip.conf, so a uv
    command without an index is given pip's; a vendor index used directly is pointed out."""
    if not request.registry:
        return commands
    url, where = request.registry
    if vendor:
        names = ", ".join(row["name"] for row in mirrors() if row.get("framework") == framework)
        mirror = f"--mirror NAME ({names}) or " if names else ""
        warnings.append(f"your default registry is {url} (from {where}), but the vendor's index {vendor} is used "
                        f"directly: where it is unreachable, pass {mirror}--index-url URL")
        return commands
    if request.manager == "uv" and not where.startswith("UV_") and not where.endswith("uv.toml"):
        reasons.append(f"the default registry is {url} (from {where}, which uv does not read): named in the uv commands")
        return tuple(_add_index(argv, url) for argv in commands)
    reasons.append(f"the default registry is {url} (from {where}); {request.manager} reads it there")
    return commands


def _add_index(argv: Sequence[str], url: str) -> tuple[str, ...]:
    if argv[:3] != ("uv", "pip", "install") or any(t in INDEX_FLAGS or t == "--default-index" for t in argv):
        return tuple(argv)
    return (*argv, "--index-url", url)
