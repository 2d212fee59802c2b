"""Command line: `envdoctor check | facts | install | matrix | smoke | explain`.

Exit status, the same for every command (each command's --help says what 1 means for it):
  0    nothing wrong (or the command did what was asked)
  1    problems found (check: an error; install: nothing fits / the installation failed; smoke: a
       check failed; explain: a known problem recognised)
  2    usage or input error: one line on stderr, never a traceback
  130  interrupted (Ctrl-C), one line on stderr, no traceback (install --run: 143 SIGTERM, 129 SIGHUP,
       after the rollback)
  141  the reader of the output went away (`envdoctor check | head -1`): 128 + SIGPIPE, the shell's
       convention for a writer whose pipe was closed; never 1, so it cannot read as "problems found"

The command line survives any terminal: closed standard streams (`<&-`) read as empty, a stream
that cannot encode ✓ ✗ → gets ASCII marks, and the heavy imports happen inside `main`'s guard so
that Ctrl-C during start-up is an interruption too.
"""

from __future__ import annotations

import errno
import functools
import os
import sys

EXIT_STATUS = ("Exit status: 0 nothing wrong; 1 {one}; 2 usage or input error (one line on stderr); "
               "130 interrupted{signals}; 141 output pipe closed early (e.g. | head).")
# Statuses a command has besides the common ones (plan/run.py: 128 + the signal that stopped --run).
MORE_STATUS = {"install": "; 143 terminated (SIGTERM) and 129 hung up (SIGHUP), after --run's rollback"}
WHAT_1_MEANS = {
    "check": "an error was found (with --strict also a warning or a failed probe)",
    "facts": "not used",
    "install": "no build fits this machine, or the installation failed",
    "matrix": "not used",
    "smoke": "a check failed or errored",
    "explain": "a known problem was recognised in the text",
}
QUIET_HELP = "Print only the errors and the verdict line of a report, and no spinner (also ENVDOCTOR_QUIET=1)."
PIPE_CLOSED = 141
QUIET_COMMANDS = ("check", "install", "matrix", "dockerfile", "compose", "fleet")  # those -q after the name reaches


@functools.lru_cache(maxsize=1)
def build_app():
    """The typer app with every command registered and the exit-status contract in each --help."""
    import importlib

    import typer

    from envdoctor.commands import COMMAND_MODULES

    app = typer.Typer(
        name="envdoctor",
        help="Diagnose, install and smoke-test PyTorch, TensorFlow, JAX and PaddlePaddle on this machine.",
        epilog=EXIT_STATUS.format(one="problems found", signals=""),
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)
    for info in app.registered_commands:
        command = info.name or info.callback.__name__
        info.callback = _naming(command, info.callback)
        if not info.epilog:
            info.epilog = EXIT_STATUS.format(one=WHAT_1_MEANS.get(command, "problems found"),
                                             signals=MORE_STATUS.get(command, ""))
    _define_root()
    app.callback()(_root)
    return app


def __getattr__(name: str):
    if name == "app":  # `from envdoctor.cli import app` (tests, typer's CliRunner)
        return build_app()
    raise AttributeError(name)


def _print_version(value: bool) -> None:
    if value:
        import typer

        from envdoctor import __version__

        typer.echo(f"envdoctor {__version__}")
        raise typer.Exit(0)


def _set_quiet(ctx, param, value: bool) -> bool:
    if value:
        os.environ["ENVDOCTOR_QUIET"] = "1"
    return value


def _root_options():
    import typer

    version = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True,
                           callback=_print_version, expose_value=False)
    quiet = typer.Option(False, "-q", "--quiet", help=QUIET_HELP, callback=_set_quiet, expose_value=False)
    return version, quiet


def _root(
    version: bool = False,
    quiet: bool = False,
) -> None:
    """Diagnose, install and smoke-test PyTorch, TensorFlow, JAX and PaddlePaddle on this machine."""


def _define_root() -> None:
    """typer reads the options from the defaults, which need typer: set them once it is imported."""
    version, quiet = _root_options()
    _root.__defaults__ = (version, quiet)


def click_command():
    """The click command typer builds, with `-q/--quiet` added to the commands that honour it."""
    import typer

    command = typer.main.get_command(build_app())
    quiet = _quiet_parameter()
    for name in QUIET_COMMANDS:
        sub = command.commands.get(name)
        if sub is not None and not any("--quiet" in p.opts for p in sub.params):
            sub.params.append(quiet)
    return command


def _quiet_parameter():
    """`-q/--quiet` as this typer release builds an option (typer 0.29 builds them differently from 0.28),
    taken from a one-option command rather than constructed by hand."""
    import typer

    probe = typer.Typer()

    @probe.command()
    def _quiet(quiet: bool = typer.Option(False, "-q", "--quiet", help=QUIET_HELP, callback=_set_quiet,
                                          expose_value=False)) -> None:
        pass  # pragma: no cover - never run: only its parameter is used

    return next(p for p in typer.main.get_command(probe).params if "--quiet" in p.opts)


