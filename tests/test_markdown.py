"""The issue-ready Markdown report (envdoctor.render.markdown): its layout, the facts it embeds and
what it redacts."""

import json
import re

from envdoctor import __version__
from envdoctor.complete import complete
from envdoctor.diagnose import diagnose
from envdoctor.facts import Facts, load_facts
from envdoctor.render import matrices_checked
from envdoctor.render.markdown import MARKER, facts_markdown, redact_text, report_markdown

from conftest import FIXTURES

MACHINES = FIXTURES / "machines"


def embedded_facts(markdown: str) -> dict:
    block = re.search(r"<details><summary>Facts \(envdoctor\.facts/1\)</summary>\n\n```json\n(.*?)\n```\n\n</details>",
                      markdown, re.S)
    assert block, markdown
    return json.loads(block.group(1))


def diagnosed(name: str):
    facts = complete(load_facts(MACHINES / name))
    return facts, diagnose(facts)


def test_report_layout_verdict_findings_and_fixes():
    facts, findings = diagnosed("diag-driver-old.json")
    md = report_markdown(facts, findings, {"nvidia": 0.25})
    lines = md.splitlines()
    assert lines[0] == MARKER
    assert f"envdoctor {__version__}, matrices checked {matrices_checked()}" in md
    assert "**Verdict:** 1 error, 0 warnings." in md
    assert "`driver-too-old`" in md
    assert "  - fix: `" in md  # the command, as inline code
    assert md.index("**Verdict:**") < md.index("### Findings") < md.index("<details>")


def test_embedded_facts_are_the_facts_document_and_replay():
    facts, findings = diagnosed("diag-driver-old.json")
    data = embedded_facts(report_markdown(facts, findings, {}, redact=False))
    assert data["schema"] == "envdoctor.facts/1"
    assert data["envdoctor_version"] == __version__
    assert Facts.from_dict(data).nvidia.driver_version == facts.nvidia.driver_version


def test_clean_machine_says_no_problems():
    facts, findings = diagnosed("diag-clean-rtx4090.json")
    md = report_markdown(facts, [f for f in findings if f.severity == "info"], {})
    assert "**Verdict:** No problems found" in md


def _machine(executable: str, hostname: str = "anas-laptop") -> Facts:
    return Facts.from_dict({
        "schema": "envdoctor.facts/1",
        "host": {"os": "linux", "distro": "Ubuntu 24.04", "hostname": hostname},
        "python": {"executable": executable, "version": "3.12.3", "env_path": executable.rsplit("/", 2)[0]},
        "env": {"CUDA_HOME": "/home/anastasia/cuda", "LD_LIBRARY_PATH": "/opt/x:/home/anastasia/lib"},
    })


def test_redaction_hides_homes_user_names_and_host_name():
    facts = _machine("/home/anastasia/proj/.venv/bin/python")
    md = report_markdown(facts, [], {})
    assert "anastasia" not in md and "anas-laptop" not in md
    data = embedded_facts(md)  # still valid JSON after redaction
    assert data["python"]["executable"] == "~/proj/.venv/bin/python"
    assert data["env"]["LD_LIBRARY_PATH"] == "/opt/x:~/lib"
    assert data["host"]["hostname"] == "<host>"
    assert data["host"]["distro"] == "Ubuntu 24.04"


def test_no_redact_keeps_everything():
    facts = _machine("/home/anastasia/proj/.venv/bin/python")
    md = report_markdown(facts, [], {}, redact=False)
    assert "/home/anastasia/proj" in md and "anas-laptop" in md


def test_windows_and_macos_homes():
    text = ('C:\\Users\\Zoe Q\\x "C:\\\\Users\\\\zoe\\\\AppData\\\\py.exe" /Users/zoe/miniforge3/bin/python '
            "d:/users/zoe/venv and zoe wrote this")
    out = redact_text(text, ["zoe"])
    assert "zoe" not in out.lower().replace("<user>", "")
    assert "~\\\\AppData" in out and "~/miniforge3" in out and "<user> wrote this" in out


def test_generic_account_names_are_kept():
    out = redact_text("/home/ubuntu/venv on Ubuntu 24.04, user root", ["ubuntu", "root"])
    assert out == "/home/ubuntu/venv on Ubuntu 24.04, user root"


def test_a_short_name_does_not_eat_words():
    assert redact_text("jo ran job", ["jo"]) == "jo ran job"


def test_facts_markdown():
    facts = load_facts(MACHINES / "a100-current.json")
    md = facts_markdown(facts, redact=True)
    assert md.startswith(MARKER + "\n")
    assert "**Machine:**" in md and "Verdict" not in md
    assert embedded_facts(md)["schema"] == "envdoctor.facts/1"


def test_markdown_text_is_kept_from_html():
    from envdoctor.findings import Finding

    facts = _machine("/opt/py/bin/python")
    finding = Finding(code="x-code", severity="warning", title="a <script> in a title", detail="d",
                      fix=(("echo", "a`b"),), section="python")
    md = report_markdown(facts, [finding], {})
    assert "<script>" not in md and "&lt;script>" in md
    assert "``echo 'a`b'``" in md


def test_redact_document_redacts_every_string_and_keeps_the_shape():
    from envdoctor.render.markdown import redact_document

    doc = {"python": {"executable": "/Users/zoe/.venv/bin/python", "n": 3}, "paths": ["C:\\Users\\zoe\\x"], "ok": True}
    assert redact_document(doc, ["zoe"]) == {"python": {"executable": "~/.venv/bin/python", "n": 3},
                                              "paths": ["~\\x"], "ok": True}
