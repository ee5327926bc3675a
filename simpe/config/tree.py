"""The one config tree: validated dataclasses, one per section (its files: ``simpe.config.files``).

``RunConfig`` nests one dataclass per section: ``method``, ``update``, ``decoder``,
``data``, ``metrics``, ``ranking`` and ``snapshots``. Every default lives in
``adapters/defaults.yaml`` and nowhere else: the dataclasses have none, every command reads
that file (``simpe.config.files.load_config`` for a run, ``defaults(section)`` for one section, as ``simpe
score``, ``simpe rank`` and ``simpe select-fixed`` do). The merge order of a run is
defaults.yaml, then the preset file (``adapters/<name>.yaml``, which holds only what
differs), then ``--set key=value``. ``from_dict`` is the one converter from a mapping to a
dataclass: an unknown key, a missing key or a value of the wrong type is a ConfigError
naming the key. The variants' ``params`` mappings are checked by their registries
(``simpe.registry``). The resolved config is saved into every run directory, and
``simpe simulate --config runs/…/config.yaml`` reproduces the run.
"""
from __future__ import annotations

import dataclasses
import re
import typing
from dataclasses import dataclass
from typing import Any

from simpe.errors import ConfigError
from simpe.paths import DEFAULTS_FILE
from simpe.values import check_seed, coerce

TRUECASER_OF_MODEL = "model"  # metrics.truecaser: the truecase.<lang>.model shipped in the model folder


