"""What a metric difference means to people: Kocmi et al. (2024)'s human-agreement thresholds.

Kocmi, Zouhar, Federmann & Post (2024), *Navigating the Metrics Maze*, fit for each metric the share of system pairs
on which humans agree with the metric's ranking, as a function of the metric difference: accuracy(Δ) = a / (1 +
exp(-b Δ)) in percent. Their published code (github kocmitom/MT-Thresholds, python-tool/mt_thresholds.py) holds the
fitted (a, b) per metric; thresholds.json keeps those figures with their repository, file and commit, and the deltas
the paper's appendix prints for 80 % and 90 % (tests/unit/test_thresholds.py checks them against each other).
``accuracy`` and ``delta`` compute as the authors' ``accuracy`` and ``delta`` do.

Which of simpe's metrics the fits cover: ``bleu`` (sacreBLEU BLEU) and ``chrf`` (sacreBLEU chrF, word order 0) as the
paper scored them, and ``comet`` only when its model is wmt22-comet-da (COMET-22; simpe's COMET is on the 0-1 scale,
the fits on 0-100). Every other metric (TER, SBLEU, chrF++, the R and term metrics, KSMR, another COMET model) is not
covered, and ``agreement`` says so. This module computes; it does not read runs or format tables.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

THRESHOLDS_FILE = Path(__file__).with_name("thresholds.json")
LEVELS = (90, 80)  # the agreement levels a difference is placed at (percent of system pairs), highest first
BELOW = "below 80 %"
COMET22_MODELS = ("Unbabel/wmt22-comet-da", "wmt22-comet-da")
# the metric families of Kocmi et al. (2024): string matching against the reference, and pretrained (neural) metrics;
# WMT pairs a metric with one of the other family
PRETRAINED_METRICS = ("comet",)


def _load() -> dict[str, Any]:
    return json.loads(THRESHOLDS_FILE.read_text(encoding="utf-8"))


THRESHOLDS = _load()


def fit(name: str) -> tuple[float, float]:
    """The fitted (a, b) of the authors' metric ``name`` (their key: bleu, chrf, comet22, ...)."""
    found = THRESHOLDS["fits"].get(name)
    if found is None:
        raise KeyError(f"no threshold fit for {name!r}; known: {', '.join(THRESHOLDS['fits'])}")
    return float(found["a"]), float(found["b"])


def accuracy(delta: float, name: str) -> float:
    """The estimated human agreement (percent of system pairs) with a difference of ``delta`` points of ``name``:
    ``a * 1 / (1 + e^(-b delta))`` (mt_thresholds.accuracy)."""
    a, b = fit(name)
    return a * (1 / (1 + math.pow(math.e, -b * delta)))


def delta(level: float, name: str) -> float | None:
    """The difference (points of ``name``) at which the estimated agreement reaches ``level`` (a fraction in [0.5, 1]):
    ``-ln(a / (100 level) - 1) / b`` (mt_thresholds.delta); None where the fit never reaches it (BLEU at 90 %)."""
    if not 0.5 <= level <= 1:
        raise ValueError(f"an agreement level is a fraction in [0.5, 1], got {level}")
    a, b = fit(name)
    ratio = a / (level * 100) - 1
    return None if ratio <= 0 else -math.log(ratio) / b


@dataclass(frozen=True)
class Agreement:
    """Where a difference stands: ``level`` (90, 80, or 0 for below 80 %), the estimated ``accuracy`` (percent), the
    fit used (``fit_name``); ``covered`` False (level/accuracy None) with ``why`` for a metric the fits lack."""

    covered: bool
    level: int | None = None
    accuracy: float | None = None
    fit_name: str | None = None
    why: str = ""

    @property
    def label(self) -> str:
        if not self.covered:
            return "not covered"
        return BELOW if not self.level else f"{self.level} %"


def fit_of(metric: str, comet_model: str | None = None) -> tuple[str | None, float, str]:
    """(the authors' fit for simpe's ``metric``, the factor from simpe's display unit to the fit's, why not covered)."""
    if metric in ("bleu", "chrf"):
        return metric, 1.0, ""
    if metric == "comet":
        model = (comet_model or "").rstrip("/")
        if any(model == m or model.endswith("/" + m.split("/")[-1]) for m in COMET22_MODELS):
            return "comet22", 100.0, ""
        return None, 1.0, (f"the COMET model {comet_model or '(unknown)'} is not COMET-22 (wmt22-comet-da), the one "
                           "COMET model the thresholds cover among those simpe runs")
    return None, 1.0, "Kocmi et al. (2024) fit no threshold for it"


def agreement(metric: str, difference: float | None, comet_model: str | None = None) -> Agreement:
    """The agreement level of a ``difference`` of simpe's ``metric`` in its display unit (the comparison table's)."""
    name, factor, why = fit_of(metric, comet_model)
    if name is None:
        return Agreement(False, why=why)
    if difference is None or math.isnan(difference):
        return Agreement(True, None, None, name)
    points = abs(difference) * factor
    level = next((lvl for lvl in LEVELS if (d := delta(lvl / 100, name)) is not None and points >= d), 0)
    return Agreement(True, level, accuracy(points, name), name)


def comet_model_of(signature: str | None) -> str | None:
    """The model id of a COMET signature (``model:<id>|batch:<n>|version:<v>``), or None."""
    for part in (signature or "").split("|"):
        if part.startswith("model:"):
            return part[len("model:"):]
    return None


def one_family_note(metrics: list[str]) -> str | None:
    """A note when the compared metrics are of one family only (string matching: no pretrained metric), else None."""
    if any(m in PRETRAINED_METRICS for m in metrics):
        return None
    return ("Only string-matching metrics were computed (BLEU, chrF, TER, the R metrics ...): no pretrained metric "
            "such as COMET. WMT pairs a metric with one of the other family (Kocmi et al. 2024); simpe simulate "
            "--comet MODEL adds one (docs/metrics.md).")