def _naming(name: str, callback):
    """The command's callback, telling render which command runs (the schema of its --json)."""
    @functools.wraps(callback)
    def run(*args, **kwargs):
        from envdoctor.render import running

        running(name)
        return callback(*args, **kwargs)

    return run


def main() -> None:
    global _IN_MAIN
    _IN_MAIN = True
    try:
        _reopen_closed_streams()
        try:
            _guard_streams()
            code = _run()
            _flush()
        except KeyboardInterrupt:
            _interrupted()
        if PipeGuard.closed:
            _exit(PIPE_CLOSED)
        if code == 130:
            _interrupted()
        _exit(code)
    finally:
        _IN_MAIN = False
LONGEST_WORD = 300


def _shortened(word: str) -> str:
    """A word of an error message as a person can read it: an overlong argument echoed back is cut."""
    if len(word) <= LONGEST_WORD:
        return word
    return f"{word[:60]}...({len(word)} characters)"


def _run() -> int:
    try:
        from envdoctor.errors import UsageError
        from envdoctor.facts import FactsError
        from envdoctor.matrix.loader import MatrixError

        import typer

        try:
            code = click_command().main(prog_name="envdoctor", standalone_mode=False)
        except (UsageError, FactsError, MatrixError) as exc:
            return _fail(str(exc))
        except typer.Abort as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, KeyboardInterrupt):
                raise KeyboardInterrupt from None
            why = " (no answer: standard input is closed)" if isinstance(cause, EOFError) else ""
            return _fail(f"aborted{why}", code=1)
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        return _internal(exc)
    return code if isinstance(code, int) else 0


def _internal(exc: Exception) -> int:
    if _is_usage_error(exc):
        if not exc.format_message():  # no arguments at all: the help was the answer
            return exc.exit_code
        return _fail(_usage_line(exc), code=exc.exit_code)
    if isinstance(exc, OSError) and exc.errno in _OUTPUT_ERRNOS:  # `> /dev/full`, a full disk or quota
        return _fail(f"cannot write the output: {exc.strerror or exc}")
    if isinstance(exc, OverflowError):  # a number too large for what it sets (a timeout of 1e300 s)
        return _fail(f"a number (on the command line or in an input file) is too large: {exc}")
    if isinstance(exc, ValueError) and "integer string conversion" in str(exc):  # Python's digit limit
        return _fail("a number (on the command line or in an input file) has too many digits")
    if os.environ.get("ENVDOCTOR_DEBUG"):
        raise exc
    return _fail(f"internal error: {type(exc).__name__}: {exc} (set ENVDOCTOR_DEBUG=1 for the traceback)")


_OUTPUT_ERRNOS = frozenset(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG") if hasattr(errno, name))


def _is_usage_error(exc: Exception) -> bool:
    """click's (typer's) errors for bad options and arguments: they know how to phrase themselves."""
    return callable(getattr(exc, "format_message", None)) and hasattr(exc, "exit_code")


def _usage_line(exc: Exception) -> str:
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "envdoctor"
    return f"{exc.format_message()} (see '{command} --help')"


def _fail(message: str, code: int = 2) -> int:
    """Say what went wrong in one line on stderr; the caller returns `code`. (Used by tests with
    SystemExit too: `_fail` exits when called outside `main`.)"""
    message = " ".join(_shortened(part) for part in message.split())  # one line, always
    try:
        sys.stderr.write(f"envdoctor: error: {message}\n")
    except (OSError, ValueError):
        pass
    if not _IN_MAIN:
        sys.exit(code)
    return code


_IN_MAIN = False


def _interrupted() -> None:
    """Ctrl-C: one line, status 130, no traceback, and no waiting for worker threads (a probe that
    still runs in a thread pool would otherwise be joined at exit)."""
    try:
        sys.stderr.write("envdoctor: interrupted\n")
    except (OSError, ValueError):
        pass
    _flush()
    os._exit(130)


def _exit(code: int) -> None:
    _flush()
    sys.exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass


# --- standard streams ------------------------------------------------------------------------------

def _reopen_closed_streams() -> None:
    """A closed stdin/stdout/stderr (`<&-`) reads as /dev/null: nothing to read, nowhere to write.
    Opening it in order takes the lowest free descriptor, so the child processes inherit it too."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        if getattr(sys, name) is not None and _fd_open(fd):
            continue
        try:
            opened = os.open(os.devnull, os.O_RDONLY if mode == "r" else os.O_WRONLY)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
            setattr(sys, name, open(fd, mode, closefd=False, encoding="utf-8", errors="replace"))
        except OSError:
            pass


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _guard_streams() -> None:
    from envdoctor.render.marks import install_fallback

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        install_fallback(stream)
        if not isinstance(stream, PipeGuard):
            setattr(sys, name, PipeGuard(stream))


class PipeGuard:
    """A text stream whose reader may go away: the first EPIPE points the descriptor at /dev/null,
    records it (`main` then exits 141), and the command goes on to its end undisturbed — a pipe
    closed by `head` must not interrupt an installation half-way."""

    closed = False

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._broken()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._broken()

    def _broken(self) -> None:
        PipeGuard.closed = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
