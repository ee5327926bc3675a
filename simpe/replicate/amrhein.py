"""The claims of Amrhein and Sennrich (2022) that simpe's sensitivity analysis measures (``simpe.measure.sensitivity``): a
utility's MBR-based sensitivity to a changed number or named entity against a changed noun (one claim per utility,
``mbr_sensitivity``; the same with the reference as the support, ``references_support``), the controls (a copy of the
source, a hallucination: ``controls``), and the number F1 of MBR and beam search outputs (``number_f1``, ``beam_f1``).

Each figure is compared with the paper's en-de row (Appendix C, Tables 6 and 7, lines 288-291 and 300-303: simpe
translates en→de), the mean of its four changes; the "average" row (lines 292, 304) pools de-en and en-de and is shown
beside. The intervals resample source sentences: one sentence's changes (add, del, sub, whole of a word of each kind)
are a cluster, drawn together (``verdicts.clustered_difference``); ``n`` counts source sentences.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from simpe.measure.sensitivity import number_f1 as f1_of_counts
from simpe.replicate.judges import AWAITS, FACTOR_RULE, Claim, Evidence, Judge, Lookup, Verdict, cite, digest, part
from simpe.replicate.papers import AMRHEIN2022, ENDE_KINDS, POINTS, QUOTES, show
from simpe.replicate.verdicts import NOT_TESTABLE, Effect, Judged, band_around, clustered_difference, judge, mean_effect, paired_effect

FAMILIES = {"num": "a changed number", "NE": "a changed named entity"}
SENTENCES = "source sentences"
TABLES = {"chrf++": "t7", "sbleu": "t6"}


def ende_mean(table: str, family: str, refs: bool = False) -> float:
    """The paper's en-de figure of a family: the mean of its four changes (add, del, sub, whole) in Table 6 or 7."""
    support = "_refs" if refs else ""
    return sum(QUOTES[f"amrhein2022.{table}.ende{support}.{k}.{family}"].value or 0.0 for k in ENDE_KINDS) / len(ENDE_KINDS)


def ende_keys(table: str, families: tuple[str, ...], refs: bool = False) -> list[str]:
    support = "_refs" if refs else ""
    return [f"amrhein2022.{table}.ende{support}.{k}.{f}" for f in families for k in ENDE_KINDS]


def _clustered(result: dict[str, Any], prefix: str, family: str) -> tuple[list[tuple[float, str]], bool]:
    """Every change of a family as (value, its source sentence), and whether the records name each change's sentence.

    Records from before the sentences were kept: every change that applies to every sentence with such a word (add,
    sub and whole always do) holds one value per sentence, in sentence order, so they are aligned by position; a change
    that applies to fewer (del, of a word too short) cannot be placed, and each of its values is a unit of its own."""
    kinds = {kind: row for kind, row in result.items() if kind.startswith(prefix) and row.get("values")}
    if all(row.get("sentence") for row in kinds.values()):
        return [(v, f"s{i}") for row in kinds.values() for v, i in zip(row["values"], row["sentence"])], True
    full = max((len(row["values"]) for row in kinds.values()), default=0)
    out = []
    for kind, row in kinds.items():
        aligned = len(row["values"]) == full
        out += [(v, f"{family}{j}" if aligned else f"{kind}{j}") for j, v in enumerate(row["values"])]
    return out, False


def _sentences(values: list[tuple[float, str]]) -> int:
    return len({c for _, c in values if not any(c.startswith(k) for k in ("numdel", "NEdel", "noundel"))})


def _family_effect(result: dict[str, Any], family: str, prefix: str = "") -> tuple[Effect, bool]:
    """Family minus nouns, mean difference to the MBR score, with an interval over source sentences."""
    a, named = _clustered(result, prefix + family, family)
    b, _ = _clustered(result, prefix + "noun", "noun")
    n = min(_sentences(a), _sentences(b))
    found = clustered_difference(a, b, POINTS, f"{SENTENCES} (the smaller family)")
    return Effect(found.value, found.low, found.high, n, POINTS, found.of), named


