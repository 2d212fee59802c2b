"""The command line as a whole: version, help, unknown commands and options."""

from envdoctor import __version__


def test_version(cli):
    result = cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"envdoctor {__version__}"


def test_help_lists_every_command(cli):
    result = cli("--help")
    assert result.returncode == 0
    for command in ("check", "facts", "install", "matrix", "smoke", "explain"):
        assert command in result.stdout


def test_unknown_command_and_option_exit_2_without_traceback(cli):
    for args in (("frobnicate",), ("check", "--bogus")):
        result = cli(*args)
        assert result.returncode == 2
        assert "Traceback" not in result.stderr


def test_no_arguments_shows_help(cli):
    result = cli()
    assert "check" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_an_error_message_is_always_one_line(capsys):
    import pytest

    from envdoctor import cli

    with pytest.raises(SystemExit) as exited:
        cli._fail("internal error: ValueError: first\n  second\n")
    assert exited.value.code == 2
    assert capsys.readouterr().err == "envdoctor: error: internal error: ValueError: first second\n"


def test_click_usage_errors_are_one_line(cli):
    for args, text in ((("check", "--bogus"), "No such option: --bogus"),
                       (("smoke", "--timeout", "abc"), "Invalid value for '--timeout'"),  # wording after it differs by typer release
                       (("install",), "Missing argument")):
        result = cli(*args)
        assert result.returncode == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("envdoctor: error: ") and text in lines[0], result.stderr
