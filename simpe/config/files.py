"""The config tree read from and written to its files: ``adapters/defaults.yaml``, the presets and ``--set key=value``
merged in that order (``load_config``, ``run_configs``; one section's defaults: ``defaults``), a run's saved
config.yaml read back (``load_saved_config``) and compared with a resumed run's (``resume_difference``), and the tree
written (``dump_config``, ``save_config``). The tree itself, its dataclasses and their checks, is ``simpe.config.tree``.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from simpe.config.tree import SECTIONS, TOOL_SECTIONS, RunConfig, from_dict
from simpe.errors import ConfigError
from simpe.paths import DEFAULTS_FILE, PRESETS_DIR
from simpe.textfile import read_bytes
from simpe.values import load_yaml

MAX_CONFIG_BYTES = 16 * 1024**2  # a config of the whole tree is a few kB


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Merge ``override`` into a copy of ``base``; nested mappings merge (``params`` key by key), the rest replaces."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value) if key != "params" else {**out[key], **copy.deepcopy(value)}
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML file holding a mapping."""
    if path.is_dir():
        raise ConfigError(f"config file {path} is a folder; give a config.yaml (a run's: RUN/config.yaml)")
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    data = read_bytes(path, "config file", limit=MAX_CONFIG_BYTES, error=ConfigError)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 (byte {err.start}: {data[err.start:err.start + 1]!r}); a config is a UTF-8 YAML file") from None
    try:
        data = load_yaml(text) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML ({str(err).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def known_presets(presets_dir: Path = PRESETS_DIR) -> list[str]:
    """The preset names under ``adapters/`` (every .yaml file but defaults.yaml)."""
    return sorted(p.stem for p in presets_dir.glob("*.yaml") if p.name != DEFAULTS_FILE.name)


def preset_path(name_or_path: str, presets_dir: Path = PRESETS_DIR) -> Path:
    """Resolve a preset name (``lasso``) or a YAML path to its file."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ConfigError(f"preset file {path} does not exist")
        return path
    candidate = presets_dir / f"{name_or_path}.yaml"
    if not candidate.is_file():
        raise ConfigError(f"no preset {name_or_path!r} in {presets_dir.name}/; known: {', '.join(known_presets(presets_dir))} (or a path to a .yaml file)")
    return candidate


def parse_override(text: str) -> tuple[list[str], Any]:
    """``a.b=1`` -> (["a", "b"], 1); the value is parsed as YAML (numbers, null, lists, mappings)."""
    if "=" not in text:
        raise ConfigError(f"bad --set {text!r}; expected KEY=VALUE, e.g. update.lr=0.02")
    key, _, raw = text.partition("=")
    try:
        value = load_yaml(raw) if raw != "" else ""
    except yaml.YAMLError as err:
        if "aliases" in str(err):  # a bomb is not a string to set; any other unparsable text is one
            raise ConfigError(f"bad --set {key.strip()}: {err}") from None
        value = raw
    return key.strip().split("."), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """``data`` with every ``KEY=VALUE`` of ``overrides`` set (dotted keys reach into sections)."""
    out = copy.deepcopy(data)
    for text in overrides:
        keys, value = parse_override(text)
        if keys == ["model"] and (value is None or isinstance(value, str)) and isinstance(out.get("model"), dict):
            out["model"] = {**out["model"], "path": value}  # --set model=PATH: the path only (model_section)
            continue
        node = out
        for key in keys[:-1]:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                raise ConfigError(f"bad --set {text!r}: {key} is not a mapping")
        node[keys[-1]] = value
    return out


def model_section(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with a ``model`` given as a bare folder / hub id (``--set model=PATH``, or config.yaml of a
    run made before the model section) turned into the section: that path, every other key from defaults.yaml."""
    value = data.get("model")
    if value is None or isinstance(value, str):
        data = {**data, "model": {**read_yaml(DEFAULTS_FILE)["model"], "path": value}}
    return data


def load_config(preset: str, overrides: list[str] | None = None, presets_dir: Path = PRESETS_DIR) -> RunConfig:
    """The ``RunConfig`` of one preset: defaults, then the preset file, then overrides. The preset's name is kept
    under the key ``adapter`` (its name in every run's config.yaml since the first run format)."""
    path = preset_path(preset, presets_dir)
    merged = _run_sections(deep_merge(read_yaml(presets_dir / DEFAULTS_FILE.name), read_yaml(path)))
    merged["adapter"] = path.stem
    return from_dict(RunConfig, model_section(apply_overrides(model_section(merged), overrides or [])))


def run_configs(presets: list[str], overrides: list[str] | None = None, config_file: Path | None = None) -> list[RunConfig]:
    """The configs ``simpe simulate`` runs: each preset with the overrides, or the one config file (a run's
    ``config.yaml``). It needs no torch: the command line checks them before the model's libraries load."""
    return [load_saved_config(config_file, overrides)] if config_file else [load_config(p, overrides) for p in presets]


def load_saved_config(path: Path, overrides: list[str] | None = None) -> RunConfig:
    """A resolved config saved in a run directory (``config.yaml``).

    A run written before a key existed lacks it: the key takes its default from
    adapters/defaults.yaml, which is why a key added later must default to what simpe did
    before it (``snapshots.ranking: true``, ``snapshots.forgetting: 0``). Free-form mappings
    (``params``) are never filled: a saved run's parameters are complete as saved.
    """
    saved = _with_later_keys(model_section(read_yaml(path)), _run_sections(read_yaml(DEFAULTS_FILE)))
    return from_dict(RunConfig, model_section(apply_overrides(saved, overrides or [])))


def _run_sections(data: dict[str, Any]) -> dict[str, Any]:
    """The config tree without the sections that are not a run's (``train``)."""
    return {key: value for key, value in data.items() if key not in TOOL_SECTIONS}


def _with_later_keys(saved: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``saved`` with every key it lacks taken from ``defaults`` (sections one level down; never inside ``params``)."""
    out = dict(saved)
    for key, value in defaults.items():
        if key not in out:
            out[key] = value
        elif isinstance(value, dict) and isinstance(out[key], dict) and key != "params":
            out[key] = _with_later_keys(out[key], value)
    return out


def defaults(section: str, **overrides: Any) -> Any:
    """One section of ``adapters/defaults.yaml`` as its dataclass, with ``overrides`` applied and checked.

    Example: ``defaults("update", lr=0.05)``.
    """
    if section not in SECTIONS:
        raise ConfigError(f"unknown config section {section!r}; known: {', '.join(SECTIONS)}")
    data = read_yaml(DEFAULTS_FILE).get(section)
    if not isinstance(data, dict):
        raise ConfigError(f"{DEFAULTS_FILE} has no {section} section")
    return from_dict(SECTIONS[section], {**data, **overrides}, section)


def dump_config(cfg: RunConfig) -> str:
    """The resolved config as YAML text (keys in field order)."""
    return yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True)


def save_config(cfg: RunConfig, path: Path) -> None:
    """Write the resolved config as YAML (keys in field order)."""
    path.write_text(dump_config(cfg), encoding="utf-8")


# Settings that do not change a run's records: where the run folder lives (its spelling, or a
# moved folder) and the device the run continues on.
RESUME_IGNORED = ("runs_dir", "device")


def _model_key(model: Any) -> Any:
    """A model path compared by what it names: a local folder by its resolved path, a hub id as written."""
    if not isinstance(model, str):
        return model
    path = Path(model).expanduser()
    return str(path.resolve()) if path.exists() else model.rstrip("/")


def _first_difference(old: Any, new: Any, key: str) -> tuple[str, Any, Any] | None:
    if isinstance(old, dict) and isinstance(new, dict):
        for name in [*old, *(k for k in new if k not in old)]:
            found = _first_difference(old.get(name), new.get(name), f"{key}.{name}" if key else name)
            if found:
                return found
        return None
    return None if old == new else (key, old, new)


def resume_difference(saved: RunConfig, cfg: RunConfig) -> str | None:
    """The first setting that matters to the records where ``cfg`` differs from a run's ``saved`` config, or None.

    Returns e.g. ``"update.lr (the run has 0.01, now 0.02)"``; RESUME_IGNORED keys are skipped
    and a model folder is compared by its resolved path.
    """
    old, new = saved.to_dict(), cfg.to_dict()
    for data in (old, new):
        for key in RESUME_IGNORED:
            data.pop(key, None)
        data["model"]["path"] = _model_key(data["model"]["path"])
    found = _first_difference(old, new, "")
    if found is None:
        return None
    key, was, now = found
    return f"{key} (the run has {was!r}, now {now!r})"