CLUSTERS = ("the records name no change's sentence (they predate it): add, sub and whole, which apply to every sentence "
            "with such a word, are aligned by position; the del changes, which apply to fewer, are resampled as units of "
            "their own; the next call records each change's sentence")


def _more_sensitive(families: tuple[str, ...], table: str, average: dict[str, float], refs: bool = False) -> Judge:
    def judge_it(c: Claim, result: dict[str, Any]) -> Verdict:
        changes = result["references_support"] if refs else result["changes"]
        if not changes.get("nounadd", {}).get("values") or not all(changes.get(f"{f}add", {}).get("values") for f in families):
            return c.missing("no per-sentence values (or no sentence had a word of every kind): "
                             + ", ".join(f"{k} {v}" for k, v in result["pools"].items()))
        parts, named = [], True
        for f in families:
            target = round(ende_mean(table, f, refs) - ende_mean(table, "noun", refs), 2)
            found, named = _family_effect(changes, f)
            band = band_around(target)
            verdict, why = judge(found, target, band)
            beside = "" if refs else f"; the average row (de-en and en-de pooled): {average[f]:+g}"
            parts.append(Judged(verdict, f"{f} − nouns: {why}{beside}", True, found, band))
        out = c.of_parts(parts)
        alt = result["changes"].get("alternative", {}).get("mean")
        out.simpe += f"; alternative (beam output) {alt:+.2f}" if alt is not None and not refs else ""
        out.why += (f". simpe's named entities are the {result['pools'].get('NE')} capitalised words of the references that "
                    "the source holds too, written the same: LibreOffice's product and menu names copied from the source, not "
                    "the paper's person names (spaCy's entities of type person, line 135)")
        if not named:
            out.why += f"; {CLUSTERS}"
        return out

    return judge_it


REFS_AWAITS = (f"{AWAITS}: the sensitivity analysis with the reference as the support (each sentence's beam output and "
               "its changes scored against the reference; simpe.measure.sensitivity.analyse records it now)")


def _sensitivity(utility: str) -> Lookup:
    return Lookup(lambda ev: (ev.sensitivity or {}).get(utility), ("mbr-sensitivity",), "the sensitivity analysis did not run")


def mbr_sensitivity(cid: str, utility: str, families: tuple[str, ...]) -> Claim:
    """The claim that ``utility`` is more sensitive to the changes of ``families`` (num, NE) than to a changed noun, judged
    against the paper's en-de row of Table 6 (BLEU) or 7 (chrF++), with the samples as the support."""
    table = TABLES[utility]
    keys = [f"amrhein2022.{table}.numbers", f"amrhein2022.{table}.nes", f"amrhein2022.{table}.nouns"]
    nouns = QUOTES[keys[2]].value or 0.0
    average = {f: round((QUOTES[keys[0 if f == 'num' else 1]].value or 0.0) - nouns, 2) for f in families}
    targets = {f: round(ende_mean(table, f) - ende_mean(table, "noun"), 2) for f in families}
    return Claim(
        cid, f"{utility} is more sensitive to " + " or ".join(FAMILIES[f] for f in families) + " than to a changed noun.",
        cite(AMRHEIN2022, f"Appendix C, {QUOTES[keys[0]].table.split(' (')[0]} (MBR-based sensitivity, samples as support), en-de rows"),
        show(*ende_keys(table, (*families, "noun")), *keys, f"amrhein2022.{table}.alt_ende"),
        "mean difference to the reference's MBR score, family minus nouns, utility points, against the paper's en-de row (the "
        "mean of its four changes: " + ", ".join(f"{f} {v:+g}" for f, v in targets.items()) + "; the average row, which pools "
        "de-en: " + ", ".join(f"{f} {v:+g}" for f, v in average.items()) + f"); {FACTOR_RULE}; the interval resamples source "
        "sentences (each sentence's changes together). simpe's 'alternative' control is the model's beam output (the data has "
        "one reference) and tends to score above the reference; the paper's is a second human translation, below it",
        _more_sensitive(families, table, average), _sensitivity(utility))


