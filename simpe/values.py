"""Check a value from YAML or ``--set`` against its annotated type, with one clear error.

Used for the config tree's fields (``simpe.config.tree``) and for every variant's parameters
(``simpe.registry``), so a mistyped number reads the same everywhere: the key, the value and
what was expected. YAML reads ``1e-3`` (no dot) as a string; a float field accepts such a
string when it parses as a number, and an int where a float is expected. Nothing else is
converted. An integer is bounded to 64 bits (``INT_MIN``..``INT_MAX``: what torch, numpy and the files simpe writes
take; Python's own would reach torch as an overflow traceback), and a seed to ``0``..``INT_MAX`` (``check_seed``).
Types other than bool, int, float, str, list, dict and their ``X | None`` unions (or no annotation at all) are not
checked. The YAML loader (``load_yaml``) bounds what a document may expand to, not only its aliases.
"""
from __future__ import annotations

import math
import types
import typing
from typing import Any

import yaml

from simpe.errors import ConfigError

INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # a 64-bit integer: torch.manual_seed, numpy and tensors take no more
_NAMES = {bool: "true or false", int: "an integer", float: "a finite number", str: "a string", list: "a list", dict: "a mapping"}


def _one(value: Any, kind: Any) -> tuple[bool, Any]:
    """(matches, value converted to ``kind``) for one non-union type."""
    if kind is Any or kind is object:
        return True, value
    if kind is type(None):
        return value is None, value
    origin = typing.get_origin(kind) or kind
    if origin is bool:
        return isinstance(value, bool), value
    if origin is int:
        return isinstance(value, int) and not isinstance(value, bool) and INT_MIN <= value <= INT_MAX, value
    if origin is float:
        if isinstance(value, bool):
            return False, value
        if isinstance(value, (int, float)):
            return math.isfinite(value), float(value)
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                return False, value
            return math.isfinite(number), number
        return False, value
    if origin in (str, list, dict):
        return isinstance(value, origin), value
    return True, value  # a type this module does not check


def coerce(value: Any, annotation: Any, where: str) -> Any:
    """``value`` checked against ``annotation`` (and converted where documented above).

    Args:
        value: what the YAML or the command line gave.
        annotation: the field's or parameter's type (``float``, ``int | None``, ...); None = unchecked.
        where: the key in error messages, e.g. ``update.lr`` or ``method lasso parameter penalty``.
    Raises:
        ConfigError: naming the key, the value and the expected type.
    """
    if annotation is None:
        return value
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union else (annotation,)
    for kind in options:
        ok, converted = _one(value, kind)
        if ok:
            return converted
    if isinstance(value, int) and not isinstance(value, bool) and int in [typing.get_origin(k) or k for k in options]:
        low = 0 if where.endswith("seed") else INT_MIN  # a seed's range (check_seed), named as its own check names it
        raise ConfigError(f"{where} must be an integer in [{low}, {INT_MAX}]{' (64 bits)' if low else ''}, got {value}")
    wanted = " or ".join("null" if kind is type(None) else _NAMES.get(typing.get_origin(kind) or kind, getattr(kind, "__name__", str(kind)))
                         for kind in options)
    raise ConfigError(f"{where} must be {wanted}, got {value!r}")


def check_seed(value: Any, where: str) -> int:
    """``value`` as a seed: an integer in [0, INT_MAX] (every generator simpe seeds takes it: random, torch, numpy);
    ConfigError naming ``where`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT_MAX:
        raise ConfigError(f"{where} must be an integer in [0, {INT_MAX}], got {value!r}")
    return value


MAX_YAML_ALIASES = 100  # simpe's own files use none; a few for a user's anchors, not a billion laughs
# nodes (scalars, lists, mappings) the document would hold with every alias expanded: a run's config.yaml holds about
# 200, a sweep file a few hundred; nine levels of ten aliases each stay under MAX_YAML_ALIASES and hold a billion
MAX_YAML_NODES = 100_000


def expanded_nodes(node: yaml.Node) -> int:
    """How many nodes ``node`` holds with every alias expanded (an aliased node counted each time it is used),
    counted over the node graph once (each distinct node's count is kept): linear in the text, however large the
    expansion."""
    counts: dict[int, int] = {}
    order: list[yaml.Node] = []
    stack, seen = [node], set()
    while stack:  # every distinct node, children before their parents in `order` reversed
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        order.append(current)
        if isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
        elif isinstance(current, yaml.MappingNode):
            stack.extend(part for pair in current.value for part in pair)
    for current in reversed(order):
        if isinstance(current, yaml.SequenceNode):
            children = current.value
        elif isinstance(current, yaml.MappingNode):
            children = [part for pair in current.value for part in pair]
        else:
            children = []
        counts[id(current)] = min(1 + sum(counts.get(id(child), 1) for child in children), MAX_YAML_NODES + 1)
    return counts[id(node)]


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses more than MAX_YAML_ALIASES aliases (``*name``) and a document that would
    hold more than MAX_YAML_NODES nodes with its aliases expanded. safe_load shares an aliased node rather than
    copying it, but anything that walks the result (an error message, a deepcopy, a dump into config.yaml) expands
    it: nine levels of ten aliases (90 aliases) are a billion strings."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases = getattr(self, "aliases", 0) + 1
            if self.aliases > MAX_YAML_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_YAML_ALIASES} aliases (*name); simpe's configs need none")
        return super().compose_node(parent, index)

    def compose_document(self) -> Any:
        node = super().compose_document()
        if node is not None and getattr(self, "aliases", 0) and expanded_nodes(node) > MAX_YAML_NODES:
            raise yaml.YAMLError(f"its aliases (*name) expand to more than {MAX_YAML_NODES:,} values; simpe's configs "
                                 "need none")
        return node


def load_yaml(text: str) -> Any:
    """``text`` as YAML, safely (no Python objects), with at most MAX_YAML_ALIASES aliases and MAX_YAML_NODES values
    once they are expanded; yaml.YAMLError otherwise."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
