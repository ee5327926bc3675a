"""Run configuration: YAML files -> merged dict -> validated dataclasses -> code.

The merge order is ``adapters/defaults.yaml``, then the adapter file
(``adapters/<name>.yaml``, which holds only what differs), then ``--set key=value``
overrides. Unknown keys are errors. The resolved config is saved into every run
directory, and ``simpe simulate --config runs/…/config.yaml`` reproduces the run.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from simpe.errors import ConfigError
from simpe.model import REPO_ROOT

ADAPTERS_DIR = REPO_ROOT / "adapters"
DEFAULTS_FILE = "defaults.yaml"


@dataclass
class UpdateConfig:
    """How one (source, reference) pair updates the trainable parameters (seed 002, section 4)."""

    optimizer: str = "sgd"
    lr: float = 1e-2
    clip_norm: float = 1.0  # per-tensor gradient L2 norm; 0 disables
    max_repeats: int = 3
    ppl_threshold: float = 2.0
    dropout: float = 0.0
    label_smoothing: float = 0.0

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


@dataclass
class MethodConfig:
    name: str = "baseline"  # registered method name
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class DecoderConfig:
    name: str = "beam"
    params: dict[str, Any] = field(default_factory=lambda: {"beam_size": 5})


@dataclass
class DataConfig:
    name: str = "libreoffice"
    split: str = "stream"
    segments: int | None = None  # first N segments; None = all
    skip_empty: bool = False
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.segments is not None and self.segments < 1:
            raise ConfigError(f"data.segments must be >= 1 or null, got {self.segments}")


@dataclass
class MetricsSettings:
    """Settings of the R-metric text pipeline (see simpe.metrics.online.MetricsConfig)."""

    lang: str = "de"
    truecaser: str | None = "model"  # "model": the truecaser shipped with the model; null: none; or a path
    stopwords: str = "de"
    r_max_k: int = 1
    novel_vocab: str | None = None
    subword: bool = False


@dataclass
class SnapshotConfig:
    """Periodic ranking snapshots during adaptation (every N segments on a fixed probe set)."""

    every: int = 0  # 0 = off
    probe: str = "dev"  # "dev": the first probe_size segments of the dataset's dev split; "stream": fixed sample of the stream
    probe_size: int = 20
    max_words: int = 20
    params: dict[str, Any] = field(default_factory=dict)  # RankingConfig fields

    def __post_init__(self) -> None:
        if self.every < 0:
            raise ConfigError(f"snapshots.every must be >= 0, got {self.every}")
        if self.probe not in ("dev", "stream"):
            raise ConfigError(f"unknown snapshots.probe {self.probe!r}; known: dev, stream")


@dataclass
class RunConfig:
    adapter: str = "baseline"  # the adapter file's name: names the run, its folder and its plot line
    model: str | None = None  # folder or hub id; None = the embedded demo model
    device: str = "auto"
    seed: int = 1
    checkpoint_every: int = 50
    comet: str | None = None
    runs_dir: str = "runs"
    method: MethodConfig = field(default_factory=MethodConfig)
    update: UpdateConfig = field(default_factory=UpdateConfig)
    decoder: DecoderConfig = field(default_factory=DecoderConfig)
    data: DataConfig = field(default_factory=DataConfig)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    snapshots: SnapshotConfig = field(default_factory=SnapshotConfig)

    def __post_init__(self) -> None:
        if self.checkpoint_every < 1:
            raise ConfigError(f"checkpoint_every must be >= 1, got {self.checkpoint_every}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _from_dict(cls: type, data: dict[str, Any], where: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(f"unknown key {where}{'.' if where else ''}{unknown[0]}; known: {', '.join(sorted(fields))}")
    kwargs = {}
    for name, value in data.items():
        ftype = fields[name].type
        sub = {"MethodConfig": MethodConfig, "UpdateConfig": UpdateConfig, "DecoderConfig": DecoderConfig,
               "DataConfig": DataConfig, "MetricsSettings": MetricsSettings, "SnapshotConfig": SnapshotConfig}.get(str(ftype))
        kwargs[name] = _from_dict(sub, value, f"{where}.{name}".lstrip(".")) if sub else value
    try:
        return cls(**kwargs)
    except TypeError as err:
        raise ConfigError(f"bad config {where or 'root'}: {err}") from None


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Merge ``override`` into a copy of ``base``; nested mappings merge, the rest replaces."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "params":
            out[key] = deep_merge(out[key], value)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML ({str(err).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def known_adapters(adapters_dir: Path = ADAPTERS_DIR) -> list[str]:
    return sorted(p.stem for p in adapters_dir.glob("*.yaml") if p.name != DEFAULTS_FILE)


def adapter_path(name_or_path: str, adapters_dir: Path = ADAPTERS_DIR) -> Path:
    """Resolve an adapter name (``lasso``) or a YAML path to its file."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ConfigError(f"adapter file {path} does not exist")
        return path
    candidate = adapters_dir / f"{name_or_path}.yaml"
    if not candidate.is_file():
        raise ConfigError(f"unknown method {name_or_path!r}; known: {', '.join(known_adapters(adapters_dir))} (or a path to a .yaml file)")
    return candidate


def parse_override(text: str) -> tuple[list[str], Any]:
    """``a.b=1`` -> (["a", "b"], 1); the value is parsed as YAML (numbers, null, lists)."""
    if "=" not in text:
        raise ConfigError(f"bad --set {text!r}; expected KEY=VALUE, e.g. update.lr=0.02")
    key, _, raw = text.partition("=")
    try:
        value = yaml.safe_load(raw) if raw != "" else ""
    except yaml.YAMLError:
        value = raw
    return key.strip().split("."), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    for text in overrides:
        keys, value = parse_override(text)
        node = out
        for key in keys[:-1]:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                raise ConfigError(f"bad --set {text!r}: {key} is not a mapping")
        node[keys[-1]] = value
    return out


def load_config(adapter: str, overrides: list[str] | None = None, adapters_dir: Path = ADAPTERS_DIR) -> RunConfig:
    """Build the ``RunConfig`` for one adapter: defaults, then the adapter file, then overrides."""
    data = read_yaml(adapters_dir / DEFAULTS_FILE)
    path = adapter_path(adapter, adapters_dir)
    adapter_data = read_yaml(path)
    merged = deep_merge(data, adapter_data)
    merged["adapter"] = path.stem
    merged = apply_overrides(merged, overrides or [])
    return _from_dict(RunConfig, merged, "")


def load_saved_config(path: Path, overrides: list[str] | None = None) -> RunConfig:
    """Load a resolved config saved in a run directory (``config.yaml``)."""
    return _from_dict(RunConfig, apply_overrides(read_yaml(path), overrides or []), "")


def save_config(cfg: RunConfig, path: Path) -> None:
    path.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True), encoding="utf-8")
