"""YAML read within bounds: the config file's size, and what its aliases expand to.

An alias (``*name``) reuses an anchored node without copying it, so a 1 KB document of nested aliases
("billion laughs") stands for billions of values, and walking it (resolving ``os.environ/`` values,
hashing an entry) took 26 s of CPU. ``load_yaml`` refuses, before anything is built from it:

- a document larger than ``MAX_CONFIG_BYTES``;
- one whose nodes, counted as if every alias were written out, exceed ``MAX_EXPANDED_NODES``;
- an alias that contains itself (a recursive structure).

A config with a few anchors (``<<: *defaults`` for shared ``litellm_params``) is far below the bound.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_CONFIG_BYTES = 1024 * 1024
MAX_EXPANDED_NODES = 100_000


class YamlTooLarge(yaml.YAMLError):
    """The document is larger than the bounds (the message says which)."""


class BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that checks the composed document's expanded size before constructing it."""

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        if node is not None:
            check_expanded_size(node)
        return node


def check_expanded_size(root: yaml.Node, limit: int = MAX_EXPANDED_NODES) -> int:
    """The number of nodes ``root`` stands for with its aliases written out; ``YamlTooLarge`` past ``limit``
    or for a node that contains itself. Each distinct node is weighed once (an aliased node is shared)."""
    weight: dict[int, int] = {}
    in_progress: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            in_progress.discard(key)
            total = 1 + sum(weight[id(child)] for child in _children(node))
            if total > limit:
                raise YamlTooLarge(f"the document stands for more than {limit} values once its aliases (*name) "
                                   f"are expanded{_at(node)}; write the values out or use fewer aliases")
            weight[key] = total
            continue
        if key in weight:
            continue
        if key in in_progress:
            raise YamlTooLarge(f"an alias refers to a node that contains it{_at(node)}; a config cannot be recursive")
        in_progress.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in weight)
    return weight[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _at(node: yaml.Node) -> str:
    mark = node.start_mark
    return f" (at line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""


def load_yaml(data: bytes) -> Any:
    """The document in ``data`` (UTF-8); ``YamlTooLarge`` or another ``yaml.YAMLError`` when it cannot be used,
    ``UnicodeDecodeError`` when it is not UTF-8."""
    if len(data) > MAX_CONFIG_BYTES:
        raise YamlTooLarge(f"the file is {len(data)} bytes, more than the {MAX_CONFIG_BYTES} a config may be")
    return yaml.load(data.decode("utf-8-sig"), Loader=BoundedLoader)  # noqa: S506 - a SafeLoader subclass