@dataclass
class UpdateConfig:
    """How one (source, reference) pair updates the trainable parameters (Simianer et al. (2019), section 4)."""

    optimizer: str
    lr: float
    clip_norm: float  # per-tensor gradient L2 norm; 0 disables
    max_repeats: int  # repeat the step on the pair at most this often ...
    ppl_threshold: float  # ... until its perplexity is <= this
    dropout: float
    label_smoothing: float
    master_copies: bool  # bfloat16 / float16 tensors: step a float32 master copy, write the rounded value back
    checkpointing: bool  # activation checkpointing in the update's forward (recompute in backward: less memory, more time)

    def __post_init__(self) -> None:
        if self.optimizer != "sgd":
            raise ConfigError(f"unknown update.optimizer {self.optimizer!r}; known: sgd")
        if not self.lr > 0:
            raise ConfigError(f"update.lr must be > 0, got {self.lr}")
        if self.max_repeats < 1:
            raise ConfigError(f"update.max_repeats must be >= 1, got {self.max_repeats}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"update.dropout must be in [0, 1), got {self.dropout}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ConfigError(f"update.label_smoothing must be in [0, 1), got {self.label_smoothing}")
        if self.clip_norm < 0:
            raise ConfigError(f"update.clip_norm must be >= 0, got {self.clip_norm}")
        if not self.ppl_threshold > 0:
            raise ConfigError(f"update.ppl_threshold must be > 0 (a perplexity is >= 1), got {self.ppl_threshold}")


FAMILY_AUTO = "auto"  # model.family: the family whose model_type config.json names (simpe.models)
DTYPE_NAMES = ("float32", "bfloat16", "float16")


@dataclass
class ModelConfig:
    """The model: a folder or hub id, its family, and the family's settings (checked before it loads).

    family: ``auto`` (from config.json's ``model_type``) or a registered family (``simpe list``);
    src_lang / tgt_lang: the language codes the family's tokenizer or prompt takes (mbart:
    en_XX, m2m100: en, NLLB: eng_Latn, t5: the ``<2xx>`` code, marian: a multi-target model's
    ``>>id<<``, causal: the language names its prompt says); prompt_template: a causal LM's
    plain prompt (used when its tokenizer has no chat template); dtype: the weights' dtype.
    """

    path: str | None  # None = the embedded demo model
    family: str
    src_lang: str | None
    tgt_lang: str | None
    prompt_template: str | None
    dtype: str

    def __post_init__(self) -> None:
        if self.dtype not in DTYPE_NAMES:
            raise ConfigError(f"unknown model.dtype {self.dtype!r}; known: {', '.join(DTYPE_NAMES)}")
        if not self.family:
            raise ConfigError(f"model.family must be {FAMILY_AUTO!r} or a family name, got {self.family!r}")

    def family_settings(self) -> dict[str, Any]:
        """The settings a family's constructor takes (``simpe.models.FAMILIES.build``)."""
        return {"src_lang": self.src_lang, "tgt_lang": self.tgt_lang, "prompt_template": self.prompt_template}


MODIFIER_KEYS = ("name", "params")


@dataclass
class MethodConfig:
    """An adaptation method by registered name; ``params`` go to ``METHODS.build``; ``modifiers``, a list of
    ``{name, params}`` (replay, ewc, prefer, knn, tune-retrieve), compose it with them (``simpe.methods.compose``, which
    checks the names and parameters before the model loads)."""

    name: str
    params: dict[str, Any]
    modifiers: list

    def __post_init__(self) -> None:
        for position, entry in enumerate(self.modifiers):
            where = f"method.modifiers[{position}]"
            if isinstance(entry, str):  # a bare name: no parameters
                entry = self.modifiers[position] = {"name": entry, "params": {}}
            if not isinstance(entry, dict):
                raise ConfigError(f"{where} must be a mapping {{name, params}} or a name, got {entry!r}")
            unknown = sorted(set(entry) - set(MODIFIER_KEYS))
            if unknown:
                raise ConfigError(f"unknown key {where}.{unknown[0]}; known: {', '.join(MODIFIER_KEYS)}")
            if not isinstance(entry.get("name"), str) or not entry["name"]:
                raise ConfigError(f"{where}.name must be a modifier's name, got {entry.get('name')!r}")
            params = entry.setdefault("params", {})
            if params is None:
                entry["params"] = {}
            elif not isinstance(params, dict):
                raise ConfigError(f"{where}.params must be a mapping, got {params!r}")


@dataclass
class DecoderConfig:
    """The loop's decoder by registered name; ``params`` go to ``DECODERS.build``."""

    name: str
    params: dict[str, Any]


@dataclass
class DataConfig:
    """The stream: a registered dataset, its split, and how much of it."""

    name: str
    split: str
    segments: int | None  # the first N segments; None = all
    skip_empty: bool  # skip empty segments with a counted warning instead of failing
    params: dict[str, Any]  # go to DATASETS.build
    glossary: str | None  # null | dataset (the dataset's own) | a TSV or TBX file: the term metrics (simpe.terms)
    glossary_prompt: bool  # a causal LM's prompt also says the glossary's terms that apply to the source
    shuffle_documents: int | None  # a seed: the stream's documents in a seeded order, each whole; null: as read

    def __post_init__(self) -> None:
        if self.segments is not None and self.segments < 1:
            raise ConfigError(f"data.segments must be >= 1 or null, got {self.segments}")
        if self.shuffle_documents is not None:
            check_seed(self.shuffle_documents, "data.shuffle_documents (a seed, or null for the order as read)")
        if isinstance(self.glossary, str) and not self.glossary.strip():
            raise ConfigError("data.glossary must be null, 'dataset' (the dataset's own) or a glossary file, got ''")


# The choices of the metrics section; their meaning is documented where they are applied
# (simpe.metrics.text, simpe.metrics.recall, simpe.metrics.sacre, simpe.metrics.online).
STOPWORD_CASES = ("exact", "insensitive")
TOKEN_FILTERS = ("punct-or-digits", "digits-punct-symbols")
R_SCOPES = ("stream", "document")
SUBWORD_UNITS = ("all", "content")
SBLEU_SMOOTHINGS = ("nakov", "exp")
NOVEL_VOCAB_OF_DATASET = "train"  # metrics.novel_vocab: the vocabulary `make corpus` writes for the dataset's train split


# Rk and R0..k are logged for every k up to metrics.r_max_k, two numbers each per segment and record: 100 reaches past
# any content word's occurrences in a stream of thousands of segments, and a larger k only grows every record
R_MAX_K_LIMIT = 100


@dataclass
class MetricsConfig:
    """What the online scorer computes and how it finds content words (Simianer et al. (2019), section 2.2).

    The defaults reproduce the tools of Simianer et al. (2019)'s authors: R counts as their script rk.rb
    (exact stopword case, punct-or-digits filter, stream scope), SBLEU as cdec's Nakov BLEU+1.
    """

    lang: str  # target language: Moses tokenizer, default stopwords
    truecaser: str | None  # "model": the model's truecase.<lang>.model; null: none; or a MosesTruecaser path
    stopwords: str  # a language code under stopwords/ or a path
    stopword_case: str  # exact (rk.rb) | insensitive
    token_filter: str  # punct-or-digits (rk.rb) | digits-punct-symbols
    scope: str  # stream: occurrence counts over the whole stream (the paper) | document: restarted per document
    r_max_k: int  # log Rk and R0..k up to this k (r0+1 always)
    novel_vocab: str | None  # "train" (the dataset's train vocabulary) or a vocabulary file, for "novel:r0" ...
    rare_threshold: int  # novel words: a vocabulary word with count <= this still counts (rk.rb -R)
    subword: str | None  # null | all (every piece) | content (pieces of content words): "subword:r0" ...
    sbleu: str  # nakov (BLEU+1 as cdec's NakovBleuScorer, Simianer et al. (2019)) | exp (sacreBLEU sentence_bleu)
    logged: list  # metrics logged per segment with their statistics: METRICS names (checked by simpe.metrics.online)

    def __post_init__(self) -> None:
        if not self.lang:
            raise ConfigError(f"metrics.lang must be a language code such as 'de', got {self.lang!r}")
        if isinstance(self.truecaser, str) and self.truecaser.lower() in ("", "none"):
            self.truecaser = None
        if not self.stopwords:
            raise ConfigError("metrics.stopwords must be a language code such as 'de' or a path to a word list")
        if not 0 <= self.r_max_k <= R_MAX_K_LIMIT:
            raise ConfigError(f"metrics.r_max_k must be an integer in [0, {R_MAX_K_LIMIT}], got {self.r_max_k}")
        if self.rare_threshold < 0:
            raise ConfigError(f"metrics.rare_threshold must be an integer >= 0, got {self.rare_threshold}")
        if isinstance(self.subword, str) and self.subword.lower() in ("", "none", "false"):
            self.subword = None
        for name, valid in (("stopword_case", STOPWORD_CASES), ("token_filter", TOKEN_FILTERS), ("scope", R_SCOPES),
                            ("subword", (None, *SUBWORD_UNITS)), ("sbleu", SBLEU_SMOOTHINGS)):
            if getattr(self, name) not in valid:
                raise ConfigError(f"unknown metrics.{name} {getattr(self, name)!r}; known: "
                                  + ", ".join("null" if v is None else v for v in valid))


QUALITIES_NOTE = "any utility of simpe.metrics.utility (bleu, sbleu, chrf, chrf++, ter, comet)"
GAINS = ("exp", "linear")
TIES = ("mean", "model")


@dataclass
class RankingConfig:
    """A ranking evaluation (Yan et al. (2022)): a loop snapshot or ``simpe rank``.

    k: top-region size; quality: Q, a utility name; samples, sample_seed: Monte Carlo
    sampling (sentence i uses sample_seed + i); beam_size: the plain beam checked for search
    errors; max_expansions / max_seconds: limits of each exact search (null = none; a search
    cut short is counted in exact_rate); top_region / sampling: which evaluations run; gain:
    exp | linear and ties: mean | model (simpe.ranking.measures); batch_size: prefixes per forward pass of the exact search; max_len_a/b/cap:
    the length limit (decoders/incremental.py).
    """

    k: int
    quality: str
    samples: int
    sample_seed: int
    beam_size: int
    max_expansions: int | None
    max_seconds: float | None
    top_region: bool
    sampling: bool
    gain: str
    ties: str
    batch_size: int
    max_len_a: float
    max_len_b: int
    max_len_cap: int

    def __post_init__(self) -> None:
        for name in ("k", "samples", "beam_size", "batch_size", "max_expansions"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"ranking.{name} must be a positive integer, got {value!r}")
        check_seed(self.sample_seed, "ranking.sample_seed")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise ConfigError(f"ranking.max_seconds must be a positive number or null, got {self.max_seconds!r}")
        if self.gain not in GAINS:
            raise ConfigError(f"unknown ranking.gain {self.gain!r}; known: {', '.join(GAINS)}")
        if self.ties not in TIES:
            raise ConfigError(f"unknown ranking.ties {self.ties!r}; known: {', '.join(TIES)}")
        if not (self.top_region or self.sampling):
            raise ConfigError("ranking with top_region=false and sampling=false evaluates nothing; enable one")

    def length(self) -> dict[str, Any]:
        """The length-limit parameters every decoder takes."""
        return {"max_len_a": self.max_len_a, "max_len_b": self.max_len_b, "max_len_cap": self.max_len_cap}


PROBES = ("auto", "dev", "stream")
RESETS = ("none", "document")  # reset: when the adapted state returns to the base model


@dataclass
class SnapshotConfig:
    """Periodic ranking snapshots during adaptation (every N segments on a fixed probe set)."""

    every: int  # 0 = off
    probe: str  # "dev": the first probe_size short segments of the dev split; "stream": a fixed sample of the stream;
    #             "auto": dev when the dataset has a dev split, else stream (snapshots are on by default, own data has no dev)
    probe_size: int
    max_words: int
    ranking: bool  # the ranking evaluation (Yan et al. (2022)) in each snapshot
    forgetting: int  # forgetting probe: BLEU/chrF of the run's decoder on the last N dev segments (other text); 0 = off

    def __post_init__(self) -> None:
        if self.every < 0:
            raise ConfigError(f"snapshots.every must be >= 0, got {self.every}")
        if self.probe not in PROBES:
            raise ConfigError(f"unknown snapshots.probe {self.probe!r}; known: {', '.join(PROBES)}")
        for name in ("probe_size", "max_words"):
            if getattr(self, name) < 1:
                raise ConfigError(f"snapshots.{name} must be >= 1, got {getattr(self, name)}")
        if self.forgetting < 0:
            raise ConfigError(f"snapshots.forgetting must be >= 0 (dev segments; 0 = off), got {self.forgetting}")
        if self.every and not (self.ranking or self.forgetting):
            raise ConfigError("snapshots with ranking=false and forgetting=0 measure nothing; enable one, or set snapshots.every=0")


@dataclass
class WarmStartConfig:
    """Adapting on the translator's memory before the stream (``--warm-start FILE``; docs/methods.md, "Warm start").

    path: a translation memory, .tmx, .tsv (source TAB target) or text (``PATH.<src>`` + ``PATH.<tgt>``); null: none.
    epochs / batch_size: the method's own update, one step per batch of ``batch_size`` pairs (the mean of their
    losses), ``epochs`` passes over the memory in an order shuffled with the run's seed. method: for a ``baseline``
    run only, the preset whose method and update warm-start the model (the baseline of a warm-started comparison is
    the warm-started model without online updates); null: the run's own method.
    """

    path: str | None
    epochs: int
    batch_size: int
    method: str | None

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"warm_start.{name} must be >= 1, got {getattr(self, name)}")
        if isinstance(self.path, str) and self.path.lower() in ("", "none", "null"):
            self.path = None


