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
        app()  # standalone: click reports bad options itself, with exit code 2
    except (UsageError, FactsError, MatrixError) as exc:
        _fail(str(exc))
    except Exception as exc:  # anything unexpected: one line, not a traceback
        if os.environ.get("ENVDOCTOR_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set ENVDOCTOR_DEBUG=1 for the traceback)")


def _fail(message: str, code: int = 2) -> None:
    message = " ".join(part.strip() for part in message.splitlines() if part.strip())  # one line, always
    sys.stderr.write(f"envdoctor: error: {message}\n")
    sys.exit(code)
