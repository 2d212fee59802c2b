"""A RUN instruction's shell text -> the install steps it performs.

The text is split into words by `shlex` (a parser for the POSIX shell's quoting), into commands at
`&&`, `||`, `;`, `|` and newlines, and each command is recognised by its words: pip / pip3 /
`python -m pip` / `uv pip`, conda / mamba / micromamba, apt-get / apt / yum / dnf, `git clone`,
`python setup.py install`, with `VAR=value` prefixes kept as the command's environment.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import Optional

from envdoctor.container.parse import Instruction, substitute

MAX_WORDS = 20_000


@dataclass(frozen=True)
class Requirement:
    name: str  # canonical distribution name
    extras: tuple[str, ...] = ()
    specifier: str = ""  # "==2.6.0", ">=2.1,<2.4", "" (any)
    text: str = ""  # as written

    @property
    def pinned(self) -> Optional[str]:
        spec = self.specifier
        if spec.startswith("==") and "," not in spec and "*" not in spec:
            return spec[2:].strip()
        return None


@dataclass
class Step:
    kind: str  # pip | conda | apt | clone | source-build | python-install | unknown-install
    line: int
    tool: str = ""  # pip | uv | conda | mamba | micromamba | apt-get...
    requirements: list[Requirement] = field(default_factory=list)
    local: list[str] = field(default_factory=list)  # `.`, paths, URLs, git+ URLs (built from source)
    files: list[str] = field(default_factory=list)  # -r requirements files / -f environment files
    index_url: Optional[str] = None
    extra_index_urls: list[str] = field(default_factory=list)
    find_links: list[str] = field(default_factory=list)
    channels: list[str] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)  # apt / conda package words as written
    env: dict[str, str] = field(default_factory=dict)  # VAR=value prefixes
    options: list[str] = field(default_factory=list)  # flags seen (--no-build-isolation, --torch-backend=cu126)
    words: tuple[str, ...] = ()

    def option(self, name: str) -> Optional[str]:
        for opt in self.options:
            key, _, value = opt.partition("=")
            if key == name:
                return value or ""
        return None


_SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")", ";;", "|&"}
_PREFIX_WORDS = {"sudo", "env", "time", "nice", "exec", "command", "nohup", "xargs"}
_PIP_ARG_OPTIONS = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
                    "--find-links", "-t", "--target", "--prefix", "--root", "--src", "--platform", "--python-version",
                    "--implementation", "--abi", "--trusted-host", "--cache-dir", "--progress-bar", "--log",
                    "--python", "-p", "--upgrade-strategy", "--config-settings", "-C", "--global-option",
                    "--no-binary", "--only-binary", "--index-strategy", "--torch-backend", "-e", "--editable",
                    "--index", "--default-index", "--extra-index", "--resolution", "--prerelease", "--exclude-newer",
                    "--build-constraint", "--override", "--timeout", "--retries", "--proxy", "--cert", "--client-cert",
                    "--keyring-provider", "--link-mode", "--compile-bytecode", "--report", "--group"}
_CONDA_ARG_OPTIONS = {"-c", "--channel", "-n", "--name", "-p", "--prefix", "-f", "--file", "--override-channels-x",
                      "--repodata-fn", "--solver", "--platform", "--subdir", "-r", "--root-prefix"}
_APT_ARG_OPTIONS = {"-o", "--option", "-t", "--target-release", "-c", "--config-file"}


def run_steps(ins: Instruction, variables: dict[str, str], clones: Optional[dict[str, str]] = None) -> list[Step]:
    """The install steps of one RUN instruction (shell or JSON form, heredocs included). `clones` (folder ->
    repository URL) carries `git clone`s across RUN lines, so that a later `cd repo && pip install .` (or
    `python setup.py install`) is known to build that repository."""
    clones = {} if clones is None else clones
    steps: list[Step] = []
    here: Optional[str] = None  # the repository folder the last `cd` entered
    for words in commands_of(ins):
        words = [substitute(w, variables) if "$" in w else w for w in words]
        if words[:1] == ["cd"] and len(words) > 1:
            first = words[1].strip("/").split("/")[0] if not words[1].startswith("/") else words[1].rstrip("/").rsplit("/", 1)[-1]
            here = first if first in clones else (here if first in ("..", ".") else None)
            continue
        step = recognise(words, ins.line)
        if step is None:
            continue
        if step.kind == "clone":
            clones[step.local[1] if len(step.local) > 1 else _repo_folder(step.local[0])] = step.local[0]
            continue
        if here and step.kind in ("pip", "source-build"):
            step.local = [clones[here] if p in (".", "./") or p.startswith((".[", "./")) else p for p in step.local]
        steps.append(step)
    return steps


def _repo_folder(url: str) -> str:
    name = url.rstrip("/").rsplit("/", 1)[-1]
    return name[:-4] if name.endswith(".git") else name


def commands_of(ins: Instruction) -> list[list[str]]:
    if ins.json:
        return [list(ins.words)]
    scripts = list(ins.heredocs) if ins.heredocs else [" ".join(ins.words)]
    commands: list[list[str]] = []
    for script in scripts:
        commands.extend(split_commands(script))
    return commands


def split_commands(script: str) -> list[list[str]]:
    """Commands of a shell script: each logical line (continuations joined) lexed on its own, so that a
    `#` comment ends at its line."""
    script = script.replace("\\\r\n", " ").replace("\\\n", " ")
    commands: list[list[str]] = []
    for text in script.splitlines()[:MAX_WORDS]:
        commands.extend(_line_commands(text))
    return [c for c in commands if c]


def _line_commands(text: str) -> list[list[str]]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    try:
        for count, token in enumerate(lexer):
            if count > MAX_WORDS:
                break
            if token in _SEPARATORS:
                commands.append([])
            else:
                commands[-1].append(token)
    except ValueError:  # unbalanced quotes: keep what was read
        pass
    return commands


def recognise(words: list[str], line: int) -> Optional[Step]:
    env: dict[str, str] = {}
    words = list(words)
    while words and ("=" in words[0] and words[0].split("=", 1)[0].isidentifier() or words[0] in _PREFIX_WORDS):
        word = words.pop(0)
        if "=" in word and word.split("=", 1)[0].isidentifier():
            name, _, value = word.partition("=")
            env[name] = value
    if not words:
        return None
    if words[0] in ("sh", "bash", "/bin/sh", "/bin/bash") and "-c" in words[1:3]:
        inner = words[words.index("-c") + 1:]
        nested = split_commands(inner[0]) if inner else []
        steps = [recognise(w, line) for w in nested]
        found = [s for s in steps if s is not None]
        return found[0] if len(found) == 1 else None
    program = os.path.basename(words[0])
    rest = words[1:]
    if program in ("conda", "mamba", "micromamba") and rest[:1] == ["run"]:
        return recognise(_after_run(rest[1:]), line)
    step = (_pip(program, rest, line) or _uv(program, rest, line) or _conda(program, rest, line) or
            _apt(program, rest, line) or _git(program, rest, line) or _setup_py(program, rest, line))
    if step is not None:
        step.env.update(env)
        step.words = tuple(words)
    return step


def _after_run(words: list[str]) -> list[str]:
    rest = list(words)
    while rest and rest[0].startswith("-"):
        flag = rest.pop(0)
        if flag in ("-n", "--name", "-p", "--prefix") and rest:
            rest.pop(0)
    return rest


def _is_python(program: str) -> bool:
    return program == "python" or (program.startswith("python") and program[6:].replace(".", "").isdigit())


def _pip(program: str, rest: list[str], line: int) -> Optional[Step]:
    if _is_python(program):
        if rest[:2] != ["-m", "pip"]:
            return None
        rest = rest[2:]
    elif not (program == "pip" or (program.startswith("pip") and program[3:].replace(".", "").isdigit())):
        return None
    while rest and rest[0].startswith("-") and rest[0] != "install":  # `pip --no-cache-dir install ...`
        rest = rest[1:]
    if not rest or rest[0] != "install":
        return None
    return _pip_install("pip", rest[1:], line)


def _uv(program: str, rest: list[str], line: int) -> Optional[Step]:
    if program != "uv" or not rest:
        return None
    if rest[:2] == ["pip", "install"]:
        return _pip_install("uv", rest[2:], line)
    if rest[0] in ("add", "sync"):
        step = Step(kind="unknown-install" if rest[0] == "sync" else "pip", line=line, tool="uv")
        if rest[0] == "add":
            _pip_words(step, rest[1:])
        else:
            step.files.append("uv.lock")
        return step
    if rest[:2] == ["python", "install"]:
        return Step(kind="python-install", line=line, tool="uv", packages=[w for w in rest[2:] if not w.startswith("-")])
    if rest[0] == "venv":
        python = _value_of(rest[1:], ("--python", "-p"))
        return Step(kind="python-install", line=line, tool="uv", packages=[python]) if python else None
    return None


def _pip_install(tool: str, words: list[str], line: int) -> Step:
    step = Step(kind="pip", line=line, tool=tool)
    _pip_words(step, words)
    return step


def _pip_words(step: Step, words: list[str]) -> None:
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-"):
            name, eq, value = word.partition("=")
            if not eq and name in _PIP_ARG_OPTIONS and i + 1 < len(words):
                value, i = words[i + 1], i + 1
            elif not eq and len(name) > 2 and name[:2] in ("-r", "-i", "-f", "-c", "-e") and not name.startswith("--"):
                name, value = name[:2], name[2:]
            _pip_option(step, name, value)
        else:
            _pip_target(step, word)
        i += 1


def _pip_option(step: Step, name: str, value: str) -> None:
    if name in ("-r", "--requirement"):
        step.files.append(value)
    elif name in ("-i", "--index-url", "--default-index"):
        step.index_url = value
    elif name in ("--extra-index-url", "--index", "--extra-index"):
        step.extra_index_urls.append(value)
    elif name in ("-f", "--find-links"):
        step.find_links.append(value)
    elif name in ("-e", "--editable"):
        step.local.append(value)
    else:
        step.options.append(f"{name}={value}" if value else name)


def _pip_target(step: Step, word: str) -> None:
    from packaging.requirements import InvalidRequirement
    from packaging.requirements import Requirement as PackagingRequirement
    from packaging.utils import canonicalize_name

    if word.startswith((".", "/", "~")) or "://" in word.split("@")[0] or word.endswith((".whl", ".tar.gz", ".zip")):
        step.local.append(word)
        return
    try:
        req = PackagingRequirement(word)
    except InvalidRequirement:
        step.local.append(word)
        return
    if req.url:
        step.local.append(word)
        return
    step.requirements.append(Requirement(name=canonicalize_name(req.name), extras=tuple(sorted(req.extras)),
                                         specifier=str(req.specifier), text=word))


def _value_of(words: list[str], names: tuple[str, ...]) -> Optional[str]:
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name in names:
            return value if eq else (words[i + 1] if i + 1 < len(words) else None)
    return None


def _conda(program: str, rest: list[str], line: int) -> Optional[Step]:
    if program not in ("conda", "mamba", "micromamba") or not rest:
        return None
    sub = rest[0]
    if sub == "env" and rest[1:2] in (["create"], ["update"]):
        step = Step(kind="conda", line=line, tool=program)
        step.files.append(_value_of(rest[2:], ("-f", "--file")) or "environment.yml")
        return step
    if sub not in ("install", "create", "update"):
        return None
    step = Step(kind="conda", line=line, tool=program)
    i, words = 0, rest[1:]
    while i < len(words):
        word = words[i]
        if word.startswith("-"):
            name, eq, value = word.partition("=")
            if not eq and name in _CONDA_ARG_OPTIONS and i + 1 < len(words):
                value, i = words[i + 1], i + 1
            if name in ("-c", "--channel"):
                step.channels.append(value)
            elif name in ("-f", "--file"):
                step.files.append(value)
            else:
                step.options.append(f"{name}={value}" if value else name)
        else:
            step.packages.append(word)
        i += 1
    return step


def conda_spec(word: str) -> tuple[str, str, Optional[str]]:
    """`pytorch::pytorch=2.1.0=py3.10_cuda12.1*` -> ("pytorch", "2.1.0", "pytorch")."""
    channel = None
    if "::" in word:
        channel, word = word.split("::", 1)
    name_end = len(word)
    for i, ch in enumerate(word):
        if ch in "=<>!~ [":
            name_end = i
            break
    name = word[:name_end].lower()
    version = word[name_end:].lstrip("=<>!~ ").split("=")[0].split(",")[0].rstrip("*").rstrip(".")
    return name, version, channel


def _apt(program: str, rest: list[str], line: int) -> Optional[Step]:
    if program not in ("apt-get", "apt", "yum", "dnf", "microdnf", "apk") or not rest:
        return None
    if rest[0] not in ("install", "add"):
        return None
    step = Step(kind="apt", line=line, tool=program)
    i, words = 0, rest[1:]
    while i < len(words):
        word = words[i]
        if word.startswith("-"):
            if word in _APT_ARG_OPTIONS and i + 1 < len(words):
                i += 1
        else:
            step.packages.append(word)
        i += 1
    return step


def _git(program: str, rest: list[str], line: int) -> Optional[Step]:
    if program != "git" or rest[:1] != ["clone"]:
        return None
    words = [w for w in rest[1:] if not w.startswith("-")]
    urls = [w for w in words if "://" in w or w.startswith("git@")]
    if not urls:
        return None
    after = words[words.index(urls[0]) + 1:]
    return Step(kind="clone", line=line, tool="git", local=[urls[0]] + after[:1])


def _setup_py(program: str, rest: list[str], line: int) -> Optional[Step]:
    if _is_python(program) and rest[:1] == ["setup.py"] and any(w in ("install", "develop", "bdist_wheel") for w in rest[1:]):
        return Step(kind="source-build", line=line, tool="setup.py", local=["."])
    return None
