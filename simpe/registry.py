"""The one ``Registry`` class: a name -> class table per family of variants.

Methods, decoders, metrics and datasets each keep one registry in their ``base.py``;
a variant registers itself with ``@REGISTRY.add("name")`` and is built by name from
config. ``simpe list`` prints them all.
"""
from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

from simpe.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps variant names to classes (or factories) of one kind."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: dict[str, Callable[..., T]] = {}

    def add(self, name: str) -> Callable[[Any], Any]:
        def wrap(cls: Any) -> Any:
            if name in self._classes:
                raise KeyError(f"{self.kind} {name!r} is registered twice")
            self._classes[name] = cls
            return cls

        return wrap

    def get(self, name: str) -> Callable[..., T]:
        if name not in self._classes:
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {', '.join(sorted(self._classes))}")
        return self._classes[name]

    def build(self, name: str, **params: Any) -> T:
        return self.get(name)(**params)

    def names(self) -> list[str]:
        return sorted(self._classes)

    def __contains__(self, name: object) -> bool:
        return name in self._classes
