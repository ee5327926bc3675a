"""Check a value from YAML or ``--set`` against its annotated type, with one clear error.

Used for the config tree's fields (``simpe.config.tree``) and for every variant's parameters
(``simpe.registry``), so a mistyped number reads the same everywhere: the key, the value and
what was expected. YAML reads ``1e-3`` (no dot) as a string; a float field accepts such a
string when it parses as a number, and an int where a float is expected. Nothing else is
converted. Types other than bool, int, float, str, list, dict and their ``X | None`` unions
(or no annotation at all) are not checked.
"""
from __future__ import annotations

import math
import types
import typing
from typing import Any

import yaml

from simpe.errors import ConfigError

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
        return isinstance(value, int) and not isinstance(value, bool), value
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
    wanted = " or ".join("null" if kind is type(None) else _NAMES.get(typing.get_origin(kind) or kind, getattr(kind, "__name__", str(kind)))
                         for kind in options)
    raise ConfigError(f"{where} must be {wanted}, got {value!r}")


MAX_YAML_ALIASES = 100  # simpe's own files use none; a few for a user's anchors, not a billion laughs


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses more than MAX_YAML_ALIASES aliases (``*name``). safe_load shares an
    aliased node rather than copying it, but anything that walks the result (an error message, a deepcopy, a
    dump into config.yaml) expands it: nine levels of ten aliases are a billion strings."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases = getattr(self, "aliases", 0) + 1
            if self.aliases > MAX_YAML_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_YAML_ALIASES} aliases (*name); simpe's configs need none")
        return super().compose_node(parent, index)


def load_yaml(text: str) -> Any:
    """``text`` as YAML, safely (no Python objects) and with at most MAX_YAML_ALIASES aliases; yaml.YAMLError otherwise."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
