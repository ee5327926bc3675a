"""``simpe simulate --dry-run``: what each run would need, before any weight loads, and a refusal of one that cannot fit.

For the model and presets given it prints the parameters, the memory each method needs (weights, gradients, method
state, activations of the update, the runtime itself, and a datastore's growth per 1,000 segments), an estimate of
seconds per segment from a measured table, and refuses (ConfigError: one line, exit 2) a run whose memory exceeds
what the device has, naming the setting that would make it fit (bfloat16, a lighter method, checkpointing).

What a method holds and does beyond the weights and the shared update is the method's own declaration, its
``footprint`` (``simpe.methods.base.Footprint``; a composition's is the sum of its parts': ``full+knn`` counts the
datastore, ``lasso+ewc`` the Fisher and the anchor); this module asks the method and never branches on its name.

How the figures are made (``estimate``):

* parameters and trainable parameters: the model is built from its config.json on torch's meta device (nothing is
  allocated, no weight file is read) and the method attached to it, so the counts are the method's own;
* weights P·b (b the bytes of model.dtype); gradients T·b, and T·4 more for the float32 copies of master-copy
  training (``update.master_copies`` at bfloat16/float16); method state: the footprint's ``state`` (plain SGD: the
  update's spare buffer of each adapted tensor, T·b or T·4 under master copies, plus the master copies, T·4; lasso:
  its copy of the base weights and its step's new groups; ewc: the Fisher and θ₀); a datastore: the footprint's bytes
  per token (knn: the key, its float32 norm and its int64 value) times ``ENTRIES_PER_SEGMENT`` a segment;
* a tied tensor's gradient (an embedding table that the encoder, the decoder and the output projection all read)
  arrives once per reader and is summed: (readers - 1) more tensors of its size at the peak;
* activations of the update's forward and backward for a segment of ``TOKENS`` source and target tokens: per layer and
  token ``ACTIVATION_WIDTHS`` values of the model's width and of its feed-forward width, the logits three times over
  the vocabulary in float32 (with ``update.checkpointing``: each layer's input, and one layer's activations), and what
  the footprint holds while the update runs (``update_bytes``: ewc's penalty); or, if larger, what decoding holds (a
  beam's scores over the vocabulary) with what a part tunes around the translation (``tuned_values``: tune-retrieve's
  gradients, a forward and backward pass over its ``tuning_pairs``);
* the runtime: this process's resident memory once torch and transformers are imported (measured, CPU) plus the loop's
  own (``LOOP_OVERHEAD``, from the demo model's baseline run), or the CUDA context (``CUDA_CONTEXT``);
* loading: while the weights load, one tensor is held twice (the largest: the embedding table); the peak is the larger
  of loading (weights, that tensor, the runtime) and running (everything above);
* seconds per segment (CPU, one torch thread), from the run's own segments read with the model's tokenizer (its
  source and reference lengths; a random-weight model of ``simpe.models.shapes`` writes to the decoder's length limit,
  a trained one about the reference's length) and rates measured on this project's machine (``SPEED_TABLE``):
  a decoding step reads the decoder's weights once (bytes / ``bandwidth``, plus ``step_overhead``); a
  teacher-forced forward pass reads every weight or does its multiply-adds, whichever takes longer (``macs`` per
  dtype, plus ``forward_overhead``); an update repetition costs ``forwards_per_repetition`` forward passes (the
  backward pass and the check of the loss after it), ``step_passes`` passes over the adapted tensors' bytes (the
  gradient's allocation, clipping, the step, the undo buffer) and ``tied_passes`` over the extra gradients of a tied
  tensor's readers. A trained model repeats the update as often as the
  demo model did on the stream (``repetitions``, per method); a random-weight model never reaches the perplexity
  threshold and repeats ``update.max_repeats`` times. Given only on the CPU; a method without measured rates gets none.
  The footprint's work adds to it, with the same rates (no term is fitted for it): its search (knn's datastore, on
  average over the run) reads ``search_bytes`` or does ``search_macs`` float32 multiply-adds at each decoding step,
  whichever takes longer; each of its ``update_pairs`` (replay's pairs, prefer's MT output) costs the update's forward
  and backward passes once more; its ``penalty_bytes`` (ewc: the penalty's value and gradient) pass at ``bandwidth``
  once per repetition; its ``prepare_passes`` (ewc's Fisher) cost an update repetition's
  passes each, spread over the run's segments (1,000 when unbounded); its ``segment_passes`` (knn storing the
  post-edit; prefer's reference under dropout) a teacher-forced forward pass each, counted in the update's part. A part that tunes values around each
  translation (``tuned_values``: tune-retrieve) has no rate, its steps depending on what it retrieves: no time then.

The memory estimate is checked against a measured run of the demo model (tests/integration/test_dryrun.py: within
30 %), and both memory and time against every bench-size row by ``make fit-speed`` (benchmarks/fit_speed.py).
This module loads no weights and runs nothing.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simpe.config.tree import RunConfig
from simpe.errors import ConfigError
from simpe.methods.base import Footprint, RunShape

GIB = 1024 ** 3
MIB = 1024 ** 2
TOKENS = 64  # source and target tokens of a long segment (the stream's 99th percentile is about 60 subwords)
ENTRIES_PER_SEGMENT = 21  # knn datastore entries a segment adds (target tokens of the scalc stream: docs/benchmarks.md)
ACTIVATION_WIDTHS = (14, 3)  # values kept per layer and token: 14 of the model's width, 3 of the feed-forward width
LOOP_OVERHEAD = 100 * MIB  # the loop's own data, metrics and truecaser beyond the imports (demo baseline: 590 MiB measured, 483 without it)
CUDA_CONTEXT = 600 * MIB  # the CUDA context and kernels of torch, outside its allocator (typical; not measured here)
SPEED_TABLE = Path(__file__).parents[1] / "scale_table.json"  # simpe/scale_table.json, written by make fit-speed
BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
# decoders timed with beam search's rates, and what those rates leave out
TIMED_AS_BEAM = {"constrained_beam": "the same forward passes; the constraints' host work and longer outputs not included"}
LIGHTER_PRESET = "lora"  # what a refusal suggests instead of a method that adapts more values than its adapters
# What the estimate is checked against: the peak resident memory of `simpe ARGS` run in a child process, its VmHWM,
# printed at exit (``measured_command`` / ``measured_peak``; Linux). Not wait4's ru_maxrss: Linux folds the RSS of the
# forked copy of the parent into the child's maxrss at exec, so after a long test session (pytest at 1.3 GB) every
# child measured 1,364 MiB whatever it ran; VmHWM belongs to the exec'd process's own memory map.
_PEAK_WRAPPER = ("import atexit, runpy, sys\n"
                 "atexit.register(lambda: print('VmHWM', next(l.split()[1] for l in open('/proc/self/status') "
                 "if l.startswith('VmHWM:')), file=sys.stderr))\n"
                 "sys.argv = ['simpe', *sys.argv[1:]]\n"
                 "runpy.run_module('simpe', run_name='__main__', alter_sys=True)\n")


@dataclass
class Estimate:
    """What one run would need (bytes, seconds)."""

    name: str  # the preset
    method: str
    parameters: int
    trainable: int
    weights: int
    gradients: int
    state: int
    activations: int
    runtime: int
    datastore_per_1000: int  # bytes knn's datastore grows per 1,000 segments (0 for others)
    segments: int | None
    seconds_per_segment: float | None
    loading: int = 0  # the tensor held twice while the weights load
    translate_seconds: float | None = None  # the parts of seconds_per_segment
    update_seconds: float | None = None
    time_facts: TimeFacts | None = field(default=None, repr=False)  # what the seconds were computed from (fit_speed)

    @property
    def running(self) -> int:
        """Bytes while running: everything at once, knn's datastore at the end of the run's segments (1,000 when
        unbounded)."""
        grown = self.datastore_per_1000 * (self.segments or 1000) // 1000
        return self.weights + self.gradients + self.state + self.activations + self.runtime + grown

    @property
    def peak(self) -> int:
        """Peak bytes: the larger of loading the weights and running."""
        return max(self.running, self.weights + self.loading + self.runtime)


def _meta_model(cfg: RunConfig) -> tuple[Any, Any]:
    """The model of ``cfg`` built on the meta device from its config.json, and its config."""
    import torch
    import transformers

    from simpe.model import _read_config, model_folder
    from simpe.paths import DEFAULT_MODEL

    source = str(cfg.model.path) if cfg.model.path is not None else str(DEFAULT_MODEL)
    data = _read_config(source)
    if data is None:
        raise ConfigError(f"--dry-run needs the model's config.json: {source} is a hub id not in the local cache; "
                          "download it first or pass a local folder")
    config = transformers.AutoConfig.for_model(**{k: v for k, v in data.items() if k not in ("transformers_version",)})
    auto = "AutoModelForSeq2SeqLM" if getattr(config, "is_encoder_decoder", False) else "AutoModelForCausalLM"
    from simpe.models.shapes import untie_as_configured

    with torch.device("meta"):
        model = untie_as_configured(getattr(transformers, auto).from_config(config), data.get("tie_word_embeddings") is False)
    model.simpe_folder = model_folder(source)
    return model, config


def _unique(params: Any) -> list[Any]:
    return list({id(p): p for p in params}.values())


def _readers(model: Any) -> dict[int, int]:
    """How often a forward pass reads each embedding tensor (id -> readers): the encoder's and the decoder's input
    embeddings and the output projection; a tensor tied across them is read by each, and its gradient summed."""
    from simpe.models import family_of

    sides = [model.get_encoder(), model.get_decoder()] if model.config.is_encoder_decoder else [model]
    counts: dict[int, int] = {}
    for weight in [side.get_input_embeddings().weight for side in sides] + [family_of(model).output_projection(model).weight]:
        counts[id(weight)] = counts.get(id(weight), 0) + 1
    return counts


@dataclass
class _Sizes:
    """Parameters the time model reads: the encoder's, the decoder's with the output projection (embedding tables
    left out: a forward pass selects rows of them), the output projection's alone; and every weight's bytes."""

    encoder: int
    decoder: int  # with the output projection: what a decoding step multiplies
    projection: int
    bytes: int


def _sizes(model: Any, b: int) -> _Sizes:
    from simpe.methods.base import base_parameters, embedding_names
    from simpe.models import family_of

    params = base_parameters(model)
    embeddings = embedding_names(model)
    encoder_ids = {id(p) for p in model.get_encoder().parameters()} if model.config.is_encoder_decoder else set()
    encoder = sum(p.numel() for n, p in params.items() if n not in embeddings and id(p) in encoder_ids)
    projection = family_of(model).output_projection(model).weight.numel()
    decoder = sum(p.numel() for n, p in params.items() if n not in embeddings and id(p) not in encoder_ids) + projection
    return _Sizes(encoder, decoder, projection, sum(p.numel() for p in _unique(model.parameters())) * b)


_LENGTHS: dict[tuple[Any, ...], list[tuple[int, int]]] = {}
TOKEN_SAMPLE = 500  # segments read for the lengths (the run's first ones)


def _lengths(cfg: RunConfig, model: Any) -> list[tuple[int, int]]:
    """(source tokens, target tokens with the end token) of the run's first segments, as the model's family encodes
    them (a causal LM's source is its whole prompt). Reads the tokenizer, never the weights."""
    from simpe.loop.stream import load_stream
    from simpe.model import _load_tokenizer, model_family
    from simpe.paths import DEFAULT_MODEL

    source = str(cfg.model.path) if cfg.model.path is not None else str(DEFAULT_MODEL)
    settings = cfg.model.family_settings()
    key = (source, cfg.model.family, tuple(sorted(settings.items())), cfg.data.name, repr(cfg.data.params),
           cfg.data.split, cfg.data.skip_empty, cfg.data.segments)
    if key not in _LENGTHS:
        segments = load_stream(dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, params=dict(cfg.data.params))))[1]
        segments = segments[:TOKEN_SAMPLE]
        family = model_family(source, cfg.model.family, settings)
        tokenizer = _load_tokenizer(family, source)
        family.attach(model, tokenizer)
        _LENGTHS[key] = [(int(family.encode_source(tokenizer, s.source, "cpu")[0].shape[1]),
                          len(family.encode_target(tokenizer, s.reference)[0])) for s in segments]
    return _LENGTHS[key]


