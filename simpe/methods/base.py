"""The adaptation-method contract (``Method``), its registry (``METHODS``), and what a method declares it holds and does
(``Footprint``).

The contract is written here once, in ``Method``'s docstrings; docs/methods.md's contract block is generated from them
(``scripts/write_docs.py``). The update itself (gradients, clipping, repetitions, the undo of a bad step) is shared:
``simpe.loop.update``, and its settings reach a method through ``attach``. A method's parameters are its constructor's
keyword arguments (checked by ``METHODS.build``); ``adapters/<name>.yaml`` sets them under ``method.params``.
"""
from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch

from simpe.config.tree import UpdateConfig
from simpe.errors import ModelError
from simpe.models import ModelFamily, family_of
from simpe.registry import Registry
from simpe.storefile import INDICES_SUFFIX, ROWS_SUFFIX  # the store's keys of kept rows (simpe.storefile owns the format)

INDEX_BYTES = 4  # an int32 row index in a sparse per-user store


def base_parameters(model: Any) -> dict[str, torch.nn.Parameter]:
    """The model's own learnable parameters by name: tied tensors once (a tied embedding and output
    projection are one tensor, counted, stepped and stored once), the family's fixed ones (Marian's
    sinusoidal positions) and simpe's own additions excluded."""
    markers = family_of(model).frozen_markers
    return {name: p for name, p in model.named_parameters()
            if not any(marker in name for marker in markers) and not name.startswith("simpe_")}


def embedding_names(model: Any) -> set[str]:
    """The names (in ``base_parameters``) of the embedding matrices (row-selectable in ``lasso``, never chosen by
    ``fixed``): the family's input embeddings, per-side embeddings and output projection, tied ones once."""
    weights = {id(w) for w in family_of(model).embedding_weights(model)}
    return {name for name, p in base_parameters(model).items() if id(p) in weights}


@dataclass
class Context:
    """What the loop lends a method once the model is loaded (``Method.prepare``), for methods that need more than
    the post-edits the loop shows them: none of the methods of Simianer et al. (2019) does.

    * ``encode``: (source, reference) -> a ``Pair`` on the model's device (the family's own encoding);
    * ``sentences``: (split, n) -> at most ``n`` (source, reference) pairs of the dataset's ``split``, drawn with the
      run's seed; the loop refuses the stream, the reserved splits and the forgetting probe's sentences (``replay``'s
      training pairs, ``ewc``'s Fisher sentences);
    * ``tune``: (parameters, pairs, lr, steps) -> the update's record: ``steps`` steps of the shared update (clipping,
      SGD, the undo of a bad step) on the batch ``pairs``, changing only ``parameters`` (``tune-retrieve``). A method
      never imports ``simpe.loop.update``: this is how it reaches it;
    * ``lr``: the run's ``update.lr``;
    * ``read_pairs``: a translation memory file (tmx, tsv, or text: ``STEM.<src>`` + ``STEM.<tgt>``) -> its (source,
      target) pairs (``tune-retrieve``'s ``memory``).
    """

    encode: Callable[[str, str], Any]
    sentences: Callable[[str, int], list[tuple[str, str]]]
    tune: Callable[[dict[str, torch.nn.Parameter], list[Any], float, int], dict[str, Any]]
    lr: float
    read_pairs: Callable[[str], list[tuple[str, str]]]


class Gradients(dict):
    """The gradients of one step, name -> tensor (the trainable tensors that got one), and their clipping.

    The clipping is a factor on the step, not a rescaled gradient: a step of size ``lr`` moves tensor
    ``name`` by ``-lr * scales[name] * self[name]`` (``scales[name]`` is 1.0 when it is not clipped).
    ``norms[name]`` is the L2 norm of the clipped gradient, ``scales[name] * ||self[name]||``.
    The gradients are the step's own: it may overwrite them.
    """

    def __init__(self, grads: dict[str, torch.Tensor], scales: dict[str, float], norms: dict[str, float]) -> None:
        super().__init__(grads)
        self.scales, self.norms = scales, norms


@dataclass(frozen=True)
class RunShape:
    """What a footprint depends on besides the method: how the run holds numbers, and how long it is.

    * ``weight``: bytes of a weight at ``model.dtype`` (4, or 2 at bfloat16/float16);
    * ``masters``: whether each adapted tensor has a float32 master copy (``update.master_copies`` below float32);
    * ``rows``: the rows a decoding step computes (the beam);
    * ``segments``: the run's segments (1,000 when unbounded);
    * ``tokens_per_segment``: the target tokens of a post-edit (what a datastore stores of a segment).
    """

    weight: int
    masters: bool = False
    rows: int = 1
    segments: int = 1000
    tokens_per_segment: int = 21

    @property
    def step(self) -> int:
        """Bytes per value the update steps at: 4 on a master copy, else the weight's."""
        return 4 if self.masters else self.weight


