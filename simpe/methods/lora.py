"""``lora``: low-rank adapters (Hu et al. 2022) on the model's linear layers, through ``peft``.

``peft.inject_adapter_in_model`` adds to each targeted ``nn.Linear`` W a trainable pair
A (rank x in), B (out x rank), so that the layer computes W x + (alpha / rank) · B A x; A
starts random (peft's Kaiming init, drawn from torch's seeded generator), B at zero, so the
adapted model starts as the base model. The model object stays the same transformers model
(no ``PeftModel`` wrapper), so the loop, the decoders and the shared SGD update use it as
before; the update steps only the A/B matrices, every base weight stays bit-identical.

The targets are module-name suffixes from the model's family (``simpe.models``:
``lora_targets``), all of them by default: Marian, mBART and M2M100/NLLB ``q_proj``,
``k_proj``, ``v_proj``, ``out_proj`` (every self- and cross-attention block), ``fc1``,
``fc2``; T5 ``q``, ``k``, ``v``, ``o``, ``wi``/``wi_0``/``wi_1``, ``wo``; Llama/Qwen2-style
causal LMs ``q_proj``, ``k_proj``, ``v_proj``, ``o_proj``, ``gate_proj``, ``up_proj``,
``down_proj``. ``targets`` names a subset, checked against the family before the model
loads. The per-user store is the A/B matrices (float32).
"""
from __future__ import annotations

from typing import Any

from simpe.errors import ConfigError
from simpe.methods.base import METHODS, Method
from simpe.models import ModelFamily, family_of

ADAPTER = "default"  # peft's adapter name; parameters are named ...<target>.lora_A.default.weight


@METHODS.add("lora")
class LoraMethod(Method):
    """Low-rank adapters on the named linear layers; every base weight frozen."""
    store_markers = (".lora_*",)  # peft's ...<target>.lora_A.default.weight

    def __init__(self, rank: int = 8, alpha: float = 16.0, targets: list | None = None) -> None:
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise ConfigError(f"lora rank must be an integer >= 1, got {rank!r}")
        if not alpha > 0:
            raise ConfigError(f"lora alpha must be > 0, got {alpha}")
        if targets is not None and (not targets or not all(isinstance(t, str) for t in targets)):
            raise ConfigError(f"lora targets must be null (the model family's linear layers) or a non-empty list of names; got {targets!r}")
        self.rank, self.alpha, self.given = rank, float(alpha), None if targets is None else list(targets)
        self.targets: list[str] = []

    def check_family(self, family: ModelFamily) -> None:
        """The targets: the family's linear layers, or the given subset of them (refused otherwise)."""
        known = family.lora_targets
        targets = list(known if self.given is None else self.given)
        unknown = [t for t in targets if t not in known]
        if unknown:
            raise ConfigError(f"lora targets must be a non-empty list of {', '.join(known)} (the {family.name} family's "
                              f"linear layers); got {targets!r}")
        self.targets = sorted(set(targets), key=known.index)

    def select(self, model: Any):
        from peft import LoraConfig, inject_adapter_in_model

        self.check_family(family_of(model))
        config = LoraConfig(r=self.rank, lora_alpha=self.alpha, target_modules=list(self.targets), lora_dropout=0.0,
                            bias="none", init_lora_weights=True)
        inject_adapter_in_model(config, model, adapter_name=ADAPTER)
        model.requires_grad_(False)
        return {name: p for name, p in model.named_parameters() if ".lora_A." in name or ".lora_B." in name}

    def load_store(self, model: Any, tensors: dict[str, Any]) -> None:
        """Inject the (zero-B) adapters into a fresh base model, then set them from the store."""
        self.select(model)
        super().load_store(model, tensors)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "rank": self.rank, "alpha": self.alpha, "targets": list(self.targets),
                "adapted_layers": len(self._trainable) // 2}