@dataclass
class TimeFacts:
    """What the time of one run depends on besides the machine's rates (``seconds``): read from the model's config,
    its tokenizer and the run's segments, never from its weights."""

    method: str
    dtype: str
    b: int  # bytes per weight
    sizes: _Sizes
    encoder_decoder: bool
    beam: int
    segments: list[tuple[int, int, int]]  # (decoding steps, source tokens, target tokens) of the run's first segments
    adapted_bytes: int  # what an update's step passes over: the adapted tensors at the step's width
    repetitions: float | None  # update repetitions per segment; None: a trained model's, the rates' per method
    tied_bytes: int = 0  # the gradients a tied adapted tensor's extra readers add (each as large as the tensor)
    update_pairs: int = 0  # pairs each update repetition takes beside the post-edit (Footprint.update_pairs)
    penalty_bytes: int = 0  # bytes a penalty passes over per step, value and gradient (Footprint.penalty_bytes)
    prepare_passes: int = 0  # forward and backward passes made once before the first segment (Footprint.prepare_passes)
    segment_passes: int = 0  # teacher-forced passes after each segment's update (Footprint.segment_passes)
    search_bytes: float = 0.0  # what a decoding step's search reads and multiplies (Footprint.search_bytes, search_macs)
    search_macs: float = 0.0
    tuned_values: int = 0  # values tuned around each translation (Footprint.tuned_values): no measured rate
    run_segments: int = 1000  # the segments a once-made pass is spread over: the run's, 1,000 when unbounded