def references_support(cid: str) -> Claim:
    """With the reference as the support (the paper: two references), the changes made to the beam output."""
    parts = {"chrf++": ("NE",), "sbleu": ("num", "NE")}
    targets = {u: {f: round(ende_mean(TABLES[u], f, True) - ende_mean(TABLES[u], "noun", True), 2) for f in fs} for u, fs in parts.items()}

    def judge_it(c: Claim, ev: Evidence) -> Verdict | None:
        rows: list[Judged] = []
        for utility, families in parts.items():
            result = (ev.sensitivity or {}).get(utility)
            if not result:
                return None
            if "references_support" not in result:
                return c.missing(REFS_AWAITS)
            for f in families:
                found, _ = _family_effect(result["references_support"], f)
                if math.isnan(found.value):
                    rows.append(Judged(NOT_TESTABLE, f"{utility} {f} − nouns: no sentence's beam output had such a word"))
                    continue
                rows.append(part(f"{utility} {f} − nouns", found, targets[utility][f]))
        return c.of_parts(rows)

    return Claim(
        cid, "With references as the support, sentence BLEU and chrF++ stay more sensitive to a changed number or named entity "
        "than to a changed noun.",
        cite(AMRHEIN2022, "Section 6 and Appendix C, Tables 6 and 7 (references as support), en-de rows"),
        show(*ende_keys("t7", ("NE", "noun"), True), *ende_keys("t6", ("num", "NE", "noun"), True)),
        "the changes made to each sentence's beam output, scored against the reference as the support (the paper: the two "
        "human references; the data here has one), family minus nouns, utility points, against the paper's en-de row (the "
        "mean of its four changes: " + "; ".join(f"{u} " + ", ".join(f"{f} {v:+g}" for f, v in t.items()) for u, t in targets.items())
        + f"); {FACTOR_RULE}; the interval resamples source sentences",
        judge_it, Lookup(lambda ev: ev if ev.sensitivity else None, ("mbr-sensitivity",), "the sensitivity analysis did not run"))


def controls(cid: str) -> Claim:
    """A copy of the source and a hallucination lose far more MBR score than the targeted changes; the hallucination most."""
    def judge_it(c: Claim, ev: Evidence) -> Verdict | None:
        rows: list[Judged] = []
        for utility, table in TABLES.items():
            changes = ((ev.sensitivity or {}).get(utility) or {}).get("changes") or {}
            copy, hallucination = changes.get("copy", {}).get("values"), changes.get("hallucination", {}).get("values")
            if not copy or not hallucination:
                return None
            paper_copy = QUOTES[f"amrhein2022.{table}.ende.copy"].value or 0.0
            paper_hall = QUOTES[f"amrhein2022.{table}.ende.hallucination"].value or 0.0
            rows.append(part(f"{utility} copy", mean_effect(copy, POINTS, SENTENCES), paper_copy))
            rows.append(part(f"{utility} hallucination", mean_effect(hallucination, POINTS, SENTENCES), paper_hall))
            gap = [h - k for h, k in zip(hallucination, copy)]
            rows.append(part(f"{utility} hallucination − copy", mean_effect(gap, POINTS, SENTENCES), round(paper_hall - paper_copy, 2)))
        return c.of_parts(rows)

    return Claim(
        cid, "The controls lose far more MBR score than any targeted change: the hallucination most, then the copied source.",
        cite(AMRHEIN2022, "Section 6 (line 202) and Appendix C, Tables 6 and 7, en-de rows (samples as support)"),
        show("amrhein2022.controls.text", "amrhein2022.t6.ende.copy", "amrhein2022.t6.ende.hallucination", "amrhein2022.t7.ende.copy",
             "amrhein2022.t7.ende.hallucination"),
        "each control's mean difference to the reference's MBR score, utility points, and the hallucination's minus the copy's "
        f"(paired per sentence), against the paper's en-de row; {FACTOR_RULE}; intervals over the 100 source sentences. simpe's "
        "hallucination is another dev sentence's reference, the paper's a sentence from a larger corpus",
        judge_it, Lookup(lambda ev: ev if ev.sensitivity else None, ("mbr-sensitivity",), "the sensitivity analysis did not run"))


