"""On-disk response cache shared by every run and output folder.

Re-running an identical eval must cost no model calls. A response is stored under a key
made of everything that determines it: provider, endpoint, model, system prompt, messages,
generation parameters and the repeat index (so repeat 2 is never served repeat 1's answer:
each repeat stays an independent sample). Only successful completions are stored; errors
never are, so a retry after a rate limit really calls the model again.

Layout: ``<cache_dir>/<k[:2]>/<k>.json``, one small JSON file per response, written to a
temporary name and renamed into place, so concurrent runs and a killed process can never
leave a half-written entry that is later read as valid (a corrupt file is just a miss).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

from upskill_hub._util.fsutil import write_json_atomic
from upskill_hub.models.base import Completion, GenerationParams, Message, ToolCall, ToolSpec, Usage

CACHE_ENV = "UPSKILL_HUB_CACHE"
#: Bump when the key or entry format changes, so old entries are not misread.
CACHE_FORMAT = 1


def default_cache_dir() -> Path:
    """``$UPSKILL_HUB_CACHE`` or the platform's user cache dir + ``/responses``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("upskill-hub")) / "responses"


def cache_key(
    *,
    provider: str,
    endpoint: str,
    model: str,
    system: str,
    messages: list[Message],
    params: GenerationParams | dict,
    repeat: int,
    tools: list[ToolSpec] | None = None,
) -> str:
    """SHA-256 over a canonical JSON of everything that determines the response.

    ``params`` may be given already as ``GenerationParams.to_dict()`` (the runner computes
    it once per run instead of once per call). ``tools`` and the tool turns of the
    conversation are part of the key; calls without them keep the keys they always had.
    """
    payload = {
        "format": CACHE_FORMAT,
        "provider": provider,
        "endpoint": endpoint.rstrip("/"),
        "model": model,
        "system": system,
        "messages": [m.key_parts() for m in messages],
        "params": params if isinstance(params, dict) else params.to_dict(),
        "repeat": repeat,
    }
    if tools:
        payload["tools"] = [t.to_dict() for t in tools]
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Successful completions by key; safe for concurrent readers and writers."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._root = str(self.root)

    def _path(self, key: str) -> Path:
        return Path(os.path.join(self._root, key[:2], key + ".json"))

    def get(self, key: str) -> Completion | None:
        try:
            with open(os.path.join(self._root, key[:2], key + ".json"), encoding="utf-8") as fh:
                data = json.load(fh)
            if data.get("format") != CACHE_FORMAT:
                return None
            return Completion(
                text=data["text"],
                usage=Usage(**data["usage"]),
                latency_s=float(data["latency_s"]),
                finish_reason=data.get("finish_reason"),
                model=data.get("model"),
                tool_calls=tuple(ToolCall(**c) for c in data.get("tool_calls") or ()),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, comp: Completion) -> None:
        """Store ``comp`` atomically (temp file + rename); failures to cache are not fatal."""
        path = self._path(key)
        data = {
            "format": CACHE_FORMAT,
            "text": comp.text,
            "usage": asdict(comp.usage),
            "latency_s": comp.latency_s,
            "finish_reason": comp.finish_reason,
            "model": comp.model,
        }
        if comp.tool_calls:
            data["tool_calls"] = [c.to_dict() for c in comp.tool_calls]
        with contextlib.suppress(OSError):
            write_json_atomic(path, data, indent=None, fsync=False)
