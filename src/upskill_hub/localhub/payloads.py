"""Every request body the local Hub accepts, as a typed model.

Handlers used to read bodies with ``body.get(...)`` and ``str()``/``int()`` casts, so a
header given as a list, ``size: "abc"`` or ``path: [".."]`` either crashed (500) or was
coerced into nonsense (a file literally named ``['..']``). Each body is now validated
into one of the pydantic models below, strictly (no coercion of lists into strings or
text into numbers): anything else is a 400 with the first problem named.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

from upskill_hub._util import safejson
from upskill_hub.localhub.storage import StoreError

#: Deepest JSON a request body may nest (none of the Hub's payloads nests past 4).
MAX_BODY_DEPTH = 16

NonNegInt = Annotated[StrictInt, Field(ge=0)]
Text = Annotated[StrictStr, Field(max_length=100_000)]
PathStr = Annotated[StrictStr, Field(min_length=1, max_length=1000)]


class _Body(BaseModel):
    # The real clients send fields we do not use (gitAttributes, transfers, ...): ignored, not refused.
    model_config = ConfigDict(extra="ignore", frozen=True)


class CreateRepo(_Body):
    name: Annotated[StrictStr, Field(min_length=1, max_length=96)]
    type: Literal["model", "dataset", "space", "kernel"] | None = None
    organization: Annotated[StrictStr, Field(max_length=96)] | None = None
    private: StrictBool | None = None
    visibility: Literal["public", "private"] | None = None
    sdk: Annotated[StrictStr, Field(max_length=64)] | None = None


class DeleteRepo(_Body):
    name: Annotated[StrictStr, Field(min_length=1, max_length=96)]
    type: Literal["model", "dataset", "space", "kernel"] | None = None
    organization: Annotated[StrictStr, Field(max_length=96)] | None = None


class Settings(_Body):
    # Fail closed: a visibility the server does not know is refused, never read as "public".
    private: StrictBool | None = None
    visibility: Literal["public", "private"] | None = None


class PreuploadFile(_Body):
    path: PathStr
    sample: Annotated[StrictStr, Field(max_length=4096)] = ""
    size: NonNegInt = 0


class Preupload(_Body):
    files: Annotated[list[PreuploadFile], Field(max_length=100_000)]


class LfsObject(_Body):
    oid: StrictStr
    size: NonNegInt


class LfsBatch(_Body):
    operation: Literal["upload", "download"]
    objects: Annotated[list[LfsObject], Field(max_length=100_000)] = []


class Branch(_Body):
    startingPoint: Annotated[StrictStr, Field(max_length=256)] | None = None  # noqa: N815 - the Hub's name


class Tag(_Body):
    tag: Annotated[StrictStr, Field(min_length=1, max_length=256)]
    message: Text | None = None


class PathsInfo(_Body):
    paths: Annotated[list[PathStr], Field(max_length=100_000)] | PathStr = []
    expand: StrictBool = False


class ValidateYaml(_Body):
    content: StrictStr = ""
    repoType: StrictStr | None = None  # noqa: N815 - the Hub's name


# ------------------------------------------------------------------ commit lines
class CommitHeader(_Body):
    summary: Annotated[StrictStr, Field(max_length=10_000)]
    description: Text | None = None
    parentCommit: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{40}$")] | None = None  # noqa: N815


class CommitFile(_Body):
    path: PathStr
    content: StrictStr = ""
    encoding: Literal["base64", "utf-8"] = "base64"


class CommitLfsFile(_Body):
    path: PathStr
    oid: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
    algo: Literal["sha256"] = "sha256"
    size: NonNegInt | None = None


class CommitDeleted(_Body):
    path: PathStr


COMMIT_LINE_TYPES: dict[str, type[_Body]] = {
    "header": CommitHeader,
    "file": CommitFile,
    "lfsFile": CommitLfsFile,
    "deletedFile": CommitDeleted,
    "deletedFolder": CommitDeleted,
}

M = TypeVar("M", bound=BaseModel)


def _validate(model: type[M], data: Any, what: str) -> M:
    """``data`` validated into ``model``, or a 400 naming ``what`` and the first problem."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "body"
        raise StoreError(400, f"{what}: {where}: {err.get('msg', 'invalid')}", "BadRequest") from None