def time_facts(cfg: RunConfig, model: Any, sizes: _Sizes, b: int, trainable: int, step_bytes: int,
               tied_bytes: int = 0, method: str | None = None, footprint: Footprint | None = None) -> TimeFacts | None:
    """The facts of a beam-search run of ``cfg`` (None for other decoders: no measured rates): ``method`` names the
    rates (default: the config's method), ``footprint`` adds the work of the method's parts. ``constrained_beam`` runs
    the one forward pass of ``beam_size`` rows per step that beam search runs, and is timed as beam search
    (``TIMED_AS_BEAM``): its host-side ranking and the longer outputs a placed term may take are not in the rates."""
    from simpe.decoders.incremental import LengthLimit
    from simpe.models.shapes import random_init

    if cfg.decoder.name not in ("beam", *TIMED_AS_BEAM):
        return None
    params = cfg.decoder.params
    limit = LengthLimit(params.get("max_len_a", 2.0), params.get("max_len_b", 10), params.get("max_len_cap", 256))
    random = model.simpe_folder is not None and random_init(model.simpe_folder) is not None
    # random weights never write the end token: they decode to the length limit, and never reach the perplexity threshold
    segments = [(limit(source) if random else min(limit(source), target), source, target) for source, target in _lengths(cfg, model)]
    repetitions = (float(cfg.update.max_repeats) if random else None) if trainable else 0.0
    work = footprint or Footprint()
    return TimeFacts(method or cfg.method.name, cfg.model.dtype, b, sizes, bool(model.config.is_encoder_decoder),
                     int(params.get("beam_size", 5) or 5), segments, step_bytes, repetitions, tied_bytes,
                     update_pairs=work.update_pairs, penalty_bytes=work.penalty_bytes, prepare_passes=work.prepare_passes,
                     run_segments=cfg.data.segments or 1000, segment_passes=work.segment_passes,
                     search_bytes=work.search_bytes, search_macs=work.search_macs, tuned_values=work.tuned_values)


