"""``upskill-hub models``: what each model spec resolves to (provider, endpoint, key), masked.

A gateway user's first question is "where will my calls go, and with which key?". This
answers it without making a call: the endpoint and where it came from (flag, spec,
``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` or default) and the key's variable with the
key masked.
"""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console
from upskill_hub.errors import UpskillError

#: Specs shown when none are given: the offline model, the aliases and one of each provider.
DEFAULT_SPECS = ("local", "haiku", "sonnet", "opus", "openai:gpt-4.1-mini", "hf:openai/gpt-oss-20b")

HEADERS = ["spec", "provider", "model", "endpoint", "endpoint_source", "key_env", "key", "tools"]


def tool_support(provider: str) -> str:
    """How catalog mode gives this provider its tools (``eval --mode catalog``, ``triggers``)."""
    if provider == "local":
        return "text protocol"
    return "native (tool_use)" if provider == "anthropic" else "native (function calling)"


def describe(spec: str, base_url: str | None = None, api_key: str | None = None) -> dict[str, str]:
    """One row: how ``spec`` resolves here, with the key masked (never the key itself)."""
    from upskill_hub.models.endpoints import mask_key, resolve_endpoint
    from upskill_hub.models.factory import resolve_api_key
    from upskill_hub.models.spec import parse_model_spec

    parsed = parse_model_spec(spec, base_url)
    ep = resolve_endpoint(parsed)
    if parsed.provider == "local":
        key_env, key = "-", "not needed"
    else:
        key_env = "--api-key" if api_key else (parsed.api_key_env or "-")
        try:
            found = resolve_api_key(parsed, api_key)
        except UpskillError:
            found = None
        if found:
            key = mask_key(found)
        else:
            key = "missing" if parsed.key_required else "not set (none needed)"
    return {
        "spec": spec,
        "provider": parsed.provider,
        "model": parsed.model,
        "endpoint": ep.url,
        "endpoint_source": ep.source,
        "key_env": key_env,
        "key": key,
        "tools": tool_support(parsed.provider),
    }


def register(app: typer.Typer) -> None:
    """Add ``models`` to the root app."""

    @app.command("models")
    def models_command(
        specs: list[str] = typer.Argument(None, help="Model specs to resolve (default: the common ones)."),
        base_url: str | None = typer.Option(None, "--base-url", help="Endpoint override, as for eval."),
        api_key: str | None = typer.Option(None, "--api-key", help="Key override, as for eval (shown masked)."),
        fmt: OutputFormat = format_option(),
        as_json: bool = json_option(),
    ) -> None:
        """Show where each model spec's calls go and which key they use (keys masked).

        Endpoints resolve as the SDKs do: --base-url > URL in the spec > OPENAI_BASE_URL /
        ANTHROPIC_BASE_URL > the provider's public endpoint. No call is made.

        Example: upskill-hub models local sonnet openai:gpt-4.1-mini
        """
        out = printer(fmt, as_json)
        rows = [describe(s, base_url, api_key) for s in (specs or DEFAULT_SPECS)]
        if not out.human:
            out.table(rows, HEADERS, id_key="spec")
            return
        table = Table(title="Model specs")
        for h in HEADERS:
            table.add_column(h.replace("_", " "), no_wrap=h in ("spec", "key"))
        for r in rows:
            table.add_row(*(escape(r[h]) for h in HEADERS))
        make_console().print(table)
