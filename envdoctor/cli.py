"""Command line: `envdoctor check | facts | install | matrix | smoke | explain`.

Exit codes: 0 nothing wrong; 1 problems found; 2 usage or input error (one line, no traceback).
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

from envdoctor.commands import COMMAND_MODULES

app = typer.Typer(
    name="envdoctor",
    help="Diagnose, install and smoke-test PyTorch, TensorFlow, JAX and PaddlePaddle on this machine.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def _print_version(value: bool) -> None:
    if value:
        from envdoctor import __version__

        typer.echo(f"envdoctor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True,
                                 callback=_print_version, expose_value=False),
) -> None:
    """Diagnose, install and smoke-test PyTorch, TensorFlow, JAX and PaddlePaddle on this machine."""


def main() -> None:
    from envdoctor.errors import UsageError
    from envdoctor.facts import FactsError
    from envdoctor.matrix.loader import MatrixError

    try:
        code = app(standalone_mode=False)
    except (UsageError, FactsError, MatrixError) as exc:
        _fail(str(exc))
    except typer.Abort:
        _fail("aborted", code=1)
    except KeyboardInterrupt:
        _fail("interrupted", code=130)
    except Exception as exc:
        if _is_usage_error(exc):
            if not exc.format_message():  # no arguments at all: the help was the answer
                sys.exit(exc.exit_code)
            _fail(_usage_line(exc), code=exc.exit_code)
        if os.environ.get("ENVDOCTOR_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set ENVDOCTOR_DEBUG=1 for the traceback)")
    sys.exit(code if isinstance(code, int) else 0)


def _is_usage_error(exc: Exception) -> bool:
    """click's (typer's) errors for bad options and arguments: they know how to phrase themselves."""
    return callable(getattr(exc, "format_message", None)) and hasattr(exc, "exit_code")


def _usage_line(exc: Exception) -> str:
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "envdoctor"
    return f"{exc.format_message()} (see '{command} --help')"


def _fail(message: str, code: int = 2) -> None:
    message = " ".join(part.strip() for part in message.splitlines() if part.strip())  # one line, always
    sys.stderr.write(f"envdoctor: error: {message}\n")
    sys.exit(code)
