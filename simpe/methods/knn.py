"""``knn``: online kNN-MT, a datastore of the post-edits read at every decoding step.

Khandelwal et al. (2021), online from post-edits as in Wang et al. (2022, KoK) and Dai et
al. (2023, SK-MT). After each segment the post-edit is teacher-forced through the current
(never changed) model: each target position's decoder output state (the input of the
family's output projection, ``lm_head``; a causal LM's top-block state at the target
positions, after its prompt) becomes a key, the token that follows it the value. At every decoding step,
the states of the rows being decoded query the datastore (squared L2 distance; exact search up to
``exact_entries`` entries, an inverted file beyond unless ``index="exact"``: simpe.methods.datastore);
the ``k`` nearest entries give p_kNN(y) ∝ Σ_{entries with value y} exp(-d / T),
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

No model parameter changes; the per-user store is the datastore: keys (the output projection's
input size each; float32, or float16 with ``key_dtype: float16``, half the memory and store, the
distances still float32: simpe.methods.datastore) and int32 values, and once the search uses an
inverted file, that index (its float32 centroids, an int32 list per entry and the size it was last
trained at), so that a resumed run and a loaded store search the lists the run had. A store and a
resume state hold the keys at the run's ``key_dtype``, and one at another dtype is refused.
"""
from __future__ import annotations

import math
from typing import Any

import torch

from simpe.errors import ConfigError, ModelError
from simpe.methods.base import METHODS, Footprint, Method, RunShape, check_finite
from simpe.methods.datastore import INDEXES, KEY_DTYPES, Datastore
from simpe.model import eval_mode
from simpe.models import family_of

KEYS, VALUES = "__knn_keys__", "__knn_values__"  # state_dict entries
IVF = {"centroids": "__knn_ivf_centroids__", "lists": "__knn_ivf_lists__", "trained_at": "__knn_ivf_trained_at__"}  # and the index's


