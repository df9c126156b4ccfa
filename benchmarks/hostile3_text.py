"""Round 3, class 9 (terminal and file output): controls in a skill's prose never print raw.

Each attack is a skill whose description, metadata or body carries terminal controls; the
verdict is ``ok`` when ``skills validate`` refuses it in lines that name the character, and
``skills list`` / ``skills show`` print it escaped (no raw ESC, C1, BEL or bidi mark reaches stdout).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hostile_inputs import cli, snapshot, verdict

RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066")
ENTRY = "import sys\nfrom upskill_hub.cli.app import entry\nsys.argv = ['upskill-hub'] + sys.argv[1:]\nentry()\n"


def _skill(root: Path, fm_extra: str, body: str) -> Path:
    d = root / "demo"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nname: demo\n{fm_extra}---\n\n{body}", encoding="utf-8")
    return d


def attacks(tmp: Path) -> list[bool]:
    """Class 9's attacks, one verdict line each."""
    print("class 9: terminal and file output (controls in prose)")
    results = []
    for i, (label, fm, body, code) in enumerate(
        (
            ("OSC title in the description", 'description: "Use \\e]2;owned\\a for demos"\n', "# Demo\n", "U+001B"),
            ("C1 CSI in a metadata value", 'description: "Use for demos."\nmetadata:\n  k: "a\\x9b2Jb"\n', "# Demo\n", "U+009B"),
            ("isolate U+2066 in compatibility", 'description: "Use for demos."\ncompatibility: "x\\u2066y"\n', "# D\n", "U+2066"),
        )
    ):  # fmt: skip
        d = _skill(tmp / f"c9-{i}", fm, body)
        before = snapshot(d.parent)
        results.append(verdict(f"{label}: skills validate", cli(["skills", "validate", str(d)]), code,
                               unchanged=d.parent, before=before))  # fmt: skip
        for cmd in (["skills", "list", str(d.parent)], ["skills", "show", str(d)]):
            out = subprocess.run([sys.executable, "-c", ENTRY, *cmd], capture_output=True, text=True, timeout=60)
            clean = not any(c in out.stdout + out.stderr for c in RAW) and "Traceback" not in out.stderr
            results.append(clean)
            print(f"  {'ok  ' if clean else 'FAIL'} {label}: {cmd[1]} prints it escaped (exit {out.returncode})")
    d = _skill(tmp / "c9-body", 'description: "Use for demos."\n', "# Demo\n\nStep \x1b]8;;http://x\x07link\n")
    strict = cli(["skills", "validate", "--strict", str(d)])
    results.append(verdict("ESC in the body: skills validate --strict", strict, "body: control character U+001B"))
    return results
