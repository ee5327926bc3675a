"""Composition: a method with modifiers (``full+replay``, ``lasso+ewc``, ``full+prefer``, ``full+knn``, ``full+tune-retrieve``),
in one place.

A preset names one method and, under ``method.modifiers``, a list of ``{name, params}``; ``build_method`` makes
the method alone when the list is empty (the object, and so the records, of every earlier run) and otherwise a
``ComposedMethod``: the method's own trainable set, step, store and state, and each modifier's hooks beside them.
The loop and the update see one ``Method``; no method knows it is composed.

A modifier is one of:

* a loss-side modifier of a parametric method (``replay``: more pairs in each update's batch; ``ewc``: a penalty on
  the loss; ``prefer``: a DPO term preferring the post-edit to the segment's MT output), its own class registered in
  ``MODIFIERS`` (``simpe/methods/replay.py``, ``simpe/methods/ewc.py``, ``simpe/methods/prefer.py``);
* a method that trains nothing persistently, run beside the parametric one (``knn``: its datastore read at every
  decoding step of the adapted model; ``tune-retrieve``: a fine-tuned copy of the adapted state for each
  translation, back to that state afterwards), wrapped by ``MethodModifier``: its hooks, state and store are the
  method's own, under the prefix ``<name>/``.

What a composed method's store and resume state hold: the method's tensors as they are, and each modifier's under
``<name>/``; a modifier's state that is part of the run but not of the per-user store (``replay``'s buffer, ``ewc``'s
Fisher) is in the resume state only.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from simpe.config.tree import UpdateConfig
from simpe.errors import ConfigError, ModelError
from simpe.methods.base import METHODS, Context, Footprint, Method, RunShape
from simpe.models import ModelFamily
from simpe.registry import Registry, check_params


class Modifier:
    """One modifier of a composed method. Every hook does nothing by default; ``attach`` is called after the
    method's own, with the method (``self.method``)."""

    name: str = ""  # set by MODIFIERS.add
    parametric_only: bool = False  # modifies the update of a method that trains tensors (replay, ewc, prefer)

    def attach(self, method: Method, model: Any, update: UpdateConfig) -> None:
        self.method, self.model, self.update = method, model, update

    def check_method(self, method_name: str) -> None:
        """Refuse, before the model loads, a method this modifier cannot modify (one line)."""
        if self.parametric_only and not METHODS.get(method_name).parametric:
            trains = [n for n in METHODS.names() if METHODS.get(n).parametric]
            raise ConfigError(f"modifier {self.name!r} changes the update of a method that trains tensors; method "
                              f"{method_name!r} trains none. Use it with one of {', '.join(trains)}")

    def check_family(self, family: ModelFamily) -> None:
        """As ``Method.check_family``."""

    def sentences_needed(self) -> list[tuple[str, int]]:
        """As ``Method.sentences_needed``."""
        return []

    def prepare(self, context: Context, resume: bool = False) -> None:
        """As ``Method.prepare``."""

    def translating(self, source: str) -> contextlib.AbstractContextManager[dict[str, Any] | None]:
        return contextlib.nullcontext()

    def update_pairs(self, pair: Any) -> list[Any]:
        return []

    def loss_term(self) -> torch.Tensor | None:
        return None

    def penalty_gradient(self, grads: dict[str, torch.Tensor]) -> float | None:
        return None

    def segment_term(self, pair: Any, hypothesis: str, logprob: torch.Tensor,
                     repetition: int) -> tuple[torch.Tensor | None, dict[str, Any]]:
        """As ``Method.segment_term``."""
        return None, {}

    def after_segment(self, pair: Any) -> None:
        pass

    # the run's state (resume) and the per-user store: name -> tensor, without the prefix
    def state_dict(self) -> dict[str, torch.Tensor]:
        return {}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        pass

    def check_state(self, state: dict[str, Any]) -> None:
        """Refuse (ModelError, one line) a state this modifier on this model could not have written."""
        if state:
            raise ModelError(f"holds {sorted(state)[:3]} for modifier {self.name!r}, which keeps no state")

    def export_store(self) -> dict[str, torch.Tensor]:
        return {}

    def load_store(self, model: Any, tensors: dict[str, torch.Tensor]) -> None:
        if tensors:
            raise ModelError(f"the store holds {sorted(tensors)[:3]} for modifier {self.name!r}, whose store is empty")

    def adapted_parameters(self) -> int:
        return 0

    def describe(self) -> dict[str, Any]:
        return {}

    def adapts(self) -> bool:
        return False

    def footprint(self, method: Method, shape: RunShape) -> Footprint:
        """What this modifier holds and does beside ``method`` (attached or not), as ``Method.footprint``: nothing by
        default."""
        return Footprint()


