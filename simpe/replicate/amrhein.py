"""The claims of Amrhein and Sennrich (2022) that simpe's sensitivity analysis measures (``simpe.sensitivity``): a
utility's MBR-based sensitivity to a changed number or named entity against a changed noun (one claim per utility,
``mbr_sensitivity``), and the number F1 of MBR outputs against beam search outputs (``number_f1``)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from simpe.replicate.judges import FACTOR_RULE, Claim, Evidence, Judge, Lookup, Verdict, cite, part
from simpe.replicate.papers import AMRHEIN2022, POINTS, QUOTES, show
from simpe.replicate.verdicts import NOT_TESTABLE, Effect, band_around, judge, mean_effect, paired_effect
from simpe.sensitivity import number_f1 as f1_of_counts

FAMILIES = {"num": "a changed number", "NE": "a changed named entity"}


def _family_values(result: dict[str, Any], prefix: str) -> list[float]:
    return [x for kind, row in result["changes"].items() if kind.startswith(prefix) for x in row.get("values") or []]


def _difference(a: list[float], b: list[float]) -> Effect:
    """mean(a) − mean(b) of two independent samples, normal 95 % interval from their bootstrap standard errors."""
    ea, eb = mean_effect(a, POINTS), mean_effect(b, POINTS)
    se = math.hypot((ea.high - ea.low) / (2 * 1.96), (eb.high - eb.low) / (2 * 1.96))
    value = ea.value - eb.value
    return Effect(value, value - 1.96 * se, value + 1.96 * se, min(ea.n, eb.n), POINTS, "sentences (the smaller pool)")


def _more_sensitive(families: tuple[str, ...], targets: dict[str, float]) -> Judge:
    def judge_it(c: Claim, result: dict[str, Any]) -> Verdict:
        noun_values = _family_values(result, "noun")
        if not noun_values or not all(_family_values(result, f) for f in families):
            return c.missing("no per-sentence values (or no sentence had a word of every kind): "
                             + ", ".join(f"{k} {v}" for k, v in result["pools"].items()))
        parts = []
        for f in families:
            verdict, why = judge(_difference(_family_values(result, f), noun_values), targets[f], band_around(targets[f]))
            parts.append((verdict, f"{f} − nouns: {why}"))
        alt = result["changes"].get("alternative", {}).get("mean")
        out = c.of_parts(parts)
        out.simpe += f"; alternative (beam output) {alt:+.2f}" if alt is not None else ""
        return out

    return judge_it


def mbr_sensitivity(cid: str, utility: str, table: str, families: tuple[str, ...]) -> Claim:
    """The claim that ``utility`` is more sensitive to the changes of ``families`` (num, NE) than to a changed noun, from
    the figures of the paper's ``table`` (Appendix C)."""
    quotes = [f"amrhein2022.{table}.numbers", f"amrhein2022.{table}.nes", f"amrhein2022.{table}.nouns", f"amrhein2022.{table}.alt_ende"]
    nouns = QUOTES[quotes[2]].value or 0.0
    targets = {f: round((QUOTES[quotes[0 if f == 'num' else 1]].value or 0.0) - nouns, 2) for f in families}
    return Claim(
        cid, f"{utility} is more sensitive to " + " or ".join(FAMILIES[f] for f in families) + " than to a changed noun.",
        cite(AMRHEIN2022, f"Appendix C, {QUOTES[quotes[0]].table.split(' (')[0]} (MBR-based sensitivity, samples as support)"),
        show(*quotes),
        "mean difference to the reference's MBR score, family minus nouns, utility points (paper: "
        + ", ".join(f"{f} {v:+g}" for f, v in targets.items()) + f"); {FACTOR_RULE}. simpe's 'alternative' control is "
        "the model's beam output (the data has one reference) and tends to score above the reference; the paper's is a "
        "second human translation, below it",
        _more_sensitive(families, targets),
        Lookup(lambda ev: (ev.sensitivity or {}).get(utility), ("mbr-sensitivity",), "the sensitivity analysis did not run"))


def _f1_of_resamples(summed: np.ndarray) -> np.ndarray:
    """``simpe.sensitivity.number_f1`` of each row of summed [matched, in the outputs, in the sources] counts, NaN where
    it is undefined (no number in any source or output): the score the paired bootstrap resamples."""
    return np.array([np.nan if (f1 := f1_of_counts([row])) is None else f1 for row in np.atleast_2d(summed)], dtype=np.float64)


def _f1_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def number_f1(targets: dict[str, float]) -> Judge:
    """Corpus number F1 of MBR outputs (under each utility of ``targets``) minus beam's against the paper's difference."""
    def judge_it(c: Claim, ev: Evidence) -> Verdict:
        parts, figures = [], []
        for utility, target in targets.items():
            counts = ((ev.sensitivity or {}).get(utility) or {}).get("number_f1")
            if not counts:
                parts.append((NOT_TESTABLE, f"MBR {utility}: the sensitivity analysis kept no number counts (it ran before it did)"))
                continue
            b, m = np.asarray(counts["beam"]["counts"], dtype=np.float64), np.asarray(counts["mbr"]["counts"], dtype=np.float64)
            found = paired_effect(b, m, _f1_of_resamples, False, POINTS)
            if math.isnan(found.value):  # no number in any source or output: F1 is undefined
                parts.append((NOT_TESTABLE, f"MBR {utility}: no number in the sentences' sources or outputs"))
                continue
            parts.append(part(f"MBR {utility}", found, target))
            if not figures:
                figures.append(f"reference {_f1_text(counts['reference']['f1'])}, beam {_f1_text(counts['beam']['f1'])}")
            figures.append(f"MBR {utility} {_f1_text(counts['mbr']['f1'])}")
        if all(v == NOT_TESTABLE for v, _ in parts):
            return c.missing("; ".join(why for _, why in parts))
        out = c.of_parts(parts)
        out.simpe = "number F1: " + ", ".join(figures) + f" ({len(b)} dev sentences with a number or a named entity)"
        return out

    return judge_it
