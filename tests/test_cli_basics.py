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


def test_root_help_offers_quiet_and_completion(cli):
    text = cli("--help", env={"COLUMNS": "200"}).stdout
    for option in ("--quiet", "--install-completion", "--show-completion", "--version"):
        assert option in text


def test_envdoctor_manager_sets_install_default(cli):
    from conftest import FIXTURES

    machine = str(FIXTURES / "machines" / "diag-driver-old.json")
    import json

    plan = json.loads(cli("install", "pytorch", "--json", "--facts", machine, env={"ENVDOCTOR_MANAGER": "uv"}).stdout)
    assert plan["manager"] == "uv"
    explicit = json.loads(cli("install", "pytorch", "--json", "--manager", "pip", "--facts", machine,
                              env={"ENVDOCTOR_MANAGER": "uv"}).stdout)
    assert explicit["manager"] == "pip"  # the command line wins
    bad = cli("install", "pytorch", "--facts", machine, env={"ENVDOCTOR_MANAGER": "bogus"})
    assert bad.returncode == 2 and "bogus" in bad.stderr


def test_app_is_importable_for_in_process_runners():
    from typer.testing import CliRunner

    from envdoctor.cli import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("envdoctor ")


def test_in_process_json_names_its_schema():
    import json

    from typer.testing import CliRunner

    from conftest import FIXTURES
    from envdoctor.cli import app

    machine = str(FIXTURES / "machines" / "diag-driver-old.json")
    result = CliRunner().invoke(app, ["install", "pytorch", "--json", "--facts", machine])
    assert json.loads(result.output)["schema"] == "envdoctor.install/1"
