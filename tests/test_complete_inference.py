"""complete(): inferences from gpus.toml's desktop column and from jetson.toml's SoC rows, each checked
against the matrix row it cites; and the completion stage's own imports (no rule module)."""

import subprocess
import sys

import pytest

from envdoctor.complete import complete
from envdoctor.facts import Facts
from envdoctor.matrix import gpus, jetson


def completed(**blocks):
    return complete(Facts.from_dict({"schema": "envdoctor.facts/1", **blocks}))


@pytest.mark.parametrize("name, desktop", [
    ("NVIDIA GeForce RTX 4090", True), ("NVIDIA RTX A6000", True), ("Quadro RTX 8000", True),
    ("NVIDIA RTX 6000 Ada Generation", True), ("NVIDIA GeForce GTX 1080 Ti", True),
    ("NVIDIA L4", False), ("NVIDIA A100-SXM4-80GB", False), ("NVIDIA GH200 480GB", False), ("Tesla T4", False),
    ("NVIDIA Imaginary X9", None),  # no product row: unknown, not "no"
])
def test_the_desktop_column_of_gpus_toml(name, desktop):
    assert gpus.is_desktop_card(name) is desktop


def test_a_desktop_card_on_linux_means_x86_64_and_says_so():
    facts = completed(host={"os": "linux"}, nvidia={"gpus": [{"name": "NVIDIA GeForce RTX 4090"}]})
    assert facts.host.arch == "x86_64"
    assert "desktop/workstation card" in facts.inferred["host.arch"]


def test_a_data_centre_gpu_decides_no_architecture():
    facts = completed(host={"os": "linux"}, nvidia={"gpus": [{"name": "NVIDIA L4"}]})
    assert facts.host.arch is None and "host.arch" not in facts.inferred


def test_a_jetson_soc_from_its_l4t_release_alone_where_it_has_one():
    release = jetson.release_for_l4t("36.4.3")
    assert release.socs == ("tegra234",)  # the row the inference cites
    facts = completed(jetson={"l4t": "36.4.3"})
    assert facts.jetson.soc == "tegra234"
    assert facts.inferred["jetson.soc"] == "jetson.toml: tegra234 is the one SoC that fits L4T 36.4.3 (tegra234)"


def test_a_jetson_soc_from_its_model_name_through_the_compute_capability():
    assert gpus.product_for_name("NVIDIA Jetson AGX Orin Developer Kit").cc == "8.7"
    assert jetson.soc_compute_capability("tegra234") == "8.7"
    facts = completed(jetson={"model": "NVIDIA Jetson AGX Orin Developer Kit"})
    assert facts.jetson.soc == "tegra234"
    assert "compute capability 8.7" in facts.inferred["jetson.soc"]


def test_a_jetson_soc_narrowed_by_release_and_gpu():
    assert len(jetson.release_for_l4t("35.4.1").socs) > 1  # L4T 35 alone fits Xavier and Orin
    assert completed(jetson={"l4t": "35.4.1"}).jetson.soc is None
    facts = completed(jetson={"l4t": "35.4.1"}, nvidia={"gpus": [{"name": "Xavier", "compute_capability": "7.2"}]})
    assert facts.jetson.soc == "tegra194"


def test_no_jetson_soc_where_the_facts_disagree():
    facts = completed(jetson={"model": "Jetson AGX Orin"}, nvidia={"gpus": [{"compute_capability": "7.2"}]})
    assert facts.jetson.soc is None and "jetson.soc" not in facts.inferred


def test_an_observed_soc_is_never_overwritten():
    facts = completed(jetson={"l4t": "36.4.3", "soc": "tegra264"})
    assert facts.jetson.soc == "tegra264" and "jetson.soc" not in facts.inferred


def test_completion_imports_no_rule_module():
    """complete.py shares the torch build logic through diagnose/knowledge.py, not a rule module."""
    code = ("import sys, json; from envdoctor.facts import Facts; from envdoctor.complete import complete; "
            "complete(Facts.from_dict({'schema': 'envdoctor.facts/1', 'python': {'packages': {'torch': '2.13.0'}}, "
            "'frameworks': {'torch': {'version': '2.13.0', 'cuda': '13.0'}}})); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('envdoctor.diagnose.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "envdoctor.diagnose.frameworks" not in out and "envdoctor.diagnose.knowledge" in out