@METHODS.add("knn")
class KnnMethod(Method):
    """Online kNN-MT: interpolate the model with a datastore of the post-edits; no parameter changes."""
    store_markers = (KEYS, VALUES)

    parametric = False  # trains no tensor
    companion = True  # beside a method that trains: full+knn

    def __init__(self, k: int = 2, temperature: float = 100.0, knn_lambda: float = 1.0, distance_aware: bool = True,
                 index: str = "exact", exact_entries: int = 16384, probe_lists: int = 8, key_dtype: str = "float32") -> None:
        # index "exact" when not given: what a run configured before the inverted file existed did (its saved config
        # has no index key); the presets (adapters/knn*.yaml) choose "auto"
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"knn k must be an integer >= 1, got {k!r}")
        if not temperature > 0:
            raise ConfigError(f"knn temperature must be > 0, got {temperature}")
        if not 0.0 <= knn_lambda <= 1.0:
            raise ConfigError(f"knn knn_lambda must be in [0, 1], got {knn_lambda}")
        if index not in INDEXES:
            raise ConfigError(f"unknown knn index {index!r}; known: {', '.join(INDEXES)}")
        if key_dtype not in KEY_DTYPES:
            raise ConfigError(f"unknown knn key_dtype {key_dtype!r}; known: {', '.join(KEY_DTYPES)}")
        for name, value in (("exact_entries", exact_entries), ("probe_lists", probe_lists)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"knn {name} must be an integer >= 1, got {value!r}")
        self.k, self.temperature, self.knn_lambda, self.distance_aware = k, float(temperature), float(knn_lambda), bool(distance_aware)
        self.index, self.exact_entries, self.probe_lists, self.key_dtype = index, exact_entries, probe_lists, key_dtype
        # beside a method that trains (full+knn: simpe.methods.compose) the datastore is read while decoding only
        # (inference mode): the update's loss is the adapted model's own, as the method alone would have it
        self.decoding_only = False

    def _datastore(self, dim: int, device: Any) -> Datastore:
        return Datastore(dim, device=device, index=self.index, exact_entries=self.exact_entries, probe_lists=self.probe_lists,
                         key_dtype=self.key_dtype)

    def select(self, model):
        family = family_of(model)
        projection = family.output_projection(model)
        self.store = self._datastore(family.hidden_size(model), projection.weight.device)
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
        if self.decoding_only and not torch.is_inference_mode_enabled():
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

    def footprint(self, shape: RunShape) -> Footprint:
        """The datastore: an entry per target token of each post-edit (``Datastore.entry_bytes``); its search at each
        decoding step (``Datastore.searched``: the keys with their norms read once, a multiply-add per key value and
        row), on average over the run's segments as the store grows; and the teacher-forced pass that stores each
        post-edit. None of it before ``select`` has made the store."""
        store = self.__dict__.get("store")
        if store is None:
            return super().footprint(shape)
        read = compared = 0
        for segment in range(shape.segments):
            keys, per_row = store.searched(segment * shape.tokens_per_segment, shape.rows)
            read, compared = read + keys, compared + per_row
        key = store.dim * store.keys.element_size() + 4  # a key and its float32 norm
        return super().footprint(shape) + Footprint(
            datastore_per_token=store.entry_bytes(), segment_passes=1, search_bytes=read * key / shape.segments,
            search_macs=compared * store.dim * shape.rows / shape.segments)

    # ---- what a per-user store holds: the datastore, no parameter
    def adapted_parameters(self) -> int:
        return 0

    def store_bytes(self) -> int:
        return self.store.nbytes()

    def describe(self) -> dict[str, Any]:
        return {"trainable_tensors": 0, "datastore_entries": self.store.size, "datastore_memory_bytes": self.store.memory_bytes(),
                "datastore_lists": 0 if self.store.centroids is None else len(self.store.lists), "k": self.k,
                "temperature": self.temperature, "knn_lambda": self.knn_lambda, "distance_aware": self.distance_aware,
                "index": self.index, "key_dtype": self.key_dtype}

    def export_store(self) -> dict[str, torch.Tensor]:
        """The datastore: keys (entries, d_model) at ``key_dtype`` and values (entries,) int32, and its inverted file
        once it has one (``Datastore.index_state``), ``store_bytes()`` bytes."""
        return {name: tensor.cpu().contiguous() for name, tensor in self.state_dict().items()}

    def load_store(self, model: Any, tensors: dict[str, torch.Tensor]) -> None:
        """Install the hooks on a fresh base model and fill the datastore from the store."""
        _check_store(model, tensors, self.key_dtype)
        self.model = model
        self.select(model)
        self.load_state_dict(tensors)

    def check_state(self, state: Any) -> None:
        """A resume state is a store (``state_dict`` is what ``export_store`` writes): the store's checks, and finite keys."""
        if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
            raise ModelError(f"is not a knn datastore (a mapping of {KEYS}, {VALUES} and the index to tensors)")
        _check_store(self.model, state, self.key_dtype)
        check_finite(KEYS, state[KEYS])
        if IVF["centroids"] in state:
            check_finite(IVF["centroids"], state[IVF["centroids"]])

    def state_dict(self) -> dict[str, Any]:
        state = {KEYS: self.store.keys[: self.store.size].clone(), VALUES: self.store.values[: self.store.size].to(torch.int32)}
        return {**state, **{IVF[name]: tensor.cpu() for name, tensor in self.store.index_state().items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.store = self._datastore(self.store.dim, self.store.keys.device)
        ivf = {name: state[key] for name, key in IVF.items() if key in state}
        # the run's own index where this store searches with one; with index: exact, or no more entries than
        # exact_entries, the search is exact, and a store that kept no index is indexed afresh
        keep = self.index == "auto" and state[KEYS].size(0) > self.exact_entries
        self.store.load(state[KEYS], state[VALUES], ivf if keep else None)


def _check_store(model: Any, tensors: dict[str, torch.Tensor], key_dtype: str = "float32") -> None:
    """Refuse, in one line, a datastore that this model's knn (keys at ``key_dtype``) could not have written."""
    size = family_of(model).hidden_size(model)
    if set(tensors) - set(IVF.values()) != {KEYS, VALUES} or tensors[KEYS].dim() != 2 or tensors[KEYS].size(1) != size:
        raise ModelError(f"the store holds {sorted(tensors)} with keys of shape {tuple(tensors[KEYS].shape) if KEYS in tensors else '?'}; "
                         f"a knn store holds {KEYS} (entries, {size}) and {VALUES}, and may hold {', '.join(IVF.values())}")
    keys, values = tensors[KEYS], tensors[VALUES]
    if keys.dtype != KEY_DTYPES[key_dtype]:
        raise ModelError(f"the knn store's keys are {str(keys.dtype).removeprefix('torch.')}; this knn stores them as "
                         f"{key_dtype} (its key_dtype): was the store made with another key_dtype?")
    if values.dim() != 1 or values.numel() != keys.size(0):
        raise ModelError(f"the knn store holds {keys.size(0)} keys but {values.numel()} values (shape {tuple(values.shape)}); "
                         "each key has one value")
    if values.dtype.is_floating_point or values.dtype == torch.bool:
        raise ModelError(f"the knn store's values must be integer token ids, got {values.dtype}")
    vocab = model.get_output_embeddings().weight.size(0)
    if values.numel() and (int(values.min()) < 0 or int(values.max()) >= vocab):
        raise ModelError(f"the knn store's values hold token id {int(values.min()) if int(values.min()) < 0 else int(values.max())}, "
                         f"outside this model's {vocab} tokens")
    _check_index(tensors, keys.size(0), size)


def _check_index(tensors: dict[str, torch.Tensor], entries: int, size: int) -> None:
    """Refuse, in one line, a store whose inverted file does not fit its entries (``Datastore.index_state``)."""
    present = [key for key in IVF.values() if key in tensors]
    if not present:
        return
    if len(present) != len(IVF):
        raise ModelError(f"the knn store holds {', '.join(present)} but not {', '.join(k for k in IVF.values() if k not in present)}; "
                         "an index is all three or none")
    centroids, lists, trained_at = (tensors[IVF[name]] for name in ("centroids", "lists", "trained_at"))
    if not centroids.is_floating_point() or centroids.dim() != 2 or centroids.size(1) != size or centroids.size(0) < 1:
        raise ModelError(f"the knn store's {IVF['centroids']} has shape {tuple(centroids.shape)} ({centroids.dtype}); "
                         f"an index holds (lists, {size}) float centroids")
    if lists.dtype.is_floating_point or lists.dtype == torch.bool or lists.dim() != 1 or lists.numel() != entries:
        raise ModelError(f"the knn store's {IVF['lists']} has shape {tuple(lists.shape)} ({lists.dtype}); an index holds one "
                         f"integer list number for each of the {entries} entries")
    if entries and (int(lists.min()) < 0 or int(lists.max()) >= centroids.size(0)):
        raise ModelError(f"the knn store's {IVF['lists']} names list {int(lists.min()) if int(lists.min()) < 0 else int(lists.max())}, "
                         f"outside its {centroids.size(0)} lists")
    if trained_at.dtype.is_floating_point or trained_at.numel() != 1 or not 1 <= int(trained_at.flatten()[0]) <= entries:
        raise ModelError(f"the knn store's {IVF['trained_at']} is {trained_at.flatten().tolist()[:3]}; an index holds one integer, "
                         f"the entries it was trained on (1 to {entries})")


def _log(x: float) -> float:
    return math.log(x) if x > 0 else float("-inf")
