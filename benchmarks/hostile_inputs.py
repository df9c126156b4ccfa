"""What the attacks of issue 10 cost now: each figure is measured, none is assumed.

Printed, one line per attack:
* parquet bomb: a small parquet that decompresses to 400 MB, named as a Space library:
  time to refuse it and the growth of this process's peak memory (was: +3.2 GB, 2.6 GB cached);
* anonymous 400 MB commit body to ``hub serve``: bytes the server read and peak memory growth
  (was: 1.26 GB);
* README alias bomb (~350 bytes): size of the repo-info answer (was: 659 MB);
* catastrophic regex ``(x+x+)+y`` on 5,000 ``x``: time until the assertion fails (was: never);
* ``{"$ref": "#"}`` and ``$ref`` to a URL: time until the assertion fails, requests sent.

Run: ``.venv/bin/python benchmarks/hostile_inputs.py`` (about 15 s; local servers only).
"""

from __future__ import annotations

import base64
import io
import json
import os
import resource
import tempfile
import time
from pathlib import Path


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="hostile-bench-"))
    os.environ.update(HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp / "hf"), HF_HUB_CACHE=str(tmp / "hf" / "hub"))
    from upskill_hub.netutil import free_port

    port = free_port()
    os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{port}"
    import httpx2
    import pyarrow as pa
    import pyarrow.parquet as pq
    from huggingface_hub import CommitOperationAdd, HfApi

    from upskill_hub.cases import parse_assertion
    from upskill_hub.errors import UpskillError
    from upskill_hub.evals.assertions import check_sync
    from upskill_hub.localhub.testing import running_server
    from upskill_hub.space import data

    token = "hf_" + "bench" * 6
    with running_server(tmp / "root", port=port, write_tokens=(token,)) as srv:
        api = HfApi(token=token)
        # --- parquet bomb
        # Written one 6.25 MB row at a time, so building the bomb does not raise this process's peak.
        buf = io.BytesIO()
        schema = pa.schema([("name", pa.string()), ("body", pa.string())])
        with pq.ParquetWriter(buf, schema, compression="zstd", use_dictionary=False) as writer:
            for i in range(64):
                writer.write_table(pa.table({"name": [f"s{i}"], "body": ["a" * (400 * 1024 * 1024 // 64)]}, schema))
        api.create_repo("user/bomb", repo_type="dataset")
        api.create_commit("user/bomb", [CommitOperationAdd("data/skills/bomb.parquet", buf.getvalue())],
                          commit_message="bomb", repo_type="dataset")  # fmt: skip
        before, started = peak_mb(), time.monotonic()
        try:
            data.load_library("user/bomb", token=False, allow_local=False)
            outcome = "LOADED"
        except UpskillError as exc:
            outcome = f"refused ({str(exc)[:70]}...)"
        print(f"parquet bomb ({len(buf.getvalue()) / 1024:.0f} KB -> 400 MB): {outcome} in "
              f"{time.monotonic() - started:.2f}s, peak memory +{peak_mb() - before:.0f} MB, "
              f"cached libraries {len(data._CACHE)}")  # fmt: skip

        # --- anonymous 400 MB body
        api.create_repo("user/target")
        srv.clear_requests()
        before = peak_mb()

        def chunks():
            for _ in range(400):
                yield b"\0" * (1 << 20)

        try:
            status = httpx2.post(f"{srv.url}/api/models/user/target/commit/main", content=chunks(), timeout=60).status_code
        except httpx2.TransportError:
            status = "closed"
        rec = [r for r in srv.requests if r.path.endswith("/commit/main")][-1]
        print(f"anonymous 400 MB commit body: answer {status}/{rec.status}, server read "
              f"{rec.bytes_in / 1e6:.1f} MB, peak memory +{peak_mb() - before:.0f} MB")  # fmt: skip

        # --- README alias bomb
        levels = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
        levels += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
        readme = ("---\n" + "\n".join(levels) + "\n---\n").encode()
        line = {"key": "file", "value": {"path": "README.md", "content": base64.b64encode(readme).decode()}}
        payload = json.dumps({"key": "header", "value": {"summary": "bomb"}}) + "\n" + json.dumps(line)
        httpx2.post(f"{srv.url}/api/models/user/target/commit/main", content=payload.encode(),
                    headers={"Authorization": f"Bearer {token}"}).raise_for_status()  # fmt: skip
        r = httpx2.get(f"{srv.url}/api/models/user/target")
        print(f"README alias bomb ({len(readme)} bytes): repo info {r.status_code}, {len(r.content)} bytes")

    # --- assertions
    for label, atype, value, answer in (
        ("catastrophic regex (x+x+)+y on 5,000 x", "regex", "(x+x+)+y", "x" * 5000),
        ("json-schema loop through the answer's data", "json-schema",
         {"properties": {"a": {"$ref": "#/properties/a"}}}, '{"a": 1}'),
        ("json-schema $ref to a URL (reached by the data)", "json-schema",
         {"properties": {"a": {"$ref": "http://127.0.0.1:9/s.json"}}}, '{"a": 1}'),
    ):  # fmt: skip
        a = parse_assertion({"type": atype, "value": value}, "bench")
        started = time.monotonic()
        res = check_sync(a, answer)
        print(f"{label}: passed={res.passed} in {time.monotonic() - started:.2f}s ({res.evidence[:60]})")


if __name__ == "__main__":
    main()
