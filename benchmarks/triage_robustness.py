"""Does `envdoctor explain` say the same of a report however it was pasted?

Every report in tests/fixtures/reports/ is diagnosed as written, then again after each of the
transformations people's tools apply to pasted text, and the diagnoses are compared:

- fold-80: `fold -w 80`, a terminal's hard wrap (words broken where the width falls);
- fold-s-80: `fold -s -w 80`, wrapping at spaces;
- quoted: every line quoted with "> " (an e-mail or GitHub reply);
- fold+quote: hard-wrapped at 70, then quoted;
- crlf: Windows line ends;
- utf-16: saved by PowerShell (UTF-16 LE with a BOM).

    python benchmarks/triage_robustness.py [-v]

Prints, per transformation, the share of reports whose diagnosis is unchanged. Always exits 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envdoctor.explain import explain  # noqa: E402
from envdoctor.facts import SCHEMA, Facts  # noqa: E402
from envdoctor.read import read_machine  # noqa: E402
from envdoctor.textnorm import normalise  # noqa: E402


def diagnosis(raw: str | bytes) -> tuple[str, ...]:
    doc = normalise(raw)
    facts, _ = read_machine(doc.text)
    return explain(doc, Facts.from_dict(facts or {"schema": SCHEMA}), machine_described=bool(facts)).diagnosis


def fold(text: str, width: int, at_spaces: bool = False) -> str:
    out = []
    for line in text.splitlines():
        while len(line) > width:
            cut = line.rfind(" ", 0, width) + 1 if at_spaces else 0
            cut = cut or width
            out.append(line[:cut])
            line = line[cut:]
        out.append(line)
    return "\n".join(out)


def quote(text: str) -> str:
    return "\n".join("> " + line for line in text.splitlines())


TRANSFORMS = {
    "fold-80": lambda t: fold(t, 80),
    "fold-s-80": lambda t: fold(t, 80, at_spaces=True),
    "quoted": quote,
    "fold+quote": lambda t: quote(fold(t, 70)),
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "utf-16": lambda t: t.encode("utf-16"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="name the reports that change")
    args = parser.parse_args()
    reports = sorted((ROOT / "tests" / "fixtures" / "reports").glob("*.txt"))
    bodies = {p.name: p.read_text(encoding="utf-8").split("\n# ---\n", 1)[1] for p in reports}
    base = {name: diagnosis(body) for name, body in bodies.items()}
    for label, transform in TRANSFORMS.items():
        changed = [name for name, body in bodies.items() if diagnosis(transform(body)) != base[name]]
        same = len(bodies) - len(changed)
        print(f"{label:<11} unchanged {same}/{len(bodies)} ({100 * same / len(bodies):.0f}%)")
        if args.verbose:
            for name in changed:
                print(f"    {name}")


if __name__ == "__main__":
    main()