def decode_json(raw: bytes, what: str = "Request body") -> Any:
    """``raw`` as JSON (UTF-8, bounded nesting), or a 400 ``StoreError``."""
    try:
        return safejson.loads(raw.decode("utf-8"), max_depth=MAX_BODY_DEPTH)
    except safejson.JSONTooDeep:
        raise StoreError(400, f"{what} nests deeper than {MAX_BODY_DEPTH} levels", "BadRequest") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise StoreError(400, f"{what} is not valid JSON", "BadRequest") from None


def parse_body(model: type[M], raw: bytes | Any) -> M:
    """Validate a JSON body (bytes, or already decoded) into ``model``; 400 with the first problem."""
    data = ({} if not raw.strip() else decode_json(raw)) if isinstance(raw, bytes | bytearray) else raw
    if not isinstance(data, dict):
        raise StoreError(400, "Request body must be a JSON object", "BadRequest")
    return _validate(model, data, f"Invalid {model.__name__} payload")


def parse_commit_lines(body: bytes) -> list[tuple[str, BaseModel]]:
    """The NDJSON commit body as ``(key, model)`` pairs, in order; 400 naming the bad line."""
    out: list[tuple[str, BaseModel]] = []
    for n, line in enumerate(body.splitlines(), 1):
        if not line.strip():
            continue
        item = decode_json(line, f"Commit payload line {n}")
        if not isinstance(item, dict) or set(item) - {"key", "value"} or "key" not in item:
            raise StoreError(400, f"Malformed commit payload at line {n}", "BadRequest")
        key = item["key"]
        model = COMMIT_LINE_TYPES.get(key) if isinstance(key, str) else None
        if model is None:
            raise StoreError(400, f"Unknown commit operation {key!r} at line {n}", "BadRequest")
        value = item.get("value")
        if not isinstance(value, dict):
            raise StoreError(400, f"Commit payload line {n}: 'value' must be an object", "BadRequest")
        out.append((key, _validate(model, value, f"Commit payload line {n} ({key})")))
    return out


# ------------------------------------------------------------------ jobs
#: Environment variable names a Job may set (POSIX shell names).
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
#: Label keys: the Hub's Kubernetes-like label names.
LABEL_KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$"
EnvValue = Annotated[StrictStr, Field(max_length=32_768)]
EnvMap = Annotated[
    dict[Annotated[StrictStr, Field(pattern=ENV_NAME_PATTERN)], EnvValue], Field(max_length=256)
]
Arg = Annotated[StrictStr, Field(max_length=32_768)]


class CreateJob(_Body):
    """``POST /api/jobs/{namespace}``: the spec ``huggingface_hub``'s ``run_job`` / ``run_uv_job`` send.

    Features the local Hub cannot honour (volumes, exposed ports, SSH, network groups,
    server-side retries) are refused by the handler with a 400 naming them, not silently dropped.
    """

    command: Annotated[list[Arg], Field(min_length=1, max_length=1024)]
    arguments: Annotated[list[Arg], Field(max_length=1024)] = []
    environment: EnvMap = {}
    secrets: EnvMap = {}
    flavor: Annotated[StrictStr, Field(max_length=64)] = "cpu-basic"
    timeoutSeconds: Annotated[StrictInt, Field(gt=0, le=7 * 24 * 3600)] | None = None  # noqa: N815
    attempts: Annotated[StrictInt, Field(ge=1, le=10)] | None = None
    labels: Annotated[
        dict[
            Annotated[StrictStr, Field(pattern=LABEL_KEY_PATTERN)],
            Annotated[StrictStr, Field(max_length=256, pattern=r"^[^\x00-\x1f\x7f]*$")],
        ],
        Field(max_length=64),
    ] = {}
    dockerImage: Annotated[StrictStr, Field(max_length=512)] | None = None  # noqa: N815
    spaceId: Annotated[StrictStr, Field(max_length=256)] | None = None  # noqa: N815
    volumes: list[Any] | None = None
    expose: dict[str, Any] | None = None
    ssh: dict[str, Any] | None = None
    network: dict[str, Any] | None = None
    resourceGroupId: StrictStr | None = None  # noqa: N815
