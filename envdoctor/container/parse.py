"""A Dockerfile read with BuildKit's own parser (the `dockerfile` package wraps moby/buildkit's
parser): instructions with their line numbers, flags, JSON form and heredocs. On top of it: the
stages, `ARG` substitution in `FROM`, and the chain of stages the final one builds on."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from envdoctor.errors import UsageError

MAX_DOCKERFILE_BYTES = 1_000_000


class BuildFileError(UsageError):
    """A build file that cannot be read or parsed (one line, exit 2)."""


@dataclass(frozen=True)
class Instruction:
    cmd: str  # upper case: RUN, ENV, FROM...
    words: tuple[str, ...]  # the parser's value tuple
    flags: tuple[str, ...]
    line: int  # 1-based first line
    end_line: int
    original: str
    json: bool = False
    heredocs: tuple[str, ...] = ()  # heredoc bodies


@dataclass
class Stage:
    index: int
    base: str  # the FROM reference with build args substituted
    name: Optional[str]
    line: int
    platform: Optional[str] = None  # FROM --platform=...
    parent: Optional[int] = None  # index of the stage this one is FROM
    instructions: list[Instruction] = field(default_factory=list)
    args: dict[str, str] = field(default_factory=dict)  # ARG values in scope inside the stage


@dataclass
class Dockerfile:
    path: str
    text: str
    stages: list[Stage]

    def stage(self, target: Optional[str] = None) -> Stage:
        """The stage `docker build` builds: the last one, or `--target NAME`."""
        if not self.stages:
            raise BuildFileError(f"{self.path}: no FROM instruction")
        if target is None:
            return self.stages[-1]
        for stage in self.stages:
            if stage.name and stage.name.lower() == target.lower():
                return stage
        raise BuildFileError(f"{self.path}: no stage named {target!r}")

    def chain(self, stage: Stage) -> list[Stage]:
        """The stages `stage` builds on, root first (FROM <stage> followed back)."""
        seen: list[Stage] = []
        current: Optional[Stage] = stage
        while current is not None and current not in seen:
            seen.append(current)
            current = self.stages[current.parent] if current.parent is not None else None
        return list(reversed(seen))

    def line_text(self, line: int) -> str:
        lines = self.text.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""


def _buildkit_parser():
    """The `dockerfile` package is an optional extra: it ships wheels for x86_64 Linux, Apple-silicon macOS 14+ and
    Windows only (elsewhere its build needs Go), and no other command needs it."""
    try:
        import dockerfile
    except ImportError:
        raise UsageError("reading Dockerfiles needs BuildKit's parser: pip install 'envdoctor[containers]' "
                         "(the 'dockerfile' package; building it where it has no wheel needs Go)") from None
    return dockerfile


def read_dockerfile(path: str, build_args: Optional[dict[str, str]] = None) -> Dockerfile:
    text = read_build_file(path, "Dockerfile", MAX_DOCKERFILE_BYTES)
    return parse_dockerfile(text, path, build_args)


def read_build_file(path: str, what: str, limit: int) -> str:
    p = Path(path)
    try:
        if p.is_dir():
            raise BuildFileError(f"{path}: is a directory, not a {what}")
        if not p.is_file():
            raise BuildFileError(f"{path}: no such {what}" if not p.exists() else f"{path}: not a regular file")
        with open(p, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise BuildFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise BuildFileError(f"{path}: larger than {limit // 1000} kB; not a {what}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BuildFileError(f"{path}: not UTF-8 text; not a {what}") from None


def parse_dockerfile(text: str, path: str = "Dockerfile", build_args: Optional[dict[str, str]] = None) -> Dockerfile:
    dockerfile = _buildkit_parser()

    if "\x00" in text:
        raise BuildFileError(f"{path}: binary data; not a Dockerfile")
    try:
        commands = dockerfile.parse_string(text)
    except dockerfile.GoParseError as exc:
        raise BuildFileError(f"{path}: cannot parse: {str(exc).splitlines()[0] if str(exc) else 'syntax error'}") from None
    instructions = [Instruction(cmd=c.cmd.upper(), words=tuple(c.value), flags=tuple(c.flags), line=c.start_line,
                                end_line=c.end_line, original=c.original, json=c.json,
                                heredocs=tuple(h.content for h in c.heredocs))
                    for c in commands]
    try:
        stages = _stages(instructions, dict(build_args or {}), path)
    except BuildFileError as exc:
        message = str(exc)
        raise BuildFileError(message if message.startswith(f"{path}:") else f"{path}: {message}") from None
    if not stages:
        raise BuildFileError(f"{path}: no FROM instruction; not a Dockerfile")
    return Dockerfile(path=path, text=text, stages=stages)


def _stages(instructions: list[Instruction], build_args: dict[str, str], path: str) -> list[Stage]:
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for ins in instructions:
        if ins.cmd == "FROM":
            stages.append(_from(ins, global_args, stages, path))
            _refuse_emptied_base(stages[-1], ins, build_args, path)
        elif not stages:
            if ins.cmd == "ARG":
                for name, default in arg_pairs(ins.words):
                    global_args[name] = build_args.get(name, substitute(default, global_args)) if default is not None \
                        else build_args.get(name, "")
        else:
            stage = stages[-1]
            if ins.cmd == "ARG":
                for name, default in arg_pairs(ins.words):
                    # An ARG inside a stage re-declares a global one (its value) or declares a new one.
                    value = build_args.get(name, default if default is not None else global_args.get(name, ""))
                    stage.args[name] = substitute(value, {**global_args, **stage.args})
            stage.instructions.append(ins)
    return stages


def _from(ins: Instruction, global_args: dict[str, str], stages: list[Stage], path: str) -> Stage:
    words = list(ins.words)
    if not words:
        raise BuildFileError(f"{path}:{ins.line}: FROM without an image")
    name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
    base = substitute(words[0], global_args)
    platform = next((substitute(f.split("=", 1)[1], global_args) for f in ins.flags if f.startswith("--platform=")), None)
    parent = next((s.index for s in reversed(stages) if s.name and s.name.lower() == base.lower()), None)
    return Stage(index=len(stages), base=base, name=name, line=ins.line, platform=platform, parent=parent)


def _refuse_emptied_base(stage: Stage, ins: Instruction, build_args: dict[str, str], path: str) -> None:
    """A FROM left empty because a build argument was given an empty value (--build-arg BASE=) names no
    image: docker build refuses it ("base name should not be blank"), so it is the user's input error.
    (An ARG without a default that nobody set stays an assumption: the image is merely unknown.)"""
    if stage.base.strip() or not ins.words:
        return
    for match in _VARIABLE.finditer(ins.words[0]):
        name = match.group("braced") or match.group("plain")
        if name in build_args and not build_args[name].strip():
            raise BuildFileError(f"{path}:{ins.line}: FROM {ins.words[0][:80]} names no image: the build argument "
                                 f"{name} is set to an empty value (give {name}=IMAGE)")


def arg_pairs(words: tuple[str, ...]) -> list[tuple[str, Optional[str]]]:
    pairs = []
    for word in words:
        name, sep, default = word.partition("=")
        pairs.append((name, _unquote(default) if sep else None))
    return pairs


def env_pairs(ins: Instruction) -> list[tuple[str, str]]:
    """ENV NAME=VALUE ... (the parser gives NAME, VALUE alternately; the old `ENV NAME VALUE` too)."""
    words = list(ins.words)
    return [(words[i], _unquote(words[i + 1])) for i in range(0, len(words) - 1, 2)]


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


# Dockerfile variable references: $NAME, ${NAME}, ${NAME:-default}, ${NAME:+alternative}.
_VARIABLE = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]{0,100})(?::(?P<op>[-+])(?P<word>[^}]{0,200}))?\}|"
                       r"(?P<plain>[A-Za-z_][A-Za-z0-9_]{0,100}))")


MAX_EXPANDED = 64_000  # characters one value may expand to: ARG B=$A$A, ARG C=$B$B ... doubles each line


def substitute(value: str, variables: dict[str, str]) -> str:
    """Expand build-argument / ENV references the way BuildKit does in FROM, ENV and friends.
    A value whose expansion could pass MAX_EXPANDED characters is a BuildFileError (exit 2), found
    before the string is built: never a blow-up of memory."""
    def expand(match: re.Match) -> str:
        name = match.group("braced") or match.group("plain")
        have = variables.get(name, "")
        op = match.group("op")
        if op == "-":
            return have or match.group("word")
        if op == "+":
            return match.group("word") if have else ""
        return have

    if _expanded_at_most(value, variables) > MAX_EXPANDED:
        raise BuildFileError(f"a variable expands to over {MAX_EXPANDED // 1000} kB of text "
                             f"({value[:40]!r}); not a Dockerfile envdoctor can read")
    return _VARIABLE.sub(expand, value)


def _expanded_at_most(value: str, variables: dict[str, str]) -> int:
    return len(value) + sum(len(variables.get(m.group("braced") or m.group("plain"), "")) + len(m.group("word") or "")
                            for m in _VARIABLE.finditer(value))


def has_unresolved(value: str) -> bool:
    return "$" in value
