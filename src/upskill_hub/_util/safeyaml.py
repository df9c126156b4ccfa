"""YAML from strangers (README cards, SKILL.md frontmatter), parsed with limits.

``yaml.safe_load`` builds no objects of arbitrary classes, but it does share nodes
between aliases: a 435-byte "billion laughs" document is a small graph that becomes
hundreds of megabytes the moment anything walks it (``json.dumps``, ``str``, a template).
It also recurses once per nesting level. Here the document is composed first, its
*expanded* size (aliases counted every time they are used) and its depth are measured on
the node graph, and only a document within the limits is turned into Python objects.
"""

from __future__ import annotations

from typing import Any

import yaml

#: Largest YAML text accepted (characters).
MAX_CHARS = 1_000_000
#: Nodes the document may have once every alias is expanded.
MAX_NODES = 100_000
#: How deep mappings and sequences may nest.
MAX_DEPTH = 64


class YAMLLimitError(yaml.YAMLError):
    """The document is valid YAML but over a limit (size, depth, alias expansion)."""



class DepthLimitedLoader(yaml.SafeLoader):
    """The pure-Python safe loader, refusing to compose deeper than ``MAX_DEPTH``."""

    max_depth = MAX_DEPTH

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                raise YAMLLimitError(f"YAML nests deeper than {self.max_depth} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def expanded_size(node: yaml.Node, limit: int) -> int:
    """Nodes in ``node`` with aliases expanded; raises past ``limit`` (or on a cycle)."""
    memo: dict[int, int] = {}
    active: set[int] = set()
    aliased = False  # an alias (a node used twice) was met: only then is "alias bomb" the truth

    def size(n: yaml.Node) -> int:
        nonlocal aliased
        key = id(n)
        if key in memo:
            aliased = True
            return memo[key]
        if key in active:
            raise YAMLLimitError("YAML refers to itself (recursive alias)")
        active.add(key)
        total = 1
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                total += size(k) + size(v)
                if total > limit:
                    break
        elif isinstance(n, yaml.SequenceNode):
            for v in n.value:
                total += size(v)
                if total > limit:
                    break
        active.discard(key)
        if total > limit:
            if aliased:
                raise YAMLLimitError(f"YAML expands to more than {limit} nodes through its aliases (alias bomb?)")
            raise YAMLLimitError(f"YAML has more than {limit} nodes (keys, values and items); it is too large to read")
        memo[key] = total
        return total

    return size(node)


def load(text: str, *, max_chars: int = MAX_CHARS, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH) -> Any:
    """``yaml.safe_load(text)`` within the limits; raises :class:`YAMLLimitError` past one.

    Other parse errors are the usual ``yaml.YAMLError``, so callers catch one type.
    """
    if len(text) > max_chars:
        raise YAMLLimitError(f"YAML longer than {max_chars} characters")
    loader = DepthLimitedLoader(text)
    loader.max_depth = max_depth
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded_size(node, max_nodes)
        return loader.construct_document(node)
    except RecursionError:
        raise YAMLLimitError("YAML nests too deep") from None
    finally:
        loader.dispose()