PROTOCOLS = ("post-edit", "interactive")
LEVELS = ("char", "word", "both")


@dataclass
class ProtocolConfig:
    """How the translator works with the system (docs/interactive.md).

    post-edit: the system translates, the translator rewrites (Simianer et al. 2019). interactive: the
    interactive-predictive protocol (Knowles & Koehn 2016; Peris et al. 2017): after each correction the system
    completes the sentence from the validated prefix; the effort (KSMR, WSR) is logged per segment. In both the
    method adapts on (source, post-edit) once the segment is done.
    """

    name: str  # post-edit | interactive
    level: str  # interactive: the simulated translator corrects a character (KSMR), a word (WSR) or both (two sessions)

    def __post_init__(self) -> None:
        if self.name not in PROTOCOLS:
            raise ConfigError(f"unknown protocol.name {self.name!r}; known: {', '.join(PROTOCOLS)}")
        if self.level not in LEVELS:
            raise ConfigError(f"unknown protocol.level {self.level!r}; known: {', '.join(LEVELS)}")


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=+,@-]*")


@dataclass
class TrainConfig:
    """``simpe train-demo-model``'s settings (the ``train`` section): the demo model's architecture, data and schedule.
    The defaults train the shipped model again (models/demo-en-de: 11,000 steps, the last 2,500 decaying to 0)."""

    data_dir: str
    dataset: str  # libreoffice: the files in data_dir; another registered dataset: its train/dev/stream splits
    out_dir: str
    vocab_size: int
    d_model: int
    encoder_layers: int  # the model of Simianer et al. (2019) has 6 encoder and 3 decoder layers; the decoder dominates
    decoder_layers: int  # beam-search time, so a deeper encoder costs simulate little (docs/data.md, "The embedded demo model")
    heads: int
    ffn_dim: int
    dropout: float
    label_smoothing: float
    max_len: int
    batch_tokens: int
    lr: float
    warmup_steps: int
    max_minutes: float  # of training (evaluations excluded); 0: no limit
    max_steps: int  # 0: no limit; checked, like max_minutes, at evaluations
    decay_steps: int  # the last N of max_steps: the learning rate falls linearly to 0 (0: inverse square root to the end)
    eval_every: int
    eval_segments: int
    patience: int
    average: int  # also try the mean of the last N evaluation checkpoints; keep it when its dev BLEU is higher
    seed: int
    device: str
    threads: int  # 0: torch's default

    def __post_init__(self) -> None:
        check_seed(self.seed, "train.seed")