def seconds(facts: TimeFacts, rates: dict[str, Any], max_repeats: int = 3) -> tuple[float, float] | None:
    """(translate, update) seconds per segment on the CPU at one thread (the module's docstring says how), or None for
    a method or dtype without measured rates. ``rates``: ``SPEED_TABLE``'s (``benchmarks/fit_speed.py`` fits them)."""
    if facts.method not in rates["forwards_per_repetition"] or facts.dtype not in rates["macs"] or not facts.segments:
        return None
    if facts.tuned_values:  # tune-retrieve's steps depend on what it retrieves: no rate says how many
        return None
    sizes, b = facts.sizes, facts.b
    bandwidth, macs = rates["bandwidth"][facts.dtype], rates["macs"][facts.dtype]
    step = rates["step_overhead"] + max(sizes.decoder * b / bandwidth, facts.beam * sizes.decoder / macs)
    if facts.search_bytes or facts.search_macs:  # a datastore's search beside the model (float32 distances)
        step += max(facts.search_bytes / bandwidth, facts.search_macs / rates["macs"]["float32"])
    reads = sizes.encoder if facts.encoder_decoder else sizes.decoder - sizes.projection  # the source's (prompt's) pass
    translate = forward = 0.0
    for steps, source, target in facts.segments:
        translate += steps * step + max(reads * b / bandwidth, source * reads / macs)
        work = source * sizes.encoder + target * sizes.decoder if facts.encoder_decoder else \
            (source + target) * (sizes.decoder - sizes.projection) + target * sizes.projection
        forward += rates["forward_overhead"] + max(sizes.bytes / bandwidth, work / macs)
    translate, forward = translate / len(facts.segments), forward / len(facts.segments)
    repetitions = facts.repetitions
    if repetitions is None:
        repetitions = min(rates["repetitions"].get(facts.method, max_repeats), max_repeats)
    traffic = max(0, facts.adapted_bytes - rates["cache"])  # adapted tensors that stay in the cache cost no passes
    per_repetition = rates["forwards_per_repetition"][facts.method]
    update = forward * (1 + facts.update_pairs) * (1 + repetitions * per_repetition) \
        + repetitions * (traffic * rates["step_passes"] + facts.tied_bytes * rates.get("tied_passes", 0.0)) / bandwidth \
        + repetitions * facts.penalty_bytes / bandwidth \
        + facts.prepare_passes * forward * per_repetition / facts.run_segments + facts.segment_passes * forward
    return translate, update


