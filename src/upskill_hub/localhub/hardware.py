"""The Job hardware flavors the local Hub lists and accepts.

Why a table of the Hub's real flavors: code written against the local Hub (the sharded eval
launcher, ``hf jobs hardware``) must pick the same names it will use on Hugging Face Jobs,
and an unknown flavor must be refused here as it would be there. The local server runs every
Job on its own machine whatever the flavor; the flavor is recorded, not emulated.

Shapes follow ``huggingface_hub.JobHardwareInfo`` (camelCase keys, costs per minute).
"""

from __future__ import annotations

from typing import Any


def _gpu(model: str, quantity: int, vram_gb: int) -> dict[str, str]:
    return {
        "type": "gpu",
        "model": model,
        "quantity": str(quantity),
        "vram": f"{vram_gb} GB",
        "manufacturer": "Nvidia",
    }


def _flavor(
    name: str,
    pretty: str,
    cpu: int,
    ram_gb: int,
    storage_gb: int,
    usd_per_hour: float,
    accelerator: dict[str, str] | None = None,
) -> dict[str, Any]:
    micro_per_minute = round(usd_per_hour * 1_000_000 / 60)
    return {
        "name": name,
        "prettyName": pretty,
        "cpu": f"{cpu} vCPU",
        "ram": f"{ram_gb} GB",
        "ephemeralStorage": f"{storage_gb} GB",
        "accelerator": accelerator,
        "unitCostMicroUSD": micro_per_minute,
        "unitCostUSD": micro_per_minute / 1_000_000,
        "unitLabel": "minute",
    }


#: The flavors, in the Hub's order (CPU first, then GPUs by size). Prices: the Hub's list prices.
HARDWARE: tuple[dict[str, Any], ...] = (
    _flavor("cpu-basic", "CPU Basic", 2, 16, 50, 0.01),
    _flavor("cpu-upgrade", "CPU Upgrade", 8, 32, 50, 0.03),
    _flavor("cpu-performance", "CPU Performance", 32, 256, 50, 0.18),
    _flavor("cpu-xl", "CPU XL", 16, 124, 50, 1.0),
    _flavor("t4-small", "Nvidia T4 - small", 4, 15, 50, 0.40, _gpu("T4", 1, 16)),
    _flavor("t4-medium", "Nvidia T4 - medium", 8, 30, 100, 0.60, _gpu("T4", 1, 16)),
    _flavor("l4x1", "1x Nvidia L4", 8, 30, 400, 0.80, _gpu("L4", 1, 24)),
    _flavor("l4x4", "4x Nvidia L4", 48, 186, 3200, 3.80, _gpu("L4", 4, 96)),
    _flavor("l40sx1", "1x Nvidia L40S", 8, 62, 380, 1.80, _gpu("L40S", 1, 48)),
    _flavor("l40sx4", "4x Nvidia L40S", 48, 382, 3200, 8.30, _gpu("L40S", 4, 192)),
    _flavor("l40sx8", "8x Nvidia L40S", 192, 1534, 6500, 23.50, _gpu("L40S", 8, 384)),
    _flavor("a10g-small", "Nvidia A10G - small", 4, 15, 110, 1.00, _gpu("A10G", 1, 24)),
    _flavor("a10g-large", "Nvidia A10G - large", 12, 46, 200, 1.50, _gpu("A10G", 1, 24)),
    _flavor("a10g-largex2", "2x Nvidia A10G - large", 24, 92, 1000, 3.00, _gpu("A10G", 2, 48)),
    _flavor("a10g-largex4", "4x Nvidia A10G - large", 48, 184, 2000, 5.00, _gpu("A10G", 4, 96)),
    _flavor("a100-large", "Nvidia A100 - large", 12, 142, 1000, 2.50, _gpu("A100", 1, 80)),
    _flavor("a100x4", "4x Nvidia A100", 48, 568, 4000, 10.00, _gpu("A100", 4, 320)),
    _flavor("a100x8", "8x Nvidia A100", 96, 1136, 8000, 20.00, _gpu("A100", 8, 640)),
    _flavor("h200", "1x Nvidia H200", 23, 256, 3000, 5.00, _gpu("H200", 1, 141)),
    _flavor("h200x2", "2x Nvidia H200", 46, 512, 6000, 10.00, _gpu("H200", 2, 282)),
    _flavor("h200x4", "4x Nvidia H200", 92, 1024, 12000, 20.00, _gpu("H200", 4, 564)),
    _flavor("h200x8", "8x Nvidia H200", 184, 2048, 24000, 40.00, _gpu("H200", 8, 1128)),
)

FLAVOR_NAMES: frozenset[str] = frozenset(f["name"] for f in HARDWARE)


def check_flavor(name: str) -> str | None:
    """None when ``name`` is a known flavor, else the one-line reason to refuse it."""
    if name in FLAVOR_NAMES:
        return None
    shown = name if len(name) <= 64 else name[:61] + "..."
    return f"Unknown flavor {shown!r}: choose one of {', '.join(f['name'] for f in HARDWARE)}"