def check_name(what: str, name: str) -> str:
    """A run's name is a folder name and nothing else: letters, digits and ``._=+,@-``, not starting with a dot or
    a dash, no ``..``, no ``/``: it can never point outside its group folder (``--set adapter=../x`` is refused)."""
    if not isinstance(name, str) or not NAME.fullmatch(name) or ".." in name or len(name) > 200:
        raise ConfigError(f"{what} {name!r} is not a valid name: use letters, digits and . _ = + , @ - (not starting with "
                          "a dot or a dash, no '..', no '/', at most 200 characters)")
    return name


@dataclass
class RunConfig:
    """One run: one preset (a method and its settings) on one stream."""

    adapter: str  # the preset file's name (key kept from run format 1): names the run, its folder and its plot line
    model: ModelConfig
    device: str
    seed: int
    checkpoint_every: int
    comet: str | None  # COMET model scored at the end of the run
    runs_dir: str
    reset: str  # none: adapt across the whole stream (Simianer et al. (2019)); document: back to the base model at each document boundary
    method: MethodConfig
    update: UpdateConfig
    decoder: DecoderConfig
    data: DataConfig
    metrics: MetricsConfig
    ranking: RankingConfig
    snapshots: SnapshotConfig
    protocol: ProtocolConfig
    warm_start: WarmStartConfig

    def __post_init__(self) -> None:
        check_name("adapter", self.adapter)
        check_seed(self.seed, "seed")
        if self.checkpoint_every < 1:
            raise ConfigError(f"checkpoint_every must be >= 1, got {self.checkpoint_every}")
        if self.reset not in RESETS:
            raise ConfigError(f"unknown reset {self.reset!r}; known: {', '.join(RESETS)}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


SECTIONS: dict[str, type] = {name: hint for name, hint in typing.get_type_hints(RunConfig).items() if dataclasses.is_dataclass(hint)}
TOOL_SECTIONS: dict[str, type] = {"train": TrainConfig}  # sections of defaults.yaml that are not a run's
SECTIONS.update(TOOL_SECTIONS)


def from_dict(cls: type, data: Any, where: str = "") -> Any:
    """The dataclass ``cls`` from a mapping: every field present, no unknown key, values checked.

    Args:
        where: the section's dotted name in error messages ("" for the root).
    """
    prefix = f"{where}." if where else ""
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'the config'} must be a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ConfigError(f"unknown key {prefix}{unknown[0]}; known: {', '.join(names)}")
    missing = [name for name in names if name not in data]
    if missing:
        raise ConfigError(f"missing key {prefix}{missing[0]} (every key has its default in {DEFAULTS_FILE.name})")
    values = {}
    for name in names:
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            values[name] = from_dict(hint, data[name], prefix + name)
        else:
            values[name] = coerce(data[name], hint, prefix + name)
    return cls(**values)
