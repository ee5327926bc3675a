"""``knn``: online kNN-MT, a datastore of the post-edits read at every decoding step.

Khandelwal et al. (2021), online from post-edits as in Wang et al. (2022, KoK) and Dai et
al. (2023, SK-MT). After each segment the post-edit is teacher-forced through the current
(never changed) model: each target position's decoder output state (the input of the
family's output projection, ``lm_head``; a causal LM's top-block state at the target
positions, after its prompt) becomes a key, the token that follows it the value. At every decoding step,
the states of the rows being decoded query the datastore (exact search on torch, squared L2
distance); the ``k`` nearest entries give p_kNN(y) ∝ Σ_{entries with value y} exp(-d / T),
and the next-token distribution becomes

    p(y) = λ · p_kNN(y) + (1 - λ) · p_model(y)

(the model's softmax with Marian's ``final_logits_bias`` and any other method's terms), λ
fixed (``knn_lambda``) or, with ``distance_aware`` (SK-MT's distance-aware adapter),
λ = knn_lambda · max(0, 1 - d_0 / T) per step, d_0 the nearest entry's distance: an
unrelated neighbour then barely moves the model, a near-exact match takes over. A
forward hook on the model replaces its logits with log p(y): ``log_softmax`` of that is
log p(y) again, so every decoder (beam, exact top-k, sampling, MBR, greedy) and the update's
loss see the interpolated distribution without a change to their code, and the exact top-k
search stays exact (log p(y) <= 0 still). With an empty datastore the model is untouched.
With λ = 1, tokens no entry retrieves get probability 0 (log -inf).

No model parameter changes; the per-user store is the datastore: float32 keys (the output
projection's input size each) and int32 values.
"""
from __future__ import annotations

import math
from typing import Any

import torch

from simpe.errors import ConfigError, ModelError
from simpe.methods.base import INDEX_BYTES, METHODS, Method
from simpe.model import eval_mode
from simpe.models import family_of
from simpe.ties import smallest_per_row

KEYS, VALUES = "__knn_keys__", "__knn_values__"  # state_dict entries


