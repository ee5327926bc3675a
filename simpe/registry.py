"""The one ``Registry`` class: a name -> class table per family of variants.

Methods, decoders, metrics and datasets each keep one registry in their ``base.py``; a
variant registers itself with ``@REGISTRY.add("name")`` and is built by name from config
with ``build``, which checks every parameter before the constructor runs: an unknown key is
named with the known ones, a missing required one is named, and each value is checked
against the constructor's annotation (``simpe.values``). A variant's parameters are its
constructor's keyword arguments with their defaults: that signature is the variant's config.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from typing import Any, Callable, Generic, TypeVar

from simpe.errors import ConfigError
from simpe.values import coerce

T = TypeVar("T")


def parameters(cls: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """The keyword parameters a variant's constructor accepts, by name, in order."""
    accepted = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {name: p for name, p in inspect.signature(cls).parameters.items() if p.kind in accepted}


def check_params(what: str, cls: Callable[..., Any], params: dict[str, Any]) -> dict[str, Any]:
    """``params`` checked against ``cls``'s constructor: known names, required ones present, types.

    Args:
        what: the variant in error messages, e.g. ``method 'lasso'``.
    Returns:
        the parameters, numbers converted as ``simpe.values.coerce`` does.
    """
    known = parameters(cls)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ConfigError(f"unknown parameter {unknown[0]!r} of {what}; known: {', '.join(known) or '(none)'}")
    missing = [name for name, p in known.items() if p.default is inspect.Parameter.empty and name not in params]
    if missing:
        raise ConfigError(f"{what} needs parameter {missing[0]!r}; known: {', '.join(known)}")
    init = cls.__init__ if inspect.isclass(cls) else cls
    try:
        hints = typing.get_type_hints(init)
    except Exception:  # an annotation that does not evaluate: leave the values unchecked
        hints = {}
    return {name: coerce(value, hints.get(name), f"{what} parameter {name}") for name, value in params.items()}


def import_all(package: str, path: list[str]) -> None:
    """Import every module of a family's package, so each variant file registers itself.

    A family's ``__init__.py`` calls ``import_all(__name__, __path__)``: adding a variant is
    adding one file, with no list of modules to keep up to date.
    """
    for module in sorted(info.name for info in pkgutil.iter_modules(path)):
        importlib.import_module(f"{package}.{module}")


class Registry(Generic[T]):
    """Maps variant names to classes (or factories) of one kind."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: dict[str, Callable[..., T]] = {}

    def add(self, name: str) -> Callable[[Any], Any]:
        """Class decorator: register the class under ``name`` (also set as its ``name`` attribute)."""
        def wrap(cls: Any) -> Any:
            if name in self._classes:
                raise KeyError(f"{self.kind} {name!r} is registered twice")
            self._classes[name] = cls
            cls.name = name
            return cls

        return wrap

    def get(self, name: str) -> Callable[..., T]:
        """The class registered as ``name``; ConfigError naming the known ones otherwise."""
        if name not in self._classes:
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {', '.join(sorted(self._classes))}")
        return self._classes[name]

    def check(self, name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Check ``params`` for variant ``name`` without building it; return them converted."""
        return check_params(f"{self.kind} {name!r}", self.get(name), dict(params or {}))

    def resolve(self, name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """``params`` checked and completed with the constructor's defaults: every parameter of variant ``name``."""
        given = self.check(name, params)
        return {key: given.get(key, p.default) for key, p in parameters(self.get(name)).items()}

    def build(self, name: str, **params: Any) -> T:
        """Build variant ``name`` from checked ``params``."""
        return self.get(name)(**self.check(name, params))

    def names(self) -> list[str]:
        return sorted(self._classes)

    def __contains__(self, name: object) -> bool:
        return name in self._classes