def _runtime_bytes(device: str) -> int:
    if device == "cuda":
        return CUDA_CONTEXT
    try:  # this process's resident memory (torch, transformers and simpe imported) plus the loop's own
        return LOOP_OVERHEAD + _resident()
    except (OSError, ValueError, IndexError):
        return LOOP_OVERHEAD + 500 * MIB


def _resident() -> int:
    """This process's resident bytes (Linux)."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _speed_table() -> dict[str, Any]:
    return json.loads(SPEED_TABLE.read_text(encoding="utf-8"))


def measured_command(args: list[str]) -> list[str]:
    """The command that runs ``simpe ARGS`` and prints its peak resident memory to stderr at exit (``measured_peak``)."""
    return [sys.executable, "-c", _PEAK_WRAPPER, *args]


def measured_peak(stderr: str) -> float:
    """The peak resident memory in MiB that a ``measured_command`` printed (the kernel reports kB)."""
    return int(re.findall(r"^VmHWM (\d+)$", stderr, re.M)[-1]) / 1024


def estimate(cfg: RunConfig, device: str = "cpu") -> Estimate:
    """The memory and time one run of ``cfg`` would need on ``device`` (cpu or cuda), its model never loaded."""

    from simpe.methods.compose import build_method, composed_name
    from simpe.models import family_of

    model, config = _meta_model(cfg)
    family_of(model)
    b = BYTES[cfg.model.dtype]
    readers = _readers(model)
    largest = max(p.numel() for p in model.parameters()) * b
    sizes = _sizes(model, b)  # as loaded, before a method adds tensors of its own (lora)
    method = build_method(cfg.method.name, cfg.method.params, cfg.method.modifiers)
    adapted = []
    if method.can_select(model.simpe_folder):
        method.attach(model, model.simpe_folder, cfg.update)
        adapted = _unique(method.trainable().values())
    trainable = sum(p.numel() for p in adapted)
    total = sum(p.numel() for p in _unique(model.parameters()))
    masters = b < 4 and cfg.update.master_copies and trainable > 0
    step = 4 if masters else b
    gradients = trainable * b + (trainable * 4 if masters else 0)
    tied = sum((readers.get(id(p), 1) - 1) * p.numel() * b for p in adapted)
    gradients += tied  # a tied tensor's gradient arrives once per reader
    beam = int(cfg.decoder.params.get("beam_size", 5) or 5)
    shape = RunShape(b, masters, rows=beam, segments=cfg.data.segments or 1000, tokens_per_segment=ENTRIES_PER_SEGMENT)
    footprint = method.footprint(shape)  # the method's own state, datastore and work, its parts' added
    state = footprint.state
    hidden = getattr(config, "d_model", None) or config.hidden_size
    ffn = (getattr(config, "encoder_ffn_dim", None) or getattr(config, "d_ff", None) or config.intermediate_size)
    layers = sum(int(getattr(config, key, 0) or 0) for key in ("encoder_layers", "decoder_layers")) or \
        int(getattr(config, "num_layers", 0) or 0) + int(getattr(config, "num_decoder_layers", 0) or 0) or \
        int(getattr(config, "num_hidden_layers", 0))
    per_token_layer = (ACTIVATION_WIDTHS[0] * hidden + ACTIVATION_WIDTHS[1] * ffn) * b

    def backward(tokens: int) -> int:
        """What a forward and backward pass over ``tokens`` source and target tokens holds."""
        if cfg.update.checkpointing:
            held = layers * tokens * hidden * b + tokens * per_token_layer
        else:
            held = layers * tokens * per_token_layer
        return held + 3 * tokens // 2 * config.vocab_size * 4  # logits, log-softmax and its gradient, float32
    activations = 0
    if trainable:
        activations = backward(TOKENS) + footprint.update_bytes  # and what the parts hold meanwhile (ewc's penalty)
    tuning = 0
    if footprint.tuned_values:  # tuned around the translation and put back (tune-retrieve): the gradients (float32
        # too under master copies) and a forward and backward pass over the batch
        tuned = footprint.tuned_values
        tuning = tuned * b + (tuned * 4 if b < 4 and cfg.update.master_copies else 0) + backward(TOKENS * footprint.tuning_pairs)
    activations = max(activations, 3 * beam * config.vocab_size * 4 + tuning)  # decoding: a beam's scores over the vocabulary
    datastore = 1000 * ENTRIES_PER_SEGMENT * footprint.datastore_per_token
    facts = time_facts(cfg, model, sizes, b, trainable, trainable * step, tied, method.name, footprint) \
        if device == "cpu" else None
    parts = seconds(facts, _speed_table(), cfg.update.max_repeats) if facts is not None else None
    translate, update = parts if parts is not None else (None, None)
    return Estimate(cfg.adapter, composed_name(cfg.method.name, cfg.method.modifiers), total, trainable, total * b,
                    gradients, state, activations,
                    _runtime_bytes(device), datastore, cfg.data.segments,
                    None if parts is None else translate + update, largest, translate, update, facts)


def available(device: str) -> int:
    """Bytes this machine offers a run: CUDA's free memory, or the memory the kernel reports available."""
    if device == "cuda":
        import torch

        return int(torch.cuda.mem_get_info()[0])
    try:
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _fmt(value: int) -> str:
    return f"{value / GIB:.2f} GiB" if value >= GIB else f"{value / MIB:.0f} MiB"