MODIFIERS: Registry[Modifier] = Registry("modifier")
"""Modifiers of a method (``method.modifiers``): replay, ewc, prefer, and the methods knn and tune-retrieve beside another."""

def companions() -> list[str]:
    """The methods that train nothing persistently and run beside a parametric one (``Method.companion``)."""
    return [name for name in METHODS.names() if METHODS.get(name).companion]


class MethodModifier(Modifier):
    """A method that trains nothing persistently (``Method.companion``) beside the composed method: its hooks, its state
    and its store are its own."""

    def __init__(self, companion: Method) -> None:
        self.companion = companion
        self.name = companion.name
        if hasattr(companion, "decoding_only"):  # knn: read while decoding, not in the composed method's update
            companion.decoding_only = True

    def attach(self, method: Method, model: Any, update: UpdateConfig) -> None:
        super().attach(method, model, update)
        # not Method.attach, which would freeze the composed method's trainable set: the companion trains nothing
        self.companion.model, self.companion.model_dir, self.companion.update = model, getattr(method, "model_dir", None), update
        self.companion._trainable = self.companion.select(model)
        assert not self.companion._trainable, f"{self.name} beside a method must train nothing persistently"

    def check_family(self, family: ModelFamily) -> None:
        self.companion.check_family(family)

    def sentences_needed(self) -> list[tuple[str, int]]:
        return self.companion.sentences_needed()

    def prepare(self, context: Context, resume: bool = False) -> None:
        self.companion.prepare(context, resume)

    def translating(self, source: str) -> contextlib.AbstractContextManager[dict[str, Any] | None]:
        return self.companion.translating(source)

    def after_segment(self, pair: Any) -> None:
        self.companion.after_segment(pair)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return self.companion.state_dict()

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.companion.load_state_dict(state)

    def check_state(self, state: dict[str, Any]) -> None:
        self.companion.check_state(state)

    def export_store(self) -> dict[str, torch.Tensor]:
        return self.companion.export_store()

    def load_store(self, model: Any, tensors: dict[str, torch.Tensor]) -> None:
        self.companion.load_store(model, tensors)

    def describe(self) -> dict[str, Any]:
        return self.companion.describe()

    def adapts(self) -> bool:
        return True

    def footprint(self, method: Method, shape: RunShape) -> Footprint:
        return self.companion.footprint(shape)


def _prefixed(name: str, tensors: dict[str, Any]) -> dict[str, Any]:
    return {f"{name}/{key}": value for key, value in tensors.items()}


