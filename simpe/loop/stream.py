"""The segments a run reads: its stream (the first ``data.segments`` of the dataset's split), the fixed probe of its
ranking snapshots and the held-out sentences of its forgetting probe. The loop (``simpe.loop.run``) and the dry run
(``simpe.loop.dryrun``, which reads the stream's lengths) take them from here."""
from __future__ import annotations

import logging
import random
from typing import Any

from simpe.config.tree import RunConfig
from simpe.datasets import DATASETS, Segment, draw
from simpe.datasets.base import shuffle_documents
from simpe.errors import ConfigError, DataError

logger = logging.getLogger(__name__)


def load_stream(cfg: RunConfig) -> tuple[Any, list[Segment]]:
    """The dataset and the first ``data.segments`` segments of its split (checked), their documents in the order of
    ``data.shuffle_documents`` when it is set (``simpe.datasets.base.shuffle_documents``: the same segments).

    ``cfg.data.params`` is completed with the dataset's defaults, so the saved config.yaml
    names every choice that made the stream.
    """
    cfg.data.params = DATASETS.resolve(cfg.data.name, cfg.data.params)
    dataset = DATASETS.build(cfg.data.name, **cfg.data.params)
    segments = dataset.load(cfg.data.split, cfg.data.skip_empty)
    if cfg.data.segments is not None:
        if cfg.data.segments > len(segments):  # the run folder (…--<N>seg) and the summary would disagree
            raise DataError(f"data.segments is {cfg.data.segments} but {cfg.data.name}:{cfg.data.split} has only "
                            f"{len(segments)} segments; pass --segments {len(segments)}, or leave --segments out for all")
        segments = segments[: cfg.data.segments]
    if cfg.data.shuffle_documents is not None:  # the same segments, documents in another order (a replicate)
        segments = shuffle_documents(segments, cfg.data.shuffle_documents, f"{cfg.data.name}:{cfg.data.split}")
    return dataset, segments


def probe_set(cfg: RunConfig, dataset: Any, stream: list[Segment]) -> list[Segment]:
    """The fixed probe set of the ranking snapshots (see SnapshotConfig)."""
    short = lambda segs: [s for s in segs if len(s.source.split()) <= cfg.snapshots.max_words]  # noqa: E731
    probe = cfg.snapshots.probe
    if probe == "auto":  # the dev split when the dataset has a non-empty one, else a fixed sample of the stream
        probe = "stream"
        if "dev" in dataset.splits:
            try:
                dev = short(dataset.load("dev", cfg.data.skip_empty))[: cfg.snapshots.probe_size]
            except DataError as err:  # e.g. an Autodesk file too small to hold out dev documents
                logger.info("ranking snapshots probe a fixed sample of the stream (the dev split: %s)", err)
            else:
                if dev:
                    return dev
        logger.debug("ranking snapshots probe a fixed sample of the stream")
    if probe == "dev":
        if "dev" not in dataset.splits:
            raise ConfigError(f"snapshots.probe=dev but dataset {cfg.data.name!r} has no dev split; use snapshots.probe=stream")
        return short(dataset.load("dev", cfg.data.skip_empty))[: cfg.snapshots.probe_size]
    candidates = short(stream)
    rng = random.Random(cfg.seed)
    return sorted(rng.sample(candidates, min(cfg.snapshots.probe_size, len(candidates))), key=stream.index)


def forgetting_set(cfg: RunConfig, dataset: Any) -> list[Segment]:
    """The forgetting probe: the last ``snapshots.forgetting`` segments of the dev split (held-out text the model
    never trained on and the stream never shows; the ranking probe takes dev's first short segments)."""
    if not (cfg.snapshots.every and cfg.snapshots.forgetting):
        return []
    if "dev" not in dataset.splits:
        raise ConfigError(f"snapshots.forgetting needs a dev split, and dataset {cfg.data.name!r} has none; set it to 0")
    return dataset.load("dev", cfg.data.skip_empty)[-cfg.snapshots.forgetting:]


# the splits a method's own sentences may come from: train, its shipped draw (the libreoffice dataset's train-sample)
# and dev; never the stream or the reserved splits
METHOD_SPLITS = ("train", "train-sample", "dev")


def method_sentences(cfg: RunConfig, dataset: Any, held: set[str], split: str, n: int) -> list[tuple[str, str]]:
    """At most ``n`` (source, reference) pairs of the dataset's ``split``, drawn with the run's seed, in file order:
    ``replay``'s training pairs and ``ewc``'s Fisher sentences. Only ``METHOD_SPLITS``, never the stream, the
    reserved splits, or a pair whose source is ``held`` (the stream's and, of dev, the forgetting and ranking probes').
    A split that is missing is an error naming it: never another split in its place."""
    if split not in METHOD_SPLITS or split == cfg.data.split:
        raise ConfigError(f"a method's own sentences come from the {', '.join(METHOD_SPLITS)} split, never the stream "
                          f"({cfg.data.split}) or the reserved splits; got {split!r}")
    if split not in dataset.splits:
        raise ConfigError(f"dataset {cfg.data.name!r} has no {split} split (its splits: "
                          f"{', '.join(dataset.splits)}); set the method's split to one it has")
    try:
        segments = dataset.load(split, True)
    except DataError as err:
        raise DataError(f"the method needs {n} sentences of the {split} split: {err}") from None
    segments = [s for s in segments if s.source not in held]
    chosen = draw(len(segments), n, cfg.seed)
    logger.info("%d sentences of the %s split for the method (seed %d)", len(chosen), split, cfg.seed)
    return [(segments[i].source, segments[i].reference) for i in chosen]