def fix_hint(cfg: RunConfig, est: Estimate, budget: int, device: str) -> str:
    """The setting that would make a run that does not fit ``budget`` fit, tried in this order: bfloat16, lora instead
    of the method (where lora adapts fewer values than it), activation checkpointing; or the memory the smallest of
    them needs."""
    from simpe.config.files import load_config

    overrides = [f"model.path={cfg.model.path}" if cfg.model.path is not None else "model.path=null",
                 f"model.dtype={cfg.model.dtype}"]
    made: dict[tuple[str, tuple[str, ...]], Estimate] = {}

    def other(preset: str, extra: list[str]) -> Estimate:
        key = (preset, tuple(extra))
        if key not in made:
            made[key] = estimate(load_config(preset, overrides + extra), device)
        return made[key]

    tries = []
    if cfg.model.dtype == "float32":
        tries.append(("--set model.dtype=bfloat16", cfg.adapter, ["model.dtype=bfloat16"]))
    try:
        lighter = other(LIGHTER_PRESET, []).trainable < est.trainable  # a method that adapts more than lora's adapters
    except ConfigError:  # lora refuses this model (its family lacks the targets)
        lighter = False
    if lighter:
        tries.append((f"--preset {LIGHTER_PRESET}", LIGHTER_PRESET, []))
        if cfg.model.dtype == "float32":
            tries.append((f"--preset {LIGHTER_PRESET} --set model.dtype=bfloat16", LIGHTER_PRESET, ["model.dtype=bfloat16"]))
    if not cfg.update.checkpointing and est.trainable:
        tries.append(("--set update.checkpointing=true", cfg.adapter, ["update.checkpointing=true"]))
    smallest = est.peak
    for hint, preset, extra in tries:
        peak = other(preset, extra).peak
        smallest = min(smallest, peak)
        if peak <= budget:
            return f"{hint} would need {_fmt(peak)}"
    return f"no lighter setting fits: the lightest tried needs {_fmt(smallest)}"


