"""The scanner side of :mod:`upskill_hub.trust.scanner`: one process that scans many skill folders.

Run by the scanner's own interpreter (its virtualenv: ``.ci/skill-scanner``, pipx, uv
tool), never imported by upskill-hub, which cannot import ``skill_scanner`` (its pins
clash with ours). Importing the scanner and compiling its rules takes most of a scan's
time, so this does it once and then answers one request per line:

* out, first: ``{"ready": true, "version": "2.3.2"}`` once the scanner is built;
* in: ``{"folder": "/tmp/.../skill"}``; out: ``{"ok": true, "report": {...}}`` (the
  report ``skill-scanner scan --format json --lenient`` prints) or ``{"ok": false,
  "error": "..."}``. EOF on stdin ends the process.

The scanner is set up the way ``skill-scanner scan`` sets it up (its CLI's own helpers,
pinned 2.3.2), so the findings are the CLI's. Anything the scanner prints goes to stderr:
only this protocol uses stdout.
"""

import json
import os
import sys


def main() -> int:
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # the scanner's (and native code's) prints cannot corrupt the protocol
    sys.stdout = sys.stderr

    def send(obj: dict) -> None:
        proto.write(json.dumps(obj, ensure_ascii=True) + "\n")
        proto.flush()

    from skill_scanner import __version__
    from skill_scanner.cli import cli as c
    from skill_scanner.core.finding_taxonomy import refresh_taxonomy_scan_metadata

    argv = ["scan", ".", "--format", "json", "--compact", "--lenient"]
    if "--use-llm" in sys.argv[1:]:
        argv.append("--use-llm")
    args = c.build_parser().parse_args(argv)

    def status(msg: str) -> None:
        print(msg, file=sys.stderr)

    c._configure_taxonomy_and_threat_mapping(args, status)
    policy = c._load_policy(args)
    scanner = c._create_skill_scanner(c._build_analyzers(policy, args, status), policy, args, status)
    send({"ready": True, "version": __version__})
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                folder = json.loads(line)["folder"]
                result = scanner.scan_skill(folder, lenient=True)
                result.findings = [
                    f for f in result.findings if not f.metadata.get("meta_false_positive", False)
                ]
                refresh_taxonomy_scan_metadata(result)
                send({"ok": True, "report": json.loads(c._format_output(args, result))})
            except Exception as exc:  # one skill's failure is that skill's answer
                send({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
    finally:
        scanner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
