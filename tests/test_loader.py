import pytest

from envdoctor.matrix.loader import MatrixError, data_dir, load_file
from envdoctor.plan.recipes import fill_argv


def _all_data_files():
    return sorted(data_dir("matrices").glob("*.toml")) + sorted(data_dir("recipes").glob("*.toml"))


@pytest.mark.parametrize("path", _all_data_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_bundled_file_loads_with_provenance(path):
    assert load_file(path)


def test_row_without_source_is_refused(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text('[[cuda]]\ncuda = "12.8"\nchecked = "2026-11-29"\n')
    with pytest.raises(MatrixError, match=r"x.toml: \[\[cuda\]\] row 1 \(cuda=12.8\): missing 'source'"):
        load_file(path)


def test_row_with_bad_date_is_refused(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text('[[cuda]]\ncuda = "12.8"\nsource = "s"\nchecked = "29/11/2026"\n')
    with pytest.raises(MatrixError, match="not a YYYY-MM-DD date"):
        load_file(path)


def test_nested_rows_are_checked_too(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text('[[release]]\nversion = "1"\nsource = "s"\nchecked = 2026-11-29\n'
                    '[[release.build]]\nname = "cu128"\nchecked = 2026-11-29\n')
    with pytest.raises(MatrixError, match="build.*missing 'source'"):
        load_file(path)


def test_malformed_toml_names_the_file(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("[[cuda]\n")
    with pytest.raises(MatrixError, match="broken.toml: not valid TOML"):
        load_file(path)


def test_recipe_templates_expand_lists_and_fields():
    argv = fill_argv(["{python}", "-m", "pip", "install", "{packages...}", "--index-url", "{index}/whl/{build}"],
                     {"python": "/v/bin/python", "packages": ["torch==2.9.1", "torchvision==0.24.1"],
                      "index": "https://example.org", "build": "cu128"}, "test")
    assert argv == ("/v/bin/python", "-m", "pip", "install", "torch==2.9.1", "torchvision==0.24.1",
                    "--index-url", "https://example.org/whl/cu128")


def test_recipe_with_missing_value_is_an_error():
    with pytest.raises(MatrixError, match=r"no value for placeholder \{index\}"):
        fill_argv(["{index}"], {}, "test")


def test_a_broken_bundled_matrix_stops_check_with_one_line(tmp_path, cli):
    import shutil

    for kind in ("matrices", "recipes"):
        shutil.copytree(data_dir(kind), tmp_path / kind)
    pytorch = tmp_path / "matrices" / "pytorch.toml"
    text = pytorch.read_text()
    first_row = text.index("\n[[release]]")
    pytorch.write_text(text[:first_row] + text[first_row:].replace("source = ", "origin = ", 1))
    machine = str(data_dir("matrices").parent / "tests" / "fixtures" / "machines" / "t4-r550-py310.json")
    result = cli("check", "--facts", machine, env={"ENVDOCTOR_DATA_DIR": str(tmp_path)})
    assert result.returncode == 2
    assert result.stderr.startswith("envdoctor: error: pytorch.toml:") and "missing 'source'" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_plain_table_of_values_needs_provenance(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text('[index]\nurl = "https://example.org"\n')
    with pytest.raises(MatrixError, match=r"x.toml: \[index\]: missing 'source'"):
        load_file(path)


def test_parsed_files_are_cached_and_edits_are_checked_again(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "x.toml"
    path.write_text('[[cuda]]\ncuda = "12.8"\nsource = "s"\nchecked = 2026-11-29\n')
    first = load_file(path)
    assert first == {"cuda": [{"cuda": "12.8", "source": "s", "checked": "2026-11-29"}]}
    assert len(list((tmp_path / "cache").glob("*-x.toml.*.marshal"))) == 1
    assert load_file(path) == first
    path.write_text('[[cuda]]\ncuda = "12.8"\nchecked = 2026-11-29\n')  # provenance removed
    with pytest.raises(MatrixError, match="missing 'source'"):
        load_file(path)


def test_an_unwritable_cache_is_no_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(blocker / "cache"))
    path = tmp_path / "x.toml"
    path.write_text('[[cuda]]\ncuda = "13.0"\nsource = "s"\nchecked = "2026-11-29"\n')
    assert load_file(path)["cuda"][0]["cuda"] == "13.0"


def test_same_named_files_in_two_folders_do_not_evict_each_other(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    for folder, value in (("matrices", "12.8"), ("recipes", "13.0")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.toml").write_text(f'[[cuda]]\ncuda = "{value}"\nsource = "s"\nchecked = "2026-11-29"\n')
    for folder in ("matrices", "recipes"):
        load_file(tmp_path / folder / "x.toml")
    assert len(list((tmp_path / "cache").glob("*.marshal"))) == 2  # both stay cached
    assert load_file(tmp_path / "recipes" / "x.toml")["cuda"][0]["cuda"] == "13.0"


def test_derived_data_is_cached_until_its_source_changes(tmp_path, monkeypatch):
    from envdoctor.matrix.loader import cached

    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    calls = []

    def derive(value):
        return lambda: calls.append(value) or {"value": value}

    assert cached("derived", b"one", derive(1)) == {"value": 1}
    assert cached("derived", b"one", derive(2)) == {"value": 1}  # the same source: not derived again
    assert cached("derived", b"two", derive(3)) == {"value": 3}
    assert calls == [1, 3] and len(list((tmp_path / "cache").glob("derived.*.marshal"))) == 1


def test_a_bad_signature_pattern_is_refused_after_a_good_load_was_cached(tmp_path, monkeypatch):
    from envdoctor.explain import parse_signatures

    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    row = {"id": "x", "framework": "cuda", "codes": ["a"], "cause": "c", "fix": "f", "source": "s"}
    assert parse_signatures({"signature": [dict(row, pattern="no kernel image")]})[0].needles == ("no kernel image",)
    with pytest.raises(MatrixError, match="bad pattern"):
        parse_signatures({"signature": [dict(row, pattern="no (kernel")]})
