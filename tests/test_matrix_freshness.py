"""How old the bundled knowledge is: loader.newest_checked() (display), loader.least_recently_checked()
(staleness), the matrices-stale finding, install's warning."""

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys

from envdoctor.matrix import freshness, loader
from tests.conftest import FIXTURES, ROOT, run_cli

MACHINE = FIXTURES / "machines" / "a100-current.json"


def _file_dates(root):
    """Each data file's newest `checked` date, read here independently of the loader."""
    found = {}
    for path in (root / "matrices").rglob("*.toml"):
        dates = re.findall(r'^checked = "(\d{4}-\d{2}-\d{2})"', path.read_text(encoding="utf-8"), re.M)
        if dates:
            found[path.relative_to(root / "matrices").as_posix()] = dt.date.fromisoformat(max(dates))
    return found


def test_newest_checked_is_the_newest_row_date_of_the_bundled_files():
    assert loader.newest_checked() == max(_file_dates(ROOT).values())


def test_staleness_counts_from_the_least_recently_checked_file():
    dates = _file_dates(ROOT)
    oldest = min(dates.values())
    assert loader.least_recently_checked() == (oldest, min(n for n, d in dates.items() if d == oldest))
    assert freshness.age_days(oldest + dt.timedelta(days=120)) == 120
    assert not freshness.is_stale(oldest + dt.timedelta(days=120))
    assert freshness.is_stale(oldest + dt.timedelta(days=121))
    note = freshness.unknown_releases("pytorch", oldest + dt.timedelta(days=200))
    assert "PyTorch releases after 2.15.0" in note and "200 days ago" in note and "pipx upgrade envdoctor" in note
    assert f"was checked on {oldest.isoformat()}" in note
    assert freshness.unknown_releases("pytorch", oldest) is None


def test_one_fresh_row_does_not_make_the_other_files_look_fresh(tmp_path):
    """Every file aged to 2020 except one row of one file re-checked today: the data is still stale."""
    env = _aged_data(tmp_path)
    touched = tmp_path / "matrices" / "pytorch.toml"
    text = touched.read_text(encoding="utf-8")
    touched.write_text(text.replace('checked = "2020-01-01"', f'checked = "{dt.date.today().isoformat()}"', 1),
                       encoding="utf-8")
    script = ("import json; from envdoctor.matrix import freshness, loader; "
              "print(json.dumps([str(loader.newest_checked()), freshness.is_stale(), freshness.checked_line()]))")
    out = subprocess.run([sys.executable, "-c", script], env={**os.environ, **env},
                         capture_output=True, text=True, timeout=60)
    newest, stale, line = json.loads(out.stdout)
    assert newest == dt.date.today().isoformat() and stale
    assert "was checked on 2020-01-01" in line and "pytorch.toml" not in line


def _aged_data(tmp_path, day="2020-01-01"):
    """A copy of matrices/ and recipes/ whose every row was last checked on `day`."""
    for kind in ("matrices", "recipes"):
        shutil.copytree(ROOT / kind, tmp_path / kind)
    for path in (tmp_path / "matrices").rglob("*.toml"):
        text = re.sub(r'^checked = .*$', f'checked = "{day}"', path.read_text(encoding="utf-8"), flags=re.M)
        path.write_text(text, encoding="utf-8")
    return {"ENVDOCTOR_DATA_DIR": str(tmp_path)}


def test_check_says_so_in_one_info_line_when_the_data_is_old(tmp_path):
    result = run_cli("check", "--facts", str(MACHINE), "--json", env=_aged_data(tmp_path))
    assert result.returncode in (0, 1), result.stderr
    found = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "matrices-stale"]
    assert len(found) == 1 and found[0]["severity"] == "info"
    assert "2020-01-01" in found[0]["title"] and "pipx upgrade envdoctor" in found[0]["fix"][0]


def test_fresh_data_gives_no_staleness_finding():
    result = run_cli("check", "--facts", str(MACHINE), "--json")
    assert "matrices-stale" not in {f["code"] for f in json.loads(result.stdout)["findings"]}


def test_install_says_which_releases_it_cannot_know_about(tmp_path):
    result = run_cli("install", "pytorch", "--facts", str(MACHINE), "--json", env=_aged_data(tmp_path))
    assert result.returncode == 0, result.stderr
    warnings = json.loads(result.stdout)["warnings"]
    assert any("PyTorch releases after 2.15.0" in w and "2020-01-01" in w for w in warnings), warnings