def _f1_of_resamples(summed: np.ndarray) -> np.ndarray:
    """``simpe.measure.sensitivity.number_f1`` of each row of summed [matched, in the outputs, in the sources] counts, NaN where
    it is undefined (no number in any source or output): the score the paired bootstrap resamples."""
    return np.array([np.nan if (f1 := f1_of_counts([row])) is None else f1 for row in np.atleast_2d(summed)], dtype=np.float64)


def _f1_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def number_f1(targets: dict[str, float]) -> Judge:
    """Corpus number F1 of MBR outputs (under each utility of ``targets``) minus beam's against the paper's difference."""
    def judge_it(c: Claim, ev: Evidence) -> Verdict:
        parts, figures = [], []
        sentences = 0
        for utility, target in targets.items():
            counts = ((ev.sensitivity or {}).get(utility) or {}).get("number_f1")
            if not counts:
                parts.append(Judged(NOT_TESTABLE, f"MBR {utility}: the sensitivity analysis kept no number counts (it ran before it did)"))
                continue
            b, m = np.asarray(counts["beam"]["counts"], dtype=np.float64), np.asarray(counts["mbr"]["counts"], dtype=np.float64)
            sentences = len(b)
            found = paired_effect(b, m, _f1_of_resamples, False, POINTS, of="sentences")
            if math.isnan(found.value):  # no number in any source or output: F1 is undefined
                parts.append(Judged(NOT_TESTABLE, f"MBR {utility}: no number in the sentences' sources or outputs"))
                continue
            parts.append(part(f"MBR {utility}", found, target))
            if not figures:
                figures.append(f"reference {_f1_text(counts['reference']['f1'])}, beam {_f1_text(counts['beam']['f1'])}")
            figures.append(f"MBR {utility} {_f1_text(counts['mbr']['f1'])}")
        if all(p.verdict == NOT_TESTABLE for p in parts):
            return c.missing("; ".join(p.why for p in parts))
        out = c.of_parts(parts)
        out.simpe = "number F1: " + ", ".join(figures) + f" ({sentences} dev sentences with a number or a named entity)"
        return out

    return judge_it


def beam_f1(c: Claim, ev: Evidence) -> Verdict | None:
    """Beam search's corpus number F1 beside the reference's (Table 2's first two rows), measured: a probe, not a claim.
    The reference's F1 against the source is 100 on these sentences, so beam search cannot score above it: the row
    could not pass, and the paper makes no such claim (its finding is beam above MBR, ``number_f1``)."""
    counts = next((r.get("number_f1") for r in (ev.sensitivity or {}).values() if r.get("number_f1")), None)
    if not counts:
        return None
    ref, beam = (np.asarray(counts[k]["counts"], dtype=np.float64) for k in ("reference", "beam"))
    found = paired_effect(ref, beam, _f1_of_resamples, False, POINTS, of="sentences")
    if math.isnan(found.value):
        return c.missing("no number in the sentences' sources or outputs")
    out = c.measured(f"number F1 against the source: reference {_f1_text(counts['reference']['f1'])}, beam "
                     f"{_f1_text(counts['beam']['f1'])}, beam − reference {found.show()} ({len(ref)} dev sentences)",
                     f"a probe, not a claim: the reference's number F1 is {_f1_text(counts['reference']['f1'])} here (the "
                     "LibreOffice references are independent translations of the English help that copy its numbers; "
                     "docs/terms.md), so no output can score above it and the row could not pass; the paper's finding on "
                     "numbers is beam above MBR (line 141), which amrhein2022-f1 tests")
    out.evidence = digest(ref, beam)
    return out
