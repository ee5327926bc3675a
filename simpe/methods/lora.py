"""``lora``: low-rank adapters (Hu et al. 2022) on Marian's linear layers, through ``peft``.

``peft.inject_adapter_in_model`` adds to each targeted ``nn.Linear`` W a trainable pair
A (rank x in), B (out x rank), so that the layer computes W x + (alpha / rank) · B A x; A
starts random (peft's Kaiming init, drawn from torch's seeded generator), B at zero, so the
adapted model starts as the base model. The model object stays the same MarianMTModel
(no ``PeftModel`` wrapper), so the loop, the decoders and the shared SGD update use it as
before; the update steps only the A/B matrices, every base weight stays bit-identical.

Marian is not in peft's default target map: the targets are named explicitly, as module
name suffixes (``q_proj``, ``k_proj``, ``v_proj``, ``out_proj`` of every self- and
cross-attention block; ``fc1``, ``fc2`` of every feed-forward block). The per-user store
is the A/B matrices (float32).
"""
from __future__ import annotations

from typing import Any

from simpe.errors import ConfigError
from simpe.methods.base import METHODS, Method

MARIAN_LINEARS = ("q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2")  # the linear layers LoRA may target
ADAPTER = "default"  # peft's adapter name; parameters are named ...<target>.lora_A.default.weight


@METHODS.add("lora")
class LoraMethod(Method):
    """Low-rank adapters on the named linear layers; every base weight frozen."""

    def __init__(self, rank: int = 8, alpha: float = 16.0, targets: list | None = None) -> None:
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise ConfigError(f"lora rank must be an integer >= 1, got {rank!r}")
        if not alpha > 0:
            raise ConfigError(f"lora alpha must be > 0, got {alpha}")
        targets = list(MARIAN_LINEARS if targets is None else targets)
        unknown = [t for t in targets if t not in MARIAN_LINEARS]
        if unknown or not targets:
            raise ConfigError(f"lora targets must be a non-empty list of {', '.join(MARIAN_LINEARS)}; got {targets!r}")
        self.rank, self.alpha, self.targets = rank, float(alpha), sorted(set(targets), key=MARIAN_LINEARS.index)

    def select(self, model: Any, model_dir):
        from peft import LoraConfig, inject_adapter_in_model

        config = LoraConfig(r=self.rank, lora_alpha=self.alpha, target_modules=list(self.targets), lora_dropout=0.0,
                            bias="none", init_lora_weights=True)
        inject_adapter_in_model(config, model, adapter_name=ADAPTER)
        model.requires_grad_(False)
        return {name: p for name, p in model.named_parameters() if ".lora_A." in name or ".lora_B." in name}

    def load_store(self, model: Any, tensors: dict[str, Any]) -> None:
        """Inject the (zero-B) adapters into a fresh base model, then set them from the store."""
        self.select(model, None)
        super().load_store(model, tensors)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "rank": self.rank, "alpha": self.alpha, "targets": list(self.targets),
                "adapted_layers": len(self._trainable) // 2}