class Datastore:
    """Growing (key, value) store with exact k-nearest-neighbour search by squared L2 distance."""

    def __init__(self, dim: int, device: Any = "cpu") -> None:
        self.dim = dim
        self.keys = torch.zeros((0, dim), dtype=torch.float32, device=device)  # (capacity, dim)
        self.values = torch.zeros(0, dtype=torch.long, device=device)  # (capacity,) int64, as gather/scatter take them
        self.norms = torch.zeros(0, dtype=torch.float32, device=device)  # (capacity,) squared key norms
        self.size = 0

    def add(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Append ``keys`` (n, dim) and their ``values`` (n,) (capacity doubles as it fills)."""
        n = int(keys.shape[0])
        if self.size + n > self.keys.shape[0]:
            capacity = max(2 * self.keys.shape[0], self.size + n, 256)
            grown = torch.zeros((capacity, self.dim), dtype=torch.float32, device=self.keys.device)  # (capacity, dim)
            grown[: self.size] = self.keys[: self.size]
            grown_values = torch.zeros(capacity, dtype=torch.long, device=self.keys.device)  # (capacity,)
            grown_values[: self.size] = self.values[: self.size]
            grown_norms = torch.zeros(capacity, dtype=torch.float32, device=self.keys.device)  # (capacity,)
            grown_norms[: self.size] = self.norms[: self.size]
            self.keys, self.values, self.norms = grown, grown_values, grown_norms
        keys = keys.detach().to(self.keys.device, torch.float32)
        self.keys[self.size: self.size + n] = keys
        self.values[self.size: self.size + n] = values.to(self.keys.device, torch.long)
        self.norms[self.size: self.size + n] = (keys * keys).sum(dim=1)
        self.size += n

    def search(self, queries: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The ``min(k, size)`` nearest entries of each query.

        Args:
            queries: (rows, dim) float32.
        Returns:
            squared distances (rows, k'), and their values (rows, k') as int64: the nearest entries;
            of entries tied at the k-th distance, the most recent.
        """
        keys, norms = self.keys[: self.size], self.norms[: self.size]  # (n, dim), (n,)
        # ||q - key||² = ||q||² + (||key||² - 2 q·key): rank by the part that varies over keys (one fused
        # pass over the store), then add ||q||² to the k nearest only. The product is taken as
        # keys · queriesᵀ, (n, rows), read here as its (rows, n) transpose: with few query rows, the
        # store in its own row-major layout is streamed once (1.5× with 1 thread, 2.8× with 2, faster than
        # queries · keysᵀ at 25k entries on an AMD EPYC with MKL; the search reads the whole store at
        # every decoding step)
        partial = torch.addmm(norms[:, None], keys, queries.T, alpha=-2.0).T  # (rows, n)
        squares = (queries * queries).sum(dim=1, keepdim=True)  # (rows, 1)
        # entries at equal distance (to rounding noise of terms the size of ||q||² + ||key||², simpe.ties)
        # are taken the most recent first: the translator's latest post-edit of that context
        nearest, index = smallest_per_row(partial, k, magnitude=lambda index: norms[index] + squares)  # (rows, k'), (rows, k')
        nearest = nearest.add_(squares).clamp_(min=0.0)  # (rows, k')
        return nearest, torch.take(self.values, index)  # (rows, k') int64

    def nbytes(self) -> int:
        return self.size * (self.dim * 4 + INDEX_BYTES)


@METHODS.add("knn")
class KnnMethod(Method):
    """Online kNN-MT: interpolate the model with a datastore of the post-edits; no parameter changes."""

    def __init__(self, k: int = 2, temperature: float = 100.0, knn_lambda: float = 1.0, distance_aware: bool = True) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"knn k must be an integer >= 1, got {k!r}")
        if not temperature > 0:
            raise ConfigError(f"knn temperature must be > 0, got {temperature}")
        if not 0.0 <= knn_lambda <= 1.0:
            raise ConfigError(f"knn knn_lambda must be in [0, 1], got {knn_lambda}")
        self.k, self.temperature, self.knn_lambda, self.distance_aware = k, float(temperature), float(knn_lambda), bool(distance_aware)

    def select(self, model, model_dir):
        family = family_of(model)
        projection = family.output_projection(model)
        self.store = Datastore(family.hidden_size(model), device=projection.weight.device)
        self._hidden: torch.Tensor | None = None
        self._storing = False  # after_segment's own forward pass: no interpolation
        self._handles = [projection.register_forward_pre_hook(self._capture),
                         model.register_forward_hook(self._interpolate)]
        return {}

    # ---- the hooks: every forward pass of the model reads the datastore
    def _capture(self, module: Any, args: tuple[Any, ...]) -> None:
        self._hidden = args[0]  # (rows, tgt_len, d_model): the decoder output lm_head reads

    def _interpolate(self, module: Any, args: tuple[Any, ...], output: Any) -> Any:
        hidden, self._hidden = self._hidden, None
        if self.store.size == 0 or hidden is None or self.knn_lambda == 0.0 or self._storing:
            return None
        logits = output.logits  # (rows, tgt_len, vocab)
        rows, length, vocab = logits.shape
        queries = hidden.reshape(rows * length, -1).float()  # (rows * tgt_len, d_model)
        dist, values = self.store.search(queries, self.k)  # (rows * tgt_len, k'), (rows * tgt_len, k')
        weights = torch.softmax(dist * (-1.0 / self.temperature), dim=-1)  # (rows * tgt_len, k')
        # p_kNN at each retrieved token: the weights of the entries with that value (p_kNN is 0 elsewhere)
        same = (values[:, :, None] == values[:, None, :]).to(weights.dtype)  # (rows * tgt_len, k', k')
        p_knn = torch.bmm(same, weights[:, :, None]).squeeze(-1)  # (rows * tgt_len, k')
        log_model = torch.log_softmax(logits.float().reshape(rows * length, vocab), dim=-1)  # (rows * tgt_len, vocab)
        if self.distance_aware:
            lam = dist[:, :1].mul(-self.knn_lambda / self.temperature).add_(self.knn_lambda).clamp_(min=0.0)  # (rows * tgt_len, 1)
            log_keep, log_lam = torch.log1p(-lam), lam.log()  # (rows * tgt_len, 1) each
        else:
            log_keep, log_lam = _log(1.0 - self.knn_lambda), _log(self.knn_lambda)
        # log((1-λ)·p_model + λ·p_knn): p_knn is zero outside the k retrieved tokens, where the sum is the model's
        # share alone (logaddexp(a, -inf) is a, exactly); the sum is taken at those k tokens only
        mixed = log_model.add_(log_keep)  # (rows * tgt_len, vocab), log_model's own fresh tensor
        both = torch.logaddexp(mixed.gather(1, values), p_knn.log() + log_lam)  # (rows * tgt_len, k')
        mixed.scatter_(1, values, both)  # a token retrieved twice gets the same value twice
        output.logits = mixed.reshape(rows, length, vocab).to(logits.dtype)
        return output

    # ---- the datastore grows by the post-edit after each segment
    @torch.no_grad()
    def after_segment(self, pair: Any) -> None:
        labels = pair.labels  # (1, tgt_len)
        self._storing = True
        try:
            with eval_mode(self.model):  # the keys are the decoder's states without dropout, whatever mode the update left
                states = family_of(self.model).target_states(self.model, pair)  # (tgt_len, hidden)
        finally:
            self._storing = False
        self.store.add(states, labels[0])

    # ---- what a per-user store holds: the datastore, no parameter
    def adapted_parameters(self) -> int:
        return 0

    def store_bytes(self) -> int:
        return self.store.nbytes()

    def describe(self) -> dict[str, Any]:
        return {"trainable_tensors": 0, "datastore_entries": self.store.size, "k": self.k, "temperature": self.temperature,
                "knn_lambda": self.knn_lambda, "distance_aware": self.distance_aware}

    def export_store(self) -> dict[str, torch.Tensor]:
        """The datastore: keys (entries, d_model) float32 and values (entries,) int32, ``store_bytes()`` bytes."""
        return {name: tensor.cpu().contiguous() for name, tensor in self.state_dict().items()}

    def load_store(self, model: Any, tensors: dict[str, torch.Tensor]) -> None:
        """Install the hooks on a fresh base model and fill the datastore from the store."""
        size = family_of(model).hidden_size(model)
        if set(tensors) != {KEYS, VALUES} or tensors[KEYS].dim() != 2 or tensors[KEYS].size(1) != size:
            raise ModelError(f"the store holds {sorted(tensors)} with keys of shape {tuple(tensors[KEYS].shape) if KEYS in tensors else '?'}; "
                             f"a knn store holds {KEYS} (entries, {size}) and {VALUES}")
        keys, values = tensors[KEYS], tensors[VALUES]
        if values.dim() != 1 or values.numel() != keys.size(0):
            raise ModelError(f"the knn store holds {keys.size(0)} keys but {values.numel()} values (shape {tuple(values.shape)}); "
                             "each key has one value")
        if values.dtype.is_floating_point or values.dtype == torch.bool:
            raise ModelError(f"the knn store's values must be integer token ids, got {values.dtype}")
        vocab = model.get_output_embeddings().weight.size(0)
        if values.numel() and (int(values.min()) < 0 or int(values.max()) >= vocab):
            raise ModelError(f"the knn store's values hold token id {int(values.min()) if int(values.min()) < 0 else int(values.max())}, "
                             f"outside this model's {vocab} tokens")
        self.model = model
        self.select(model, None)
        self.load_state_dict(tensors)

    def state_dict(self) -> dict[str, Any]:
        return {KEYS: self.store.keys[: self.store.size].clone(), VALUES: self.store.values[: self.store.size].to(torch.int32)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.store = Datastore(self.store.dim, device=self.store.keys.device)
        self.store.add(state[KEYS], state[VALUES])


def _log(x: float) -> float:
    return math.log(x) if x > 0 else float("-inf")
