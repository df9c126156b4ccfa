"""Hand-written answers for the shipped ``hub-kernels`` test cases (see answers_kernel_builder).

GOOD is what the skill teaches; GENERIC is what a model without it plausibly writes: an
invented package, or the right package with a guessed repository id.
"""

import json
from pathlib import Path

_META = Path(__file__).resolve().parents[2] / "skills" / "hub-kernels" / "skill_meta.json"
_NAMES = [c["id"].removeprefix("load-") for c in json.loads(_META.read_text())["cases"]]


def _good(name: str) -> str:
    var = name.replace("-", "_")
    return f'```python\nfrom kernels import get_kernel\n\n{var} = get_kernel("kernels-community/{name}")\n```'


def _generic(name: str) -> str:
    var = name.replace("-", "_")
    if len(name) % 2:
        return f"```python\nimport {var}_kernel\n\nkernel = {var}_kernel.load_from_hub('{name}')\n```"
    return f'```python\nimport kernels\n\nkernel = kernels.get_kernel("huggingface/{name}-kernel")\n```'


GOOD: dict[str, str] = {f"load-{n}": _good(n) for n in _NAMES}
GENERIC: dict[str, str] = {f"load-{n}": _generic(n) for n in _NAMES}
