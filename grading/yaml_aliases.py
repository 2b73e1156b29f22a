"""YAML aliases (``*name``) refused past a small expansion budget, in time linear in the file.

An alias repeats a value without copying it: nine aliases of nine aliases of ... ("a billion
laughs") make a few hundred bytes stand for billions of values, and everything that walks the
loaded data afterwards pays for every one of them. The composed node graph is measured once,
each node counted with its expansion memoised, before anything is built from it.
"""

from __future__ import annotations

import yaml

# Values that aliases may add beyond those written out. A hand-written rubric that reuses a
# few blocks stays far below; a 5-level bomb (9 aliases a level) adds ~66,000.
MAX_ALIAS_EXPANSION = 10_000


class AliasBombError(ValueError):
    """The aliases of a YAML document expand past the budget, or an alias contains itself."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def check_aliases(root: yaml.Node, budget: int = MAX_ALIAS_EXPANSION) -> None:
    """Raise ``AliasBombError`` when the values ``root`` stands for exceed the distinct nodes
    written in the file by more than ``budget``, or when a node contains itself."""
    expanded: dict[int, int] = {}  # id(node) -> values it stands for, itself included
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:  # an iterative post-order walk: no recursion limit on deep files
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            expanded[key] = 1 + sum(expanded[id(child)] for child in _children(node))
            if expanded[key] - len(expanded) > budget:
                raise AliasBombError(
                    f"its aliases (*name) repeat more than {budget:,} values; write the "
                    "repeated parts out, or use fewer aliases", node.start_mark.line + 1)
            continue
        if key in expanded:
            continue
        if key in open_nodes:
            raise AliasBombError("an alias (*name) refers to a value that contains it",
                                 node.start_mark.line + 1)
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in expanded)
