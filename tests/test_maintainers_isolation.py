"""The maintainers' package (registry fetching, deriving, kernel scanning) stays off users' paths."""

import re
import subprocess
import sys

from tests.conftest import FIXTURES, ROOT

PROBE = """
import sys
from envdoctor import cli
from envdoctor.facts import load_facts
from envdoctor.diagnose import diagnose
from envdoctor.plan import PlanRequest, make_plan
facts = load_facts(sys.argv[1])
diagnose(facts)
for framework in ("pytorch", "tensorflow", "jax", "paddle"):
    make_plan(facts, PlanRequest(framework))
facts_file = sys.argv[1]
for argv in (["check", "--facts", facts_file, "--json"], ["install", "pytorch", "--facts", facts_file, "--json"]):
    sys.argv = ["envdoctor", *argv]
    try:
        cli.main()
    except SystemExit:
        pass
leaked = sorted(m for m in sys.modules if m.startswith("envdoctor.maintainers"))
print("LEAKED", leaked, file=sys.stderr)
sys.exit(1 if leaked else 0)
"""


def test_check_and_install_never_import_the_maintainers_package():
    result = subprocess.run([sys.executable, "-c", PROBE, str(FIXTURES / "machines" / "a100-current.json")],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]


def test_no_user_module_imports_the_maintainers_package():
    offenders = []
    for path in (ROOT / "envdoctor").rglob("*.py"):
        if "maintainers" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"^\s*(from envdoctor\.maintainers|import envdoctor\.maintainers|from envdoctor import maintainers)",
                     text, re.M):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