def report(configs: list[RunConfig], device: str, budget: int | None = None) -> list[str]:
    """The dry run's lines for ``configs`` on ``device``; raises ConfigError (one line) for the first run that does not
    fit ``budget`` bytes (default: what the device has available)."""
    budget = available(device) if budget is None else budget
    lines = [f"dry run on {device}: {_fmt(budget)} available; no weights are loaded, nothing is run"]
    refusal = None
    estimates: list[tuple[RunConfig, Estimate]] = []
    for cfg in configs:
        est = estimate(cfg, device)
        timing = (f"{est.seconds_per_segment:.2f} s/segment = translate {est.translate_seconds:.2f} + update "
                  f"{est.update_seconds:.2f} (CPU, one thread, rates measured in {SPEED_TABLE.name})"
                  if est.seconds_per_segment is not None else
                  "no measured rates for this device, dtype, decoder, method or its parts' work")
        if est.seconds_per_segment is not None and cfg.decoder.name in TIMED_AS_BEAM:
            timing += f" ({cfg.decoder.name} timed as beam: {TIMED_AS_BEAM[cfg.decoder.name]})"
        grow = f", datastore +{_fmt(est.datastore_per_1000)} per 1,000 segments" if est.datastore_per_1000 else ""
        loading = (f" while loading (the largest tensor, {_fmt(est.loading)}, held twice), {_fmt(est.running)} running"
                   if est.peak > est.running else "")
        lines.append(f"{est.name}: {est.parameters:,} parameters ({cfg.model.dtype}), {est.trainable:,} adapted; memory "
                     f"{_fmt(est.peak)}{loading} = weights {_fmt(est.weights)} + gradients {_fmt(est.gradients)} + method state "
                     f"{_fmt(est.state)} + activations {_fmt(est.activations)} + runtime {_fmt(est.runtime)}{grow}; {timing}")
        if est.peak > budget and refusal is None:
            refusal = (f"{est.name} needs about {_fmt(est.peak)} on {device}, more than the {_fmt(budget)} available; "
                       + fix_hint(cfg, est, budget, device))
        estimates.append((cfg, est))
    lines += _group_lines(estimates, budget)
    if refusal:
        raise ConfigError(refusal)
    return lines


def _group_lines(estimates: list[tuple[RunConfig, Estimate]], budget: int) -> list[str]:
    """The dry run's lines for the lockstep groups the runs would form (``simpe.loop.group``): their stacked copies,
    and where a group does not fit, how it splits."""
    from simpe.loop.lockstep import group_bytes, group_parts, lockstep_key, why_alone
    from simpe.loop.plan import group_identity

    groups: dict[str, list[Estimate]] = {}
    for cfg, est in estimates:
        if why_alone(cfg) is None:
            groups.setdefault(lockstep_key(cfg, group_identity(cfg)), []).append(est)
    lines = []
    for members in groups.values():
        if len(members) < 2:
            continue
        need = group_bytes(members)
        stacked = sum(est.weights + est.gradients for est in members)
        parts = group_parts(members, budget)
        split = "" if parts == 1 else f"; more than the {_fmt(budget)} available: it splits into {parts} groups"
        lines.append(f"lockstep group of {len(members)} ({', '.join(est.name for est in members)}): {_fmt(need)}, "
                     f"of which {len(members)} stacked copies of the weights and gradients {_fmt(stacked)}{split}")
    return lines
