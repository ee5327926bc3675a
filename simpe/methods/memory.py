"""A memory of (source, post-edit) pairs as a store and a resume state: one 1-D uint8 tensor of its UTF-8 JSON.

What ``icl`` and ``tune-retrieve`` keep (their stores hold nothing else): ``MemoryStore`` gives both the store and
resume methods of the ``Method`` contract; each names its own tensor (``memory_key``, also its ``store_markers``) and
says how it takes pairs back (``load_state_dict``). This module owns the bytes and their check.
"""
from __future__ import annotations

import json
from typing import Any

import torch

from simpe.errors import ModelError


def encode(pairs: list[tuple[str, str]]) -> bytes:
    """The memory's bytes: the UTF-8 JSON of its pairs, in order (what ``store_bytes`` counts)."""
    return json.dumps(pairs, ensure_ascii=False).encode("utf-8")


def as_state(key: str, pairs: list[tuple[str, str]]) -> dict[str, torch.Tensor]:
    """The store and resume state of a memory: ``{key: uint8 tensor of encode(pairs)}``."""
    return {key: torch.tensor(list(encode(pairs)), dtype=torch.uint8)}


def check(state: Any, key: str, method: str) -> None:
    """Refuse (ModelError, one line) anything but ``{key: a 1-D uint8 tensor of a JSON list of string pairs}``."""
    memory = state.get(key) if isinstance(state, dict) and set(state) == {key} else None
    if not isinstance(memory, torch.Tensor) or memory.dtype != torch.uint8 or memory.dim() != 1:
        raise ModelError(f"is not {'an' if method[0] in 'aeiou' else 'a'} {method} memory (one 1-D uint8 tensor {key})")
    try:
        pairs = json.loads(bytes(memory.tolist()).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ModelError(f"holds a {key} that is not UTF-8 JSON") from None
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p)
                                              for p in pairs):
        raise ModelError(f"holds a {key} that is not a list of (source, post-edit) pairs of strings")


def pairs_of(state: dict[str, Any], key: str) -> list[tuple[str, str]]:
    """The (source, post-edit) pairs of a checked state, in order."""
    return [(source, reference) for source, reference in json.loads(bytes(state[key].tolist()).decode("utf-8"))]


class MemoryStore:
    """The per-user store and resume state of a method that keeps a memory of pairs and adapts no parameter (a mixin
    before ``Method``: ``class IclMethod(MemoryStore, Method)``). ``memory`` is its list of (source, post-edit)."""

    memory_key: str = ""
    memory: list[tuple[str, str]]

    def adapted_parameters(self) -> int:
        return 0

    def store_bytes(self) -> int:
        return len(encode(self.memory))

    def export_store(self) -> dict[str, torch.Tensor]:
        """The memory: one uint8 tensor of its UTF-8 JSON, ``store_bytes()`` bytes."""
        return self.state_dict()

    def load_store(self, model: Any, tensors: dict[str, torch.Tensor]) -> None:
        try:
            self.check_state(tensors)
        except ModelError as err:  # one line naming what was read: "the store is not an icl memory (...)"
            raise ModelError(f"the store {err}") from None
        self.model = model
        self.select(model)  # type: ignore[attr-defined]  (Method's)
        self.load_state_dict(tensors)  # type: ignore[attr-defined]  (the method's own)

    def state_dict(self) -> dict[str, Any]:
        return as_state(self.memory_key, self.memory)

    def check_state(self, state: Any) -> None:
        """A resume state is a store: the memory."""
        check(state, self.memory_key, self.name)  # type: ignore[attr-defined]  (set by METHODS.add)
