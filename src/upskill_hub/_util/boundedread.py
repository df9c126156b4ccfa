"""JSON and TOML files from strangers, read within a size cap and a nesting limit.

Every config-like file we did not write ourselves (``run.json``, ``metadata.json``,
``build.toml``, install markers) goes through here: :func:`upskill_hub._util.fsutil.read_capped`
refuses FIFOs, devices and oversized files without blocking, the text must be UTF-8, JSON
nesting is measured before parsing (:mod:`upskill_hub._util.safejson`) and a TOML parser's
recursion is turned into an error. Each failure is one :class:`FileRefused` line naming the
file; a 10 MB string or a binary file costs a refusal, not a hang or a traceback.
"""

from __future__ import annotations

import json
import os
from typing import Any

from upskill_hub._util import limits, safejson
from upskill_hub._util.fsutil import FileRefused, read_capped, read_text_capped

__all__ = ["FileRefused", "read_json_file", "read_toml_text", "read_toml_file", "parse_toml_text"]


def read_json_file(path: str | os.PathLike[str], max_bytes: int | None = None) -> Any:
    """The JSON document in ``path``: capped (``UPSKILL_MAX_CONFIG_MB``), UTF-8, bounded nesting."""
    data = read_capped(path, limits.MAX_CONFIG_BYTES if max_bytes is None else max_bytes)
    try:
        return safejson.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise FileRefused(path, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    except safejson.JSONTooDeep as exc:
        raise FileRefused(path, str(exc)) from None
    except json.JSONDecodeError as exc:
        raise FileRefused(path, f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None


def parse_toml_text(text: str, path: str | os.PathLike[str] = "<toml>") -> Any:
    """``tomlkit.parse(text)``, with deep nesting and over-long text refused as :class:`FileRefused`.

    tomlkit recurses per nesting level (arrays, inline tables, dotted keys), so a hostile file
    can end in ``RecursionError``; the nesting is measured first where it can be, and any
    recursion left over becomes the same one-line refusal.
    """
    import tomlkit
    from tomlkit.exceptions import ParseError

    if len(text.encode("utf-8", "surrogatepass")) > limits.MAX_TOML_BYTES:
        raise FileRefused(
            path, f"is larger than {limits.MAX_TOML_BYTES // 1000} KB; TOML files are not read past that (UPSKILL_MAX_TOML_KB)"
        )
    if safejson.nesting_depth(text, stop_after=limits.JSON_MAX_DEPTH) > limits.JSON_MAX_DEPTH:
        raise FileRefused(path, f"nests deeper than {limits.JSON_MAX_DEPTH} levels")
    try:
        doc = tomlkit.parse(text)
        doc.unwrap()  # recurses too: a document that cannot be unwrapped is refused here
        return doc
    except RecursionError:
        raise FileRefused(path, "nests too deep to read") from None
    except ParseError as exc:
        raise FileRefused(path, f"is not valid TOML ({exc})") from None


def read_toml_text(path: str | os.PathLike[str], max_bytes: int | None = None) -> str:
    """The text of a TOML file, read with :func:`read_capped` (UTF-8; a binary file is refused)."""
    cap = limits.MAX_TOML_BYTES if max_bytes is None else max_bytes
    try:
        return read_text_capped(path, cap)
    except FileRefused as exc:
        if "files over" in exc.problem:  # say which limit, in the unit it is set in
            raise FileRefused(
                path, f"is larger than {cap / 1000:g} KB; TOML files are not read past that (UPSKILL_MAX_TOML_KB)"
            ) from None
        raise


def read_toml_file(path: str | os.PathLike[str], max_bytes: int | None = None) -> Any:
    """The parsed TOML document in ``path`` (a ``tomlkit`` document), bounded like JSON."""
    return parse_toml_text(read_toml_text(path, max_bytes), path)