def _split(state: dict[str, Any], names: list[str]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """A composed state or store split into the method's part and each modifier's (by the ``<name>/`` prefix)."""
    own: dict[str, Any] = {}
    parts: dict[str, dict[str, Any]] = {name: {} for name in names}
    for key, value in state.items():
        head, slash, rest = str(key).partition("/")
        if slash and head in parts:
            parts[head][rest] = value
        else:
            own[key] = value
    return own, parts


class ComposedMethod(Method):
    """A method and its modifiers, seen by the loop and the update as one method (module docstring)."""

    def __init__(self, method: Method, modifiers: list[Modifier]) -> None:
        self.method, self.modifiers = method, modifiers
        self.name = method.name
        self.attached = False  # a store applied to a model (load_store) is not attached: only its companions prepare

    # ---- the method's own part
    def attach(self, model: Any, model_dir: Path | None, update: UpdateConfig) -> None:
        self.model, self.model_dir, self.update = model, model_dir, update
        self.method.attach(model, model_dir, update)
        self._trainable = self.method.trainable()
        for modifier in self.modifiers:
            modifier.attach(self.method, model, update)
        self.attached = True

    def select(self, model: Any) -> dict[str, torch.nn.Parameter]:  # attach is the method's own (above)
        return self.method.select(model)

    def step(self, grads: Any, lr: float) -> None:
        self.method.step(grads, lr)

    def changed_tensors(self, grads: Any, lr: float) -> list[str]:
        return self.method.changed_tensors(grads, lr)

    def changed_rows(self, grads: Any, lr: float) -> dict[str, torch.Tensor]:
        return self.method.changed_rows(grads, lr)

    def trainable(self) -> dict[str, torch.nn.Parameter]:
        return self.method.trainable()

    def examples(self, source: str) -> list[tuple[str, str]]:
        return self.method.examples(source)

    def check_family(self, family: ModelFamily) -> None:
        self.method.check_family(family)
        for modifier in self.modifiers:
            modifier.check_family(family)

    def adapts(self) -> bool:
        return self.method.adapts() or any(m.adapts() for m in self.modifiers)

    def sentences_needed(self) -> list[tuple[str, int]]:
        return [*self.method.sentences_needed(), *(need for m in self.modifiers for need in m.sentences_needed())]

    def can_select(self, model_dir: Path | None) -> bool:
        return self.method.can_select(model_dir)

    def footprint(self, shape: RunShape) -> Footprint:
        """The method's footprint and each modifier's, added."""
        total = self.method.footprint(shape)
        for modifier in self.modifiers:
            total = total + modifier.footprint(self.method, shape)
        return total

    # ---- the modifiers' hooks
    def prepare(self, context: Context, resume: bool = False) -> None:
        self.method.prepare(context, resume)
        for modifier in self.modifiers:
            if self.attached or isinstance(modifier, MethodModifier):
                modifier.prepare(context, resume)

    @contextlib.contextmanager
    def translating(self, source: str) -> Iterator[dict[str, Any] | None]:
        facts: dict[str, Any] = {}
        with contextlib.ExitStack() as stack:
            for part in (self.method, *self.modifiers):
                got = stack.enter_context(part.translating(source))
                if got:
                    facts.update(got)
            yield facts or None

    def update_pairs(self, pair: Any) -> list[Any]:
        return [*self.method.update_pairs(pair), *(p for m in self.modifiers for p in m.update_pairs(pair))]

    def loss_term(self) -> torch.Tensor | None:
        terms = [t for t in (self.method.loss_term(), *(m.loss_term() for m in self.modifiers)) if t is not None]
        return None if not terms else terms[0] if len(terms) == 1 else torch.stack(terms).sum()

    def penalty_gradient(self, grads: dict[str, torch.Tensor]) -> float | None:
        values = [v for v in (self.method.penalty_gradient(grads), *(m.penalty_gradient(grads) for m in self.modifiers))
                  if v is not None]
        return sum(values) if values else None

    def segment_term(self, pair: Any, hypothesis: str, logprob: torch.Tensor,
                     repetition: int) -> tuple[torch.Tensor | None, dict[str, Any]]:
        terms, facts = [], {}
        for part in (self.method, *self.modifiers):
            term, got = part.segment_term(pair, hypothesis, logprob, repetition)
            facts.update(got)
            if term is not None:
                terms.append(term)
        return (None if not terms else terms[0] if len(terms) == 1 else torch.stack(terms).sum()), facts

    def after_segment(self, pair: Any) -> None:
        self.method.after_segment(pair)
        for modifier in self.modifiers:
            modifier.after_segment(pair)

    # ---- the store and the state: the method's as they are, each modifier's under its prefix
    def adapted_parameters(self) -> int:
        return self.method.adapted_parameters() + sum(m.adapted_parameters() for m in self.modifiers)

    def export_store(self) -> dict[str, torch.Tensor]:
        out = dict(self.method.export_store())
        for modifier in self.modifiers:
            out.update(_prefixed(modifier.name, modifier.export_store()))
        return out

    def store_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.export_store().values())

    def load_store(self, model: Any, tensors: dict[str, torch.Tensor]) -> None:
        own, parts = _split(tensors, [m.name for m in self.modifiers])
        self.method.load_store(model, own)
        for modifier in self.modifiers:
            if isinstance(modifier, MethodModifier):
                modifier.companion.model = model
            modifier.load_store(model, parts[modifier.name])

    def describe(self) -> dict[str, Any]:
        facts = dict(self.method.describe())
        facts["modifiers"] = {m.name: m.describe() for m in self.modifiers}
        return facts

    def state_dict(self) -> dict[str, Any]:
        out = dict(self.method.state_dict())
        for modifier in self.modifiers:
            out.update(_prefixed(modifier.name, modifier.state_dict()))
        return out

    def load_state_dict(self, state: dict[str, Any]) -> None:
        own, parts = _split(state, [m.name for m in self.modifiers])
        self.method.load_state_dict(own)
        for modifier in self.modifiers:
            modifier.load_state_dict(parts[modifier.name])

    def check_state(self, state: Any) -> None:
        if not isinstance(state, dict):
            raise ModelError(f"is a {type(state).__name__}, not a mapping of tensors")
        own, parts = _split(state, [m.name for m in self.modifiers])
        self.method.check_state(own)
        for modifier in self.modifiers:
            try:
                modifier.check_state(parts[modifier.name])
            except ModelError as err:
                raise ModelError(f"(modifier {modifier.name!r}) {err}") from None


