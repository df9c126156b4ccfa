"""The guarded reads and the one name policy (issue 29, classes 2 and 6)."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from upskill_hub._util import boundedread, fsutil
from upskill_hub._util.fsutil import FileRefused, read_capped, scan_tree


def test_read_capped_refuses_a_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)
    done = threading.Event()
    err: list[Exception] = []

    def read() -> None:
        try:
            read_capped(fifo)
        except FileRefused as exc:
            err.append(exc)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(10), "reading a FIFO blocked"
    assert "FIFO" in str(err[0]) and "results.jsonl" in str(err[0])


def test_read_capped_refuses_a_device_and_a_sparse_giant(tmp_path):
    with pytest.raises(FileRefused, match="character device"):
        read_capped("/dev/zero")
    big = tmp_path / "big.bin"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)  # 1 GiB, sparse: nothing is written to disk
    with pytest.raises(FileRefused, match="1.0 GB; files over 2 MB"):
        read_capped(big, 2_000_000)
    (tmp_path / "ok.txt").write_bytes(b"x" * 10)
    assert read_capped(tmp_path / "ok.txt", 10) == b"x" * 10
    with pytest.raises(FileRefused, match="is 10 bytes; files over 9 bytes"):
        read_capped(tmp_path / "ok.txt", 9)


def test_scan_tree_names_every_kind_it_refuses(tmp_path):
    root = tmp_path / "skill"
    (root / "sub").mkdir(parents=True)
    (root / "SKILL.md").write_text("x")
    (root / "sub" / "ok.md").write_text("y")
    os.mkfifo(root / "pipe")
    os.symlink("loop-b", root / "loop-a")
    os.symlink("loop-a", root / "loop-b")
    os.symlink("/etc/hostname", root / "outside")
    os.symlink("SKILL.md", root / "inside")
    os.symlink("sub", root / "dirlink")
    os.symlink("missing", root / "dangling")
    (root / "ctl\x1bname").write_text("z")
    (root / "evil\u202egpj.sh").write_text("z")
    (root / "c1\x9bname").write_text("z")
    os.mknod(root / "null", 0o600 | 0o020000, os.makedev(1, 3))  # a character device, as root
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(root / "sock"))
    os.close(os.open(os.fsencode(root) + b"/latin-\xe9.txt", os.O_CREAT | os.O_WRONLY))

    files, refused = scan_tree(root)
    assert [e.rel for e in files] == ["SKILL.md", "inside", "sub/ok.md"]
    why = {r.rel.encode("utf-8", "surrogateescape"): r.reason for r in refused}
    assert "FIFO" in why[b"pipe"]
    assert why[b"loop-a"] == why[b"loop-b"] == "symlink loop"
    assert "outside" in why[b"outside"]
    assert "folders" in why[b"dirlink"]
    assert "nothing" in why[b"dangling"]
    assert "control" in why[b"ctl\x1bname"]
    assert "control" in why["c1\x9bname".encode()]
    assert "U+202E" in why["evil\u202egpj.sh".encode()]
    assert "character device" in why[b"null"]
    assert "socket" in why[b"sock"]
    assert "UTF-8" in why[b"latin-\xe9.txt"]
    # Every refusal prints as one line with the path escaped.
    for r in refused:
        line = str(r)
        assert "\n" not in line and "\x1b" not in line and "\u202e" not in line and "\x9b" not in line
        line.encode("utf-8")  # no lone surrogates


def test_name_policy_is_shared_with_check_relpath():
    for bad in ("a\u202eb", "a\u2066b", "x\x9by", "x\x85y", "x\ny", "x\x7fy", "bad\udce9"):
        assert fsutil.name_problem(bad) is not None
        with pytest.raises(fsutil.UpskillError, match="unsafe path"):
            fsutil.check_relpath(bad)
    assert fsutil.name_problem("数据-分析/café.md") is None


def test_bounded_json_and_toml_readers(tmp_path):
    deep = tmp_path / "run.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(FileRefused, match="deeper than"):
        boundedread.read_json_file(deep)
    binary = tmp_path / "build.toml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(FileRefused, match="not UTF-8"):
        boundedread.read_toml_file(binary)
    nested = tmp_path / "nested.toml"
    nested.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(FileRefused, match="nests deeper"):
        boundedread.read_toml_file(nested)
    dotted = tmp_path / "dotted.toml"
    dotted.write_text(".".join(["k"] * 20000) + " = 1\n")
    try:
        boundedread.read_toml_file(dotted)
    except FileRefused as exc:
        assert "dotted.toml" in str(exc)
    huge = tmp_path / "huge.toml"
    huge.write_text('s = "' + "x" * 10_000_000 + '"\n')
    with pytest.raises(FileRefused, match="larger than 1000 KB"):
        boundedread.read_toml_file(huge, max_bytes=1_000_000)
    with pytest.raises(FileRefused, match="larger than 64 KB"):
        boundedread.read_toml_file(huge)


def test_an_install_marker_nested_too_deep_or_a_fifo_is_untrusted_not_a_crash(tmp_path):
    """Issue 29 class 3: `skills update` raised RecursionError on a deep .upskill-hub-install.json."""
    from upskill_hub.managed import MARKER, read_marker

    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / MARKER).write_text('{"repo": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert read_marker(folder) is None
    (folder / MARKER).unlink()
    os.mkfifo(folder / MARKER)
    assert read_marker(folder) is None  # is_file() is False for a FIFO; never opened
    (folder / MARKER).unlink()
    (folder / MARKER).write_text('{"repo": "u/r", "skill": "demo", "revision": "main"}')
    assert read_marker(folder)["repo"] == "u/r"