@dataclass(frozen=True)
class Footprint:
    """What a method holds and does beyond the model's weights and the shared update's gradients and activations:
    the facts ``simpe simulate --dry-run`` counts (simpe.loop.dryrun), declared by the method itself (``Method.footprint``)
    and by each modifier (``simpe.methods.compose.Modifier.footprint``). Footprints add up (``a + b``): a composed
    method's is the sum of its parts'.

    * ``state``: bytes held through the run: the step's own buffers (plain SGD: a spare of each adapted tensor at the
      step's width, and the float32 master copies) and copies of parameters (``lasso``'s base weights, ``ewc``'s
      Fisher information and anchor θ₀);
    * ``datastore_per_token``: bytes a datastore grows by per target token of a post-edit (``knn``: a key, its norm
      and its value); the dry run multiplies it by the tokens a segment stores and the run's segments;
    * ``update_bytes``: bytes held while the update computes its loss and gradients, beside the model's activations
      (``ewc``: what its penalty keeps for its gradient, and that gradient);
    * ``update_pairs``: pairs each update repetition also steps on beside the post-edit (``replay``'s ``k``;
      ``prefer``'s MT output): the update's forward and backward passes are made for each;
    * ``penalty_bytes``: bytes a penalty reads and writes at each step for its value and its gradient
      (``penalty_gradient``: ``ewc``);
    * ``prepare_passes``: passes over one pair, forward and backward through the adapted tensors, made once before
      the first segment (``ewc``'s Fisher information, one pass a sentence);
    * ``segment_passes``: teacher-forced forward passes over one of the segment's sequences outside the update's
      repetitions (``knn``: the post-edit's keys, after its update; ``prefer`` under dropout: the reference model's
      log-probabilities of the post-edit and the MT output, before it);
    * ``search_bytes``, ``search_macs``: what a decoding step's search reads and multiplies beside the model, on
      average over the run (``knn``'s datastore, growing);
    * ``tuned_values``, ``tuning_pairs``: values fine-tuned around each translation and put back after it, and the
      pairs of the batch they are tuned on (``tune-retrieve``: every base parameter, its ``matches``): their gradients
      and a forward and backward pass over the batch, while the translation's beam is held.
    """

    state: int = 0
    datastore_per_token: int = 0
    update_bytes: int = 0
    update_pairs: int = 0
    penalty_bytes: int = 0
    prepare_passes: int = 0
    segment_passes: int = 0
    search_bytes: float = 0.0
    search_macs: float = 0.0
    tuned_values: int = 0
    tuning_pairs: int = 0

    def __add__(self, other: Footprint) -> Footprint:
        return Footprint(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


class Method(ABC):
    """One adaptation method: which tensors the online update may change, and what else it does around the loop.

    Lifecycle: ``METHODS.build(name, **params)``, ``attach(model, model_dir, update)`` (which calls ``select``),
    ``prepare(context)`` once before the first segment, then for each segment: ``translating(source)`` around its
    translation, the shared update (``simpe.loop.update``: gradients of the selected tensors, clipping, repetitions,
    ``step``, the undo of a step that leaves a weight or the loss non-finite), ``after_segment(pair)``. At the end,
    the per-user store (``export_store``); on a resume, ``state_dict`` / ``load_state_dict``.

    To write one: ``select(model)`` is required; every other member has a default that does nothing, or what plain
    SGD on dense tensors needs. A step of its own (``step``) says what it changes beforehand through the hints
    ``changed_tensors`` / ``changed_rows`` (the update copies exactly those, to undo it), and what it holds through
    ``footprint``. A method finds the model's parts through its family (``family_of(model)``: the output projection,
    the embeddings, the top layers), never by attribute names; a method never imports ``simpe.loop.update``: it reaches
    the update through ``Context``.

    Class attributes:

    * ``name``: the registered name (set by ``METHODS.add``), used in YAML, the CLI, run folders and plots;
    * ``parametric``: whether it may train tensors (True): what the modifiers ``replay``, ``ewc`` and ``prefer`` need;
    * ``companion``: whether it trains nothing persistently and can run beside a parametric method as a modifier
      (``knn``, ``tune-retrieve``: ``full+knn``; simpe.methods.compose);
    * ``store_markers``: the store tensors that tell this method's stores from others (``simpe.store.user.read_store``
      refuses a file whose tensors say one method and whose metadata names another): exact names, or a fragment
      ending in ``*`` that any name containing it matches. Empty: dense adapted parameters, which several methods
      write alike.
    """

    name: str = ""  # set by METHODS.add
    parametric: bool = True
    companion: bool = False
    store_markers: tuple[str, ...] = ()

    @classmethod
    def marks_store(cls, names: set[str]) -> bool:
        """Whether a store holding the tensors ``names`` (a modifier's, ``<name>/...``, aside) is one of this method's."""
        own = {name for name in names if "/" not in name}
        return any(name == marker or (marker.endswith("*") and marker[:-1] in name)
                   for marker in cls.store_markers for name in own)

    def attach(self, model: Any, model_dir: Path | None, update: UpdateConfig) -> None:
        """Prepare ``model`` for this method: add parameters, choose the trainable set.

        Args:
            model: the model the loop translates with and updates (any family: ``simpe.models``).
            model_dir: its folder (None for a hub model), where ``fixed`` finds its selection (``self.model_dir``).
            update: the shared update settings the loop will step with (``self.update``).
        """
        self.model, self.model_dir, self.update = model, model_dir, update
        model.requires_grad_(False)
        self._trainable = self.select(model)
        for param in self._trainable.values():
            param.requires_grad_(True)

    @abstractmethod
    def select(self, model: Any) -> dict[str, torch.nn.Parameter]:
        """The parameters the update may change (name -> parameter); a method may add its own to ``model``
        (``bias``). ``self.model_dir`` and ``self.update`` are set."""

    def step(self, grads: Gradients, lr: float) -> None:
        """One step on the tensors that got a gradient, in place: plain SGD, θ ← θ - lr·scale·g.

        A method that constrains where the weights may go (``lasso``'s proximal step and budget) overrides
        this. One that does not gets the update's own SGD step instead, fused with the clipping (the same
        arithmetic, bit for bit; ``simpe.loop.update.clip_and_step``).
        """
        trainable = self.trainable()
        for name, grad in grads.items():
            trainable[name].add_(grad, alpha=-lr * grads.scales[name])

    # ---- hints for the update's undo: what ``step`` changes (asked just before it, with the same arguments)
    def changed_tensors(self, grads: Gradients, lr: float) -> list[str]:
        """The trainable tensors ``step`` changes, whole (by default those with a gradient)."""
        return list(grads)

    def changed_rows(self, grads: Gradients, lr: float) -> dict[str, torch.Tensor]:
        """Of matrices ``step`` changes only in part (and not in ``changed_tensors``): name -> (n,) row indices."""
        return {}

    def check_family(self, family: ModelFamily) -> None:
        """Refuse, before the model loads, settings this method cannot apply to ``family`` (one line)."""

    def examples(self, source: str) -> list[tuple[str, str]]:
        """(source, post-edit) pairs the prompt for ``source`` carries as examples (in-context methods); none by default."""
        return []

    def trainable(self) -> dict[str, torch.nn.Parameter]:
        """The tensors the update may change (name -> parameter), as ``select`` chose them at ``attach``."""
        return self._trainable

    # ---- what composition (simpe.methods.compose) and the methods beside those of Simianer et al. (2019) use; the defaults do nothing
    def sentences_needed(self) -> list[tuple[str, int]]:
        """The (split, n) of every ``Context.sentences`` call ``prepare`` makes on a new run: the loop reads them
        before the model loads, so that a split the dataset lacks is refused first (``simpe.loop.run.check_runs``, ``simpe.loop.plan``)."""
        return []

    def prepare(self, context: Context, resume: bool = False) -> None:
        """Called once by the loop before the first segment, after any warm start, with what it lends (``Context``);
        on a resume (``resume``) before the checkpoint's state is loaded, so what that state holds need not be made
        again: ``ewc`` estimates its Fisher information on a new run only, and takes θ₀ on both."""

    @contextlib.contextmanager
    def translating(self, source: str) -> Iterator[dict[str, Any] | None]:
        """Around the translation of ``source`` (before its post-edit is known): ``tune-retrieve`` fine-tunes on
        the earlier post-edits most like it, and returns to the state before on leaving. Yields facts for the
        segment's record (None: nothing to record)."""
        yield None

    def update_pairs(self, pair: Any) -> list[Any]:
        """Pairs the update takes beside ``pair`` in the same batch (``replay``); none by default."""
        return []

    def loss_term(self) -> torch.Tensor | None:
        """A term the update adds to the loss it differentiates; None by default."""
        return None

    def penalty_gradient(self, grads: dict[str, torch.Tensor]) -> float | None:
        """A penalty on the weights whose gradient the method adds itself, in place, to ``grads`` (trainable tensor
        name -> the loss's gradient, float32 where the step runs on master copies) at each step, before the clipping;
        returns the penalty's value at the weights before the step, or None when the method has none (the default).
        ``ewc``: λ·Σ F·(θ − θ₀)², whose gradient 2λ·F·(θ − θ₀) is a few foreach passes, where an autograd graph over
        every trainable tensor cost more than the model's backward on the demo model."""
        return None

    def segment_term(self, pair: Any, hypothesis: str, logprob: torch.Tensor,
                     repetition: int) -> tuple[torch.Tensor | None, dict[str, Any]]:
        """A term of the loss that depends on the segment (``prefer``'s DPO term), and facts for its record; by
        default (None, {}).

        The loop's update asks for it only on a segment's own pair, whose MT output it knows (not on a warm start's
        batch or ``tune-retrieve``'s matches), and only before a step (after the perplexity check, so a pair already
        below ``update.ppl_threshold`` costs nothing more). ``pair``: the segment's pair (its post-edit the labels);
        ``hypothesis``: the MT output the post-edit corrects, detokenised; ``logprob``: log π(labels | input) under
        the model now, the sum of the post-edit's plain token log-probabilities (no label smoothing; () float32,
        its graph kept: the update's own forward pass); ``repetition``: the steps taken on the pair so far (0: the
        model is as it was before this segment's update). The facts go into the record's ``update``."""
        return None, {}

    def after_segment(self, pair: Any) -> None:
        """Called by the loop once per segment, after the update, with its (source, post-edit) pair
        (a ``simpe.model.Pair``): ``knn`` adds the post-edit to its datastore here."""

    def adapts(self) -> bool:
        """Whether what the model computes can change during a run: the method has trainable tensors, or its own
        ``after_segment`` or ``examples`` (``knn``'s datastore, ``icl``'s examples). One that cannot (``baseline``)
        gives the same ranking snapshot at every point of the stream: the loop takes it once and repeats it."""
        own = type(self)
        return own.after_segment is not Method.after_segment or own.examples is not Method.examples or bool(self._trainable)

    # ---- what the dry run counts (simpe.loop.dryrun)
    def can_select(self, model_dir: Path | None) -> bool:
        """Whether ``select`` can name its tensors for a model in ``model_dir`` (None: a hub id) from what is on disk
        before a run; by default it can. ``fixed`` cannot without its selection file, and the dry run then counts
        no adapted tensor."""
        return True

    def adapted_values(self) -> int:
        """The values the update may change: the trainable tensors' sizes, a shared tensor once; 0 before ``attach``."""
        trainable = self.__dict__.get("_trainable") or {}
        return sum(p.numel() for p in {id(p): p for p in trainable.values()}.values())

    def footprint(self, shape: RunShape) -> Footprint:
        """What this method holds and does beyond the weights and the update's gradients (``Footprint``), on the
        model it is attached to. By default, plain SGD's: the update writes each step's new values into a spare of
        each adapted tensor at the step's width (simpe.loop.undo), and under master copies keeps a float32 master of
        each (simpe.loop.masters). A method with a step of its own, copies of its own, a datastore or work of its own
        around the loop says so here."""
        adapted = self.adapted_values()
        return Footprint(state=adapted * shape.step + (adapted * 4 if shape.masters else 0))

    # ---- what a per-user store holds
    def adapted_parameters(self) -> int:
        """The number of parameter values a per-user store of this method holds."""
        return sum(p.numel() for p in self._trainable.values())

    def store_bytes(self) -> int:
        """Bytes of a compact per-user store of the adapted values (dense tensors at their dtype)."""
        return sum(p.numel() * p.element_size() for p in self._trainable.values())

    def export_store(self) -> dict[str, torch.Tensor]:
        """The per-user store: name -> CPU tensor, ``store_bytes()`` bytes of data in all.

        By default the trainable tensors, dense. A method that keeps rows of a matrix stores
        them as ``rows_entry`` does (``NAME:rows`` and ``NAME:indices``); ``load_store``
        applies either kind.
        """
        return {name: p.detach().cpu().contiguous() for name, p in self._trainable.items()}

    def load_store(self, model: Any, tensors: dict[str, torch.Tensor]) -> None:
        """Apply a store made by ``export_store`` to a freshly loaded base ``model`` (no ``attach`` needed).

        Dense entries replace the parameter of that name; ``NAME:rows`` + ``NAME:indices``
        replace those rows of ``NAME``. A method that adds parameters of its own (``bias``)
        adds them first, then calls this.
        """
        with torch.no_grad():
            for key, value in tensors.items():
                if key.endswith(INDICES_SUFFIX):
                    continue
                name = key.removesuffix(ROWS_SUFFIX)
                try:
                    param = model.get_parameter(name)
                except AttributeError:
                    raise ModelError(f"the store holds {name!r}, which this model lacks: was it made for another base model, "
                                     f"or by another method than {self.name!r}?") from None
                if key.endswith(ROWS_SUFFIX):
                    indices = _row_indices(tensors, name, param.size(0)).to(param.device)  # (rows,)
                    if value.dim() != 2 or value.size(1) != param.size(1) or value.size(0) != indices.numel():
                        raise ModelError(f"the store's rows of {name} have shape {tuple(value.shape)} for {indices.numel()} "
                                         f"indices; the model's matrix is {tuple(param.shape)}")
                    param[indices] = value.to(param.device, param.dtype)
                elif value.shape != param.shape:
                    raise ModelError(f"the store's {name} has shape {tuple(value.shape)}, the model's {tuple(param.shape)}; "
                                     "was it made for another base model?")
                else:
                    param.copy_(value.to(param.device, param.dtype))

    def describe(self) -> dict[str, Any]:
        """Facts for the run summary and log (trainable tensors, counts)."""
        return {"trainable_tensors": len(self._trainable), "trainable_parameters": sum(p.numel() for p in self._trainable.values())}

    # ---- resume
    def state_dict(self) -> dict[str, torch.Tensor]:
        """The adapted state needed to resume: the current values of the trainable parameters."""
        return {name: p.detach().clone() for name, p in self._trainable.items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore what ``state_dict`` returned (after ``check_state`` passed it): by default the trainable values."""
        with torch.no_grad():
            for name, value in state.items():
                self._trainable[name].copy_(value)

    def check_state(self, state: Any) -> None:
        """Refuse, with a ModelError of one line, a resume state that ``state_dict`` of this method on this model
        could not have written: other tensor names, shapes or dtypes, or a value that is not finite. A checkpoint
        comes from a run folder, and a run folder from anyone; ``load_state_dict`` trusts what passed this.
        A method whose state holds more than its trainable tensors checks that part and calls this for the rest."""
        expected = {name: p for name, p in self._trainable.items()}
        if not isinstance(state, dict) or set(state) != set(expected):
            got = sorted(map(str, state)) if isinstance(state, dict) else type(state).__name__
            raise ModelError(f"holds the tensors {_listing(got)}; {self.name!r} on this model resumes from "
                             f"{_listing(sorted(expected))}")
        for name, param in expected.items():
            value = state[name]
            if not isinstance(value, torch.Tensor) or value.shape != param.shape or value.dtype != param.dtype:
                described = f"{value.dtype} of shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__
                raise ModelError(f"holds {name} as {described}; the model's is {param.dtype} of shape {tuple(param.shape)}")
            check_finite(name, value)


def check_finite(name: str, value: torch.Tensor) -> None:
    """A ModelError naming ``name`` when floating tensor ``value`` holds NaN or an infinity."""
    if value.is_floating_point() and not bool(torch.isfinite(value).all()):
        bad = int((~torch.isfinite(value)).sum())
        raise ModelError(f"holds {bad} non-finite value{'s' if bad > 1 else ''} (NaN or infinity) in {name}")


def _listing(names: list[str], most: int = 4) -> str:
    """At most ``most`` names, then how many more: a state of hundreds of tensors stays one line."""
    shown = ", ".join(names[:most]) or "none"
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _row_indices(tensors: dict[str, torch.Tensor], name: str, rows: int) -> torch.Tensor:
    """The int64 row indices a store gives for ``name`` (a matrix of ``rows`` rows), checked: present, integer, 1-D,
    distinct and in range (an index out of range would write past the matrix or raise deep in torch)."""
    key = name + INDICES_SUFFIX
    if key not in tensors:
        raise ModelError(f"the store holds rows of {name} but no {key}")
    indices = tensors[key]
    if indices.dtype.is_floating_point or indices.dtype == torch.bool or indices.dim() != 1:
        raise ModelError(f"the store's {key} must be a 1-D integer tensor, got {indices.dtype} of shape {tuple(indices.shape)}")
    indices = indices.long()
    bad = indices[(indices < 0) | (indices >= rows)]
    if bad.numel():
        raise ModelError(f"the store's {key} holds row {int(bad[0])}, outside the model's {rows} rows")
    if indices.unique().numel() != indices.numel():
        raise ModelError(f"the store's {key} names a row twice")
    return indices


METHODS: Registry[Method] = Registry("method")