def composed_name(method: str, modifiers: list[dict[str, Any]]) -> str:
    """``full+replay+knn``: the method and its modifiers as the tables name them."""
    return "+".join([method, *(str(m.get("name")) for m in modifiers)])


def build_modifier(method_name: str, entry: dict[str, Any]) -> Modifier:
    """One modifier from its ``{name, params}`` (checked like a method's parameters)."""
    name, params = entry["name"], dict(entry.get("params") or {})
    if name in companions():
        modifier: Modifier = MethodModifier(METHODS.build(name, **params))
    elif name in MODIFIERS:
        modifier = MODIFIERS.build(name, **params)
    else:
        raise ConfigError(f"unknown modifier {name!r} of method {method_name!r}; known: "
                          f"{', '.join(sorted([*MODIFIERS.names(), *companions()]))}")
    modifier.check_method(method_name)
    return modifier


def build_method(name: str, params: dict[str, Any] | None = None, modifiers: list[dict[str, Any]] | None = None) -> Method:
    """The method of a preset: ``METHODS.build(name, **params)`` alone without modifiers, else it composed with them.

    Refused in one line, before any model loads: an unknown modifier or parameter, a modifier named twice, the method
    itself as its own modifier, a loss-side modifier (replay, ewc, prefer) of a method that trains nothing."""
    method = METHODS.build(name, **dict(params or {}))
    if not modifiers:
        return method
    names = [m.get("name") for m in modifiers]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"method.modifiers names {twice[0]!r} twice; a modifier is applied once")
    if name in names:
        raise ConfigError(f"method {name!r} cannot be its own modifier; known modifiers: "
                          f"{', '.join(sorted([*MODIFIERS.names(), *companions()]))}")
    return ComposedMethod(method, [build_modifier(name, entry) for entry in modifiers])


def check_modifier_params(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """A modifier's parameters checked against its constructor (``simpe list``, config checks)."""
    cls = METHODS.get(name) if name in companions() else MODIFIERS.get(name)
    return check_params(f"modifier {name!r}", cls, params)
