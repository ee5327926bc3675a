"""The four papers simpe replicates, and every figure the replication page quotes from them, read as printed.

A ``Quote`` is one figure of one paper: its table or figure, row, column, value, unit and the
line of the paper's plain-text file it comes from, with the excerpt of that line that ends in
the figure (``tests/unit/test_paper_quotes.py`` checks each against the text files). The text
files come from PDF extraction and print some tables oddly; how they were read:

* Simianer, Wuebker & DeNero (2019): a table's numbers follow the *next* caption. Table 2 (R
  metrics on Autodesk) is printed only inside Table 5's Autodesk block (line 144): the baseline
  in absolute figures, the methods as relative changes in percent (the same block's BLEU/SBLEU/TER
  are Table 1's as relative changes: full 47.0 / 40.3 = +17 %). Table 3 (truly novel words) is the
  block at line 120, Table 4 (subwords, all tokens: footnote at line 149) the block at line 139.
* Yan et al. (2022): kRG with a *linear* gain (Eq. 14-15) in its tables (Table 2, Table 9), figures
  that match the *exponential* gain in its running text (line 461: random 58.72, ConvS2S 63.08,
  RNNSearch 66.16). Each kRG quote names its gain. kQRG under COMET is in COMET z-score points x 100.

Nothing here runs an experiment; ``claims.py`` compares these figures with simpe's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

POINTS, RELATIVE, COEFFICIENT, COUNT, TEXT = "points", "relative %", "coefficient", "count", "text"
UNITS = (POINTS, RELATIVE, COEFFICIENT, COUNT, TEXT)


@dataclass(frozen=True)
class Paper:
    """One paper as its text file prints it (the files print no venue; Simianer et al.'s prints no authors either)."""

    key: str  # simianer2019, yan2021, yan2022, amrhein2022
    cite: str  # "Simianer et al. (2019)"
    authors: str
    year: int
    title: str
    seed_file: str  # its plain-text file in ../shared/seeds/ (the project's copy of the paper)


PAPERS: dict[str, Paper] = {p.key: p for p in (
    Paper("simianer2019", "Simianer et al. (2019)", "Patrick Simianer, Joern Wuebker and John DeNero", 2019,
          "Measuring Immediate Adaptation Performance for Neural Machine Translation", "002_4b22486fd27f7e57.txt"),
    Paper("yan2021", "Yan et al. (2021)", "Jianhao Yan, Chenming Wu, Fandong Meng and Jie Zhou", 2021,
          "Rethinking the Evaluation of Neural Machine Translation", "003_6683a865c932ace3.txt"),
    Paper("yan2022", "Yan et al. (2022)", "Jianhao Yan, Chenming Wu, Fandong Meng and Jie Zhou", 2022,
          "Digging Errors in NMT: Evaluating and Understanding Model Errors from Partial Hypothesis Space",
          "000_24906b7378341a8c.txt"),
    Paper("amrhein2022", "Amrhein and Sennrich (2022)", "Chantal Amrhein and Rico Sennrich", 2022,
          "Identifying Weaknesses in Machine Translation Metrics Through Minimum Bayes Risk Decoding: A Case Study for COMET",
          "001_2efc28e3becb611e.txt"),
)}
SLIDES = "004_452c8bddbc1df5ff.txt"  # lecture slides (CS60075 NLP, 2020, Module 7: NMT): background, no findings


@dataclass(frozen=True)
class Quote:
    """One figure of one paper, as printed.

    value: the figure in ``unit`` (None for a statement without a figure, unit ``text``); line: 1-based line of the
    paper's text file; excerpt: the exact text of that line that ends in the figure as printed (or holds the statement).
    gain: for kRG, the gain its scale matches (``linear`` or ``exp``).
    """

    paper: str
    table: str  # "Table 5, Autodesk block" / "Figure 1b" / "Section 5.2.1"
    row: str
    column: str
    value: float | None
    unit: str
    line: int
    excerpt: str
    gain: str | None = None

    def __post_init__(self) -> None:
        assert self.paper in PAPERS and self.unit in UNITS, (self.paper, self.unit)

    def show(self) -> str:
        """``41.0 (Table 5, Autodesk block, baseline, R0+1; points; line 144)``."""
        where = ", ".join(x for x in (self.table, self.row, self.column) if x)
        unit = self.unit + (f", {self.gain} gain" if self.gain else "")
        if self.value is None:
            return f"{where} (line {self.line})"
        sign = "+" if self.unit == RELATIVE and self.value > 0 else ""
        return f"{sign}{_num(self.value)} ({where}; {unit}; line {self.line})"


def _num(value: float) -> str:
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return text if "." in text or abs(value) >= 1 or value == 0 else f"{value:.3f}"


NUMBER = re.compile(r"[-−]?\s?\d+(?:\.\d+)?$")


def printed_value(excerpt: str) -> float:
    """The number an excerpt ends in, as the text prints it ("- 9" is -9; "+94.19" is 94.19)."""
    found = NUMBER.search(excerpt.rstrip(" %"))
    if not found:
        raise ValueError(f"{excerpt!r} does not end in a number")
    return float(found.group(0).replace("−", "-").replace(" ", ""))


SIMIANER2019, YAN2021, YAN2022, AMRHEIN2022 = "simianer2019", "yan2021", "yan2022", "amrhein2022"  # the keys of PAPERS
# Table 2 (R0, R1, R0+1 on Autodesk) is printed only in relative form, as Table 5's Autodesk block (its baseline row in
# absolute figures); the same block's BLEU, SBLEU and TER are Table 1's as relative changes
T5 = "Table 5, Autodesk block"
_T5_HEAD = "Autodesk BLEU SBLEU TER R0 +1 R0 R1 baseline 40.3 49.3 45.2 41.0 39.3 44.9 "
_T5_ROWS = "bias 0 0 0 0 0 1 full 17 13 -3 1 - 9 22 lasso 15 10 -6 4 3 8 fixed 17 13 - 9 0 -9 16 top 7 10 10 -2 -9 12"


def _t5(row: str, column: str, value: float, tail: str) -> Quote:
    """A method's relative change on Autodesk, Table 5's Autodesk block (line 144); ``tail`` ends where the figure does."""
    return Quote(SIMIANER2019, T5, row, column, value, RELATIVE, 144, _T5_HEAD + _T5_ROWS[: _T5_ROWS.index(tail) + len(tail)])


# Amrhein and Sennrich (2022), Appendix C, Tables 6 (BLEU) and 7 (chrF++): the en-de rows (lines 288-291, 300-303), each
# row a change (add, del, sub, whole) with Numbers, NEs, Nouns under samples as support, then under references as support,
# then a control (samples, references); the paper's "average" row (lines 292, 304) pools de-en and en-de
_ENDE_T6 = ["en-de add -1.62 -1.41 -0.88 -4.10 -3.56 -2.73 altern. -0.33", "del -1.65 -1.37 -0.88 -4.24 -3.58 -2.73 copy -6.02 -20.06",
            "sub -1.57 -1.41 -0.86 -4.09 -3.71 -2.75 hallucin. -6.71 -21.14", "whole -1.62 -1.72 -0.90 -4.10 -4.41 -2.79"]
_ENDE_T7 = ["en-de add -0.88 -1.25 -0.80 -2.28 -2.04 -1.52 altern. -0.73", "del -1.10 -1.47 -0.94 -1.89 -2.37 -1.78 copy -19.13 -32.68",
            "sub -1.08 -1.51 -0.96 -1.87 -2.44 -1.81 hallucin. -24.96 -42.11", "whole -1.33 -3.72 -1.98 -2.28 -5.81 -3.68"]
ENDE_KINDS, ENDE_FAMILIES = ("add", "del", "sub", "whole"), ("num", "NE", "noun")
_ENDE_NAMES = {"t6": "Table 6 (BLEU)", "t7": "Table 7 (chrF++)"}
_FAMILY_COLUMNS = {"num": "Numbers", "NE": "NEs", "noun": "Nouns"}


def _ende(table: str, first: int, rows: list[str]) -> dict[str, Quote]:
    """The en-de rows of Table 6 or 7 as quotes: ``amrhein2022.<table>.ende[_refs].<kind>.<family>`` (samples or references
    as support) and the controls ``amrhein2022.<table>.ende[_refs].<copy|hallucination>``."""
    out = {}
    for offset, (kind, row) in enumerate(zip(ENDE_KINDS, rows)):
        words = row.split(" ")
        start = 2 if offset == 0 else 1  # the first row begins "en-de add"
        for j, support in enumerate(("", "_refs")):
            for f, family in enumerate(ENDE_FAMILIES):
                at = start + 3 * j + f
                out[f"amrhein2022.{table}.ende{support}.{kind}.{family}"] = Quote(
                    AMRHEIN2022, _ENDE_NAMES[table], f"en-de {kind}",
                    f"{_FAMILY_COLUMNS[family]} ({'references' if support else 'samples'} as support)",
                    float(words[at]), POINTS, first + offset, " ".join(words[: at + 1]))
        control = {"del": "copy", "sub": "hallucination"}.get(kind)
        if control is not None:
            at = start + 7
            for j, support in enumerate(("", "_refs")):
                out[f"amrhein2022.{table}.ende{support}.{control}"] = Quote(
                    AMRHEIN2022, _ENDE_NAMES[table], "en-de", f"{control} (control, {'references' if support else 'samples'} as support)",
                    float(words[at + j]), POINTS, first + offset, " ".join(words[: at + j + 1]))
    return out


QUOTES: dict[str, Quote] = {
    # ------------------------------------------------------------ Simianer et al. (2019)
    "simianer2019.t1.bleu.baseline": Quote(SIMIANER2019, "Table 1", "baseline", "BLEU", 40.3, POINTS, 135, "Method BLEU SBLEU TER baseline 40.3"),
    "simianer2019.t1.bleu.bias": Quote(SIMIANER2019, "Table 1", "bias", "BLEU", 40.4, POINTS, 135, "45.2 bias 40.4"),
    "simianer2019.t1.bleu.full": Quote(SIMIANER2019, "Table 1", "full", "BLEU", 47.0, POINTS, 135, "45.0 full 47.0"),
    "simianer2019.t1.bleu.lasso": Quote(SIMIANER2019, "Table 1", "lasso", "BLEU", 46.3, POINTS, 135, "44.0 lasso 46.3"),
    "simianer2019.t1.bleu.fixed": Quote(SIMIANER2019, "Table 1", "fixed", "BLEU", 47.1, POINTS, 135, "42.6 fixed 47.1"),
    "simianer2019.t1.bleu.top": Quote(SIMIANER2019, "Table 1", "top", "BLEU", 43.2, POINTS, 135, "41.0 top 43.2"),
    "simianer2019.t1.sbleu.full": Quote(SIMIANER2019, "Table 1", "full", "SBLEU", 55.9, POINTS, 135, "full 47.0 55.9"),
    "simianer2019.t1.sbleu.lasso": Quote(SIMIANER2019, "Table 1", "lasso", "SBLEU", 54.3, POINTS, 135, "lasso 46.3 54.3"),
    "simianer2019.t1.sbleu.fixed": Quote(SIMIANER2019, "Table 1", "fixed", "SBLEU", 55.5, POINTS, 135, "fixed 47.1 55.5"),
    "simianer2019.t1.ter.full": Quote(SIMIANER2019, "Table 1", "full", "TER", 44.0, POINTS, 135, "full 47.0 55.9 44.0"),
    "simianer2019.t1.ter.lasso": Quote(SIMIANER2019, "Table 1", "lasso", "TER", 42.6, POINTS, 135, "lasso 46.3 54.3 42.6"),
    "simianer2019.t1.ter.fixed": Quote(SIMIANER2019, "Table 1", "fixed", "TER", 41.0, POINTS, 135, "fixed 47.1 55.5 41.0"),
    "simianer2019.t1.similar": Quote(SIMIANER2019, "Section 5 (Results)", "", "", None, TEXT, 105,
                            "BLEU , sentence BLEU , and TER scores ( Table 1 ) are similar for full adaptation , sparse adaptation "
                            "with group lasso , and adaptation of a fixed"),
    "simianer2019.t2.r01.baseline": Quote(SIMIANER2019, T5, "baseline", "R0+1", 41.0, POINTS, 144, _T5_HEAD[:-11]),
    "simianer2019.t2.r0.baseline": Quote(SIMIANER2019, T5, "baseline", "R0", 39.3, POINTS, 144, _T5_HEAD[:-6]),
    "simianer2019.t2.r1.baseline": Quote(SIMIANER2019, T5, "baseline", "R1", 44.9, POINTS, 144, _T5_HEAD[:-1]),
    "simianer2019.t5.bleu.bias": _t5("bias", "BLEU", 0, "bias 0"),
    "simianer2019.t5.bleu.full": _t5("full", "BLEU", 17, "bias 0 0 0 0 0 1 full 17"),
    "simianer2019.t5.bleu.lasso": _t5("lasso", "BLEU", 15, "bias 0 0 0 0 0 1 full 17 13 -3 1 - 9 22 lasso 15"),
    "simianer2019.t5.bleu.fixed": _t5("fixed", "BLEU", 17, "full 17 13 -3 1 - 9 22 lasso 15 10 -6 4 3 8 fixed 17"),
    "simianer2019.t5.r01.bias": _t5("bias", "R0+1", 0, "bias 0 0 0 0"),
    "simianer2019.t5.r01.full": _t5("full", "R0+1", 1, "bias 0 0 0 0 0 1 full 17 13 -3 1"),
    "simianer2019.t5.r01.lasso": _t5("lasso", "R0+1", 4, "full 17 13 -3 1 - 9 22 lasso 15 10 -6 4"),
    "simianer2019.t5.r01.fixed": _t5("fixed", "R0+1", 0, "lasso 15 10 -6 4 3 8 fixed 17 13 - 9 0"),
    "simianer2019.t5.r01.top": _t5("top", "R0+1", -2, "fixed 17 13 - 9 0 -9 16 top 7 10 10 -2"),
    "simianer2019.t5.r0.bias": _t5("bias", "R0", 0, "bias 0 0 0 0 0"),
    "simianer2019.t5.r0.full": _t5("full", "R0", -9, "bias 0 0 0 0 0 1 full 17 13 -3 1 - 9"),
    "simianer2019.t5.r0.lasso": _t5("lasso", "R0", 3, "full 17 13 -3 1 - 9 22 lasso 15 10 -6 4 3"),
    "simianer2019.t5.r0.fixed": _t5("fixed", "R0", -9, "lasso 15 10 -6 4 3 8 fixed 17 13 - 9 0 -9"),
    "simianer2019.t5.r0.top": _t5("top", "R0", -9, "fixed 17 13 - 9 0 -9 16 top 7 10 10 -2 -9"),
    "simianer2019.t5.r1.bias": _t5("bias", "R1", 1, "bias 0 0 0 0 0 1"),
    "simianer2019.t5.r1.full": _t5("full", "R1", 22, "bias 0 0 0 0 0 1 full 17 13 -3 1 - 9 22"),
    "simianer2019.t5.r1.lasso": _t5("lasso", "R1", 8, "full 17 13 -3 1 - 9 22 lasso 15 10 -6 4 3 8"),
    "simianer2019.t5.r1.fixed": _t5("fixed", "R1", 16, "lasso 15 10 -6 4 3 8 fixed 17 13 - 9 0 -9 16"),
    "simianer2019.t5.r1.top": _t5("top", "R1", 12, "fixed 17 13 - 9 0 -9 16 top 7 10 10 -2 -9 12"),
    "simianer2019.r0.degraded": Quote(SIMIANER2019, "Section 5 (Results)", "", "", None, TEXT, 107,
                             "Zero-shot recall is considerably degraded relative to the non-adapted baseline for both full and "
                             "adaptation of a fixed subset of tensors ( fixed and top )"),
    "simianer2019.r0.lasso_only": Quote(SIMIANER2019, "Section 5 (Results)", "", "", None, TEXT, 110,
                               "The lasso technique is the only one that shows an improvement in R0 over the baseline"),
    "simianer2019.r1.lasso_low": Quote(SIMIANER2019, "Section 5 (Results)", "", "", None, TEXT, 111,
                              "lasso has considerably lower one - shot recall compared to the other adaptation methods"),
    "simianer2019.r1.tradeoff": Quote(SIMIANER2019, "Section 5 (Results)", "", "", None, TEXT, 109,
                                      "These approaches trade off long-term gains in BLEU and high one - shot recall for low zero-shot recall"),
    "simianer2019.r01.lasso_best": Quote(SIMIANER2019, "Section 5 (Results)", "", "", None, TEXT, 106,
                                "lasso substantially outperforms the other methods in zero-shot ( R0 ) , and combined zero-and "
                                "oneshot recall of content words ( R0 + 1 )"),
    # Table 3: truly novel words (310 occurrences, line 119), the block printed at line 120
    "simianer2019.t3.r0.baseline": Quote(SIMIANER2019, "Table 3 (block at line 120)", "baseline", "R0", 27.1, POINTS, 120, "baseline 27.1"),
    "simianer2019.t3.r1.baseline": Quote(SIMIANER2019, "Table 3 (block at line 120)", "baseline", "R1", 40.7, POINTS, 120, "baseline 27.1 40.7"),
    "simianer2019.t3.r0.full": Quote(SIMIANER2019, "Table 3 (block at line 120)", "full", "R0", 26.1, POINTS, 120, "29.9 full 26.1"),
    "simianer2019.t3.r1.full": Quote(SIMIANER2019, "Table 3 (block at line 120)", "full", "R1", 63.0, POINTS, 120, "29.9 full 26.1 63.0"),
    "simianer2019.t3.r0.lasso": Quote(SIMIANER2019, "Table 3 (block at line 120)", "lasso", "R0", 31.9, POINTS, 120, "33.8 lasso 31.9"),
    "simianer2019.t3.r1.lasso": Quote(SIMIANER2019, "Table 3 (block at line 120)", "lasso", "R1", 53.1, POINTS, 120, "33.8 lasso 31.9 53.1"),
    "simianer2019.t3.r01.baseline": Quote(SIMIANER2019, "Table 3 (block at line 120)", "baseline", "R0+1", 29.9, POINTS, 120, "baseline 27.1 40.7 29.9"),
    "simianer2019.t3.r01.full": Quote(SIMIANER2019, "Table 3 (block at line 120)", "full", "R0+1", 33.8, POINTS, 120, "29.9 full 26.1 63.0 33.8"),
    "simianer2019.t3.r01.lasso": Quote(SIMIANER2019, "Table 3 (block at line 120)", "lasso", "R0+1", 36.3, POINTS, 120,
                                       "33.8 lasso 31.9 53.1 36.3"),
    "simianer2019.t3.occurrences": Quote(SIMIANER2019, "Section 6 (Analysis)", "", "novel-word occurrences", 310, COUNT, 119, "which is only 310"),
    # Table 4: subwords, all tokens (footnote 8, line 149), the block printed at line 139
    "simianer2019.t4.r0.baseline": Quote(SIMIANER2019, "Table 4 (block at line 139)", "baseline", "R0", 44.1, POINTS, 139, "baseline 44.1"),
    "simianer2019.t4.r0.full": Quote(SIMIANER2019, "Table 4 (block at line 139)", "full", "R0", 40.4, POINTS, 139, "45.5 full 40.4"),
    "simianer2019.t4.r0.lasso": Quote(SIMIANER2019, "Table 4 (block at line 139)", "lasso", "R0", 43.7, POINTS, 139, "45.4 lasso 43.7"),
    "simianer2019.t4.r1.baseline": Quote(SIMIANER2019, "Table 4 (block at line 139)", "baseline", "R1", 48.1, POINTS, 139, "baseline 44.1 48.1"),
    "simianer2019.t4.r01.baseline": Quote(SIMIANER2019, "Table 4 (block at line 139)", "baseline", "R0+1", 45.5, POINTS, 139,
                                          "baseline 44.1 48.1 45.5"),
    "simianer2019.t4.r1.full": Quote(SIMIANER2019, "Table 4 (block at line 139)", "full", "R1", 54.6, POINTS, 139, "45.5 full 40.4 54.6"),
    "simianer2019.t4.r01.full": Quote(SIMIANER2019, "Table 4 (block at line 139)", "full", "R0+1", 45.4, POINTS, 139, "45.5 full 40.4 54.6 45.4"),
    "simianer2019.t4.r1.lasso": Quote(SIMIANER2019, "Table 4 (block at line 139)", "lasso", "R1", 51.7, POINTS, 139, "45.4 lasso 43.7 51.7"),
    "simianer2019.t4.r01.lasso": Quote(SIMIANER2019, "Table 4 (block at line 139)", "lasso", "R0+1", 46.5, POINTS, 139,
                                       "45.4 lasso 43.7 51.7 46.5"),
    "simianer2019.t4.text": Quote(SIMIANER2019, "Section 6 (Analysis)", "lasso", "R0", -1, RELATIVE, 121,
                         "R0 for the lasso method is degraded only slightly below the baseline ( - 1"),
    "simianer2019.r0.lasso_text": Quote(SIMIANER2019, "Section 6 (Analysis)", "lasso", "R0 (the regular metric)", 2, RELATIVE, 121,
                                        "R0 for the lasso method is degraded only slightly below the baseline ( - 1 % , compared to + 2"),
    "simianer2019.t4.all_tokens": Quote(SIMIANER2019, "footnote 8", "", "", None, TEXT, 149,
                                        "Note that this includes all tokens , not just parts of content words"),
    "simianer2019.lasso.budget": Quote(SIMIANER2019, "Section 5 (Experiments: lasso's budget)", "lasso", "parameters", None, TEXT, 100,
                              "we allow 1 M parameters excluding the embeddings , for which we allow 1 M parameters in total"),
    "simianer2019.model": Quote(SIMIANER2019, "Section 5 (Experiments: the model)", "", "", None, TEXT, 93,
                       "six layers in the encoder , three layers in the decoder , each with eight attention heads with "
                       "dimensionality 256 , distinct input and output embeddings , and vocabulary sizes of around 40,000"),
    # Table 5: lasso and full R0 on the other data sets (relative %, line 144)
    "simianer2019.t5.user1.r0.full": Quote(SIMIANER2019, "Table 5, User 1 block", "full", "R0", -7, RELATIVE, 144,
                                  "User 1 BLEU SBLEU TER R0 +1 R0 R1 baseline 35.7 55.2 52.4 44.3 42.8 50.3 bias 8 6 - 4 - 5 - 5 - 4 full 36 18 - 22 -4 - 7"),
    "simianer2019.t5.user1.r0.lasso": Quote(SIMIANER2019, "Table 5, User 1 block", "lasso", "R0", -1, RELATIVE, 144, "lasso 38 18 - 23 1 - 1"),
    "simianer2019.t5.user2.r0.full": Quote(SIMIANER2019, "Table 5, User 2 block", "full", "R0", -5, RELATIVE, 144, "full 0 5 5 -3 -5"),
    "simianer2019.t5.user2.r0.lasso": Quote(SIMIANER2019, "Table 5, User 2 block", "lasso", "R0", 0, RELATIVE, 144, "lasso 6 6 -6 2 0"),
    "simianer2019.t5.ted.r0.full": Quote(SIMIANER2019, "Table 5, TED block", "full", "R0", -6, RELATIVE, 144, "full 0 1 1 -3 - 6"),
    "simianer2019.t5.ted.r0.lasso": Quote(SIMIANER2019, "Table 5, TED block", "lasso", "R0", -3, RELATIVE, 144, "lasso 4 2 -2 - 1 -3"),
    "simianer2019.t5.patent.r0.full": Quote(SIMIANER2019, "Table 5, Patent block", "full", "R0", -5, RELATIVE, 144, "full 3 2 - 2 - 2 -5"),
    "simianer2019.t5.patent.r0.lasso": Quote(SIMIANER2019, "Table 5, Patent block", "lasso", "R0", -2, RELATIVE, 144, "lasso 4 2 -4 0 -2"),
    "simianer2019.fig2": Quote(SIMIANER2019, "Figure 2", "", "", None, TEXT, 130,
                      "Differences in cumulative scores for R0 ( top left ) , R1 ( top right ) , R0 +1 ( bottom left ) , and "
                      "BLEU ( bottom right ) to the baseline system on the Autodesk test set for full and lasso adaptation"),
    # ------------------------------------------------------------ Yan et al. (2021)
    "yan2021.t1.empty": Quote(YAN2021, "Table 1", "Transformer(base)", "# Empty", 64.70, POINTS, 200, "Transformer(base)\t27.22\t64.70"),
    "yan2021.t3.beam": Quote(YAN2021, "Table 3", "Transformer(base)", "Beam Search", 67.53, POINTS, 276, "Transformer(base)\t67.53"),
    "yan2021.t3.heap": Quote(YAN2021, "Table 3", "Transformer(base)", "Min-heap Beam Search", 2.20, POINTS, 276, "Transformer(base)\t67.53%\t2.20"),
    "yan2021.t3.empty_cause": Quote(YAN2021, "Section 5", "", "", None, TEXT, 291,
                                "This explains why many empty sentences are not captured by beam search algorithm"),
    "yan2021.beams": Quote(YAN2021, "Section 3.1 / Figure 1a", "", "", None, TEXT, 72,
                       "This figure clearly shows that a larger beam size leads to fewer search errors"),
    "yan2021.fig1b": Quote(YAN2021, "Section 3.1 / Figure 1b", "", "", None, TEXT, 72,
                       "The results demonstrate that the higher ranked candidates exhibit worse BLEU scores (see Figure 1b)"),
    "yan2021.fig1c": Quote(YAN2021, "Section 3.1 / Figure 1c", "", "", None, TEXT, 76,
                           "In contrast, the changes are random (see Figure 1c), which means a source sentence might be translated to a "
                           "better target sentence or a worse target sentence randomly when the beam size gets larger"),
    "yan2021.heap.theorem": Quote(YAN2021, "Section 5 (theorem)", "", "", None, TEXT, 295,
                                  "The target sentences in  $H$  are not worse than the target sentences in"),
    "yan2021.t4.beam_ln": Quote(YAN2021, "Table 4", "+ length normalization", "Beam Search", 26.72, POINTS, 285, "+ length normalization\t26.72"),
    "yan2021.t4.beam": Quote(YAN2021, "Table 4", "Transformer(base)", "Beam Search", 27.22, POINTS, 284, "Transformer(base)\t27.22"),
    "yan2021.t4.heap": Quote(YAN2021, "Table 4", "Transformer(base)", "Min-heap Beam Search", 0.40, POINTS, 284, "Transformer(base)\t27.22\t0.40"),
    "yan2021.t4.heap_ln": Quote(YAN2021, "Table 4", "+ length normalization", "Min-heap Beam Search", 26.73, POINTS, 285,
                            "+ length normalization\t26.72\t26.73"),
    "yan2021.t2.base": Quote(YAN2021, "Table 2", "Transformer(base)", "ME_RANK", 49.67, POINTS, 240, "Transformer(base)\t49.67"),
    "yan2021.t2.ln": Quote(YAN2021, "Table 2", "+ length normalization", "ME_RANK", 32.73, POINTS, 241, "+ length normalization\t<b>32.73"),
    "yan2021.t2.max": Quote(YAN2021, "Table 2", "+ max regularization", "ME_RANK", 37.12, POINTS, 242, "+ max regularization\t37.12"),
    "yan2021.t2.square": Quote(YAN2021, "Table 2", "+ square regularization", "ME_RANK", 36.15, POINTS, 243, "+ square regularization\t36.15"),
    "yan2021.t2.variance": Quote(YAN2021, "Table 2", "+ variance regularization", "ME_RANK", 35.47, POINTS, 244,
                                 "+ variance regularization\t35.47"),
    "yan2021.t2.greedy": Quote(YAN2021, "Table 2", "+ greedy regularization", "ME_RANK", 36.86, POINTS, 245, "+ greedy regularization\t36.86"),
    "yan2021.t2.best": Quote(YAN2021, "Section 4.3", "", "", None, TEXT, 251,
                             "We find that length normalization performs the best among all terms among all penalties"),
    # ------------------------------------------------------------ Yan et al. (2022)
    "yan2022.random.exp": Quote(YAN2022, "Appendix C.3 (running text)", "random", "kRG", 58.72, POINTS, 461,
                            "better than random ranking (58.72", gain="exp"),
    "yan2022.convs2s.exp": Quote(YAN2022, "Appendix C.3 (running text)", "ConvS2S", "kRG", 63.08, POINTS, 461,
                             "ConvSeq2Seq has a 63.08", gain="exp"),
    "yan2022.rnn.exp": Quote(YAN2022, "Appendix C.3 (running text)", "RNNSearch", "kRG", 66.16, POINTS, 461, "only scores 66.16", gain="exp"),
    "yan2022.t9.transformer": Quote(YAN2022, "Table 9", "Transformer", "kRG", 80.21, POINTS, 464, "Transformer 27.22 80.21", gain="linear"),
    "yan2022.t9.rnn": Quote(YAN2022, "Table 9", "RNNSearch", "kRG", 83.63, POINTS, 465, "RNNSearch 23.07 83.63", gain="linear"),
    "yan2022.t2.exact_krg": Quote(YAN2022, "Table 2", "6-layer", "Top Region kRG", 81.37, POINTS, 268, "6-layer 81.37", gain="linear"),
    "yan2022.t2.beam_krg_gap": Quote(YAN2022, "Table 2", "6-layer", "Beam Search kRG (difference to top region)", -0.55, POINTS, 268,
                                 "6-layer 81.37 -74.72 80.82-0.55", gain="linear"),
    "yan2022.t2.beam_krg_gap_min": Quote(YAN2022, "Table 2", "D384", "Beam Search kRG (difference)", -1.46, POINTS, 273,
                                     "D384 82.05 -86.18 80.59-1.46", gain="linear"),
    "yan2022.t2.beam_krg_gap_max": Quote(YAN2022, "Table 2", "D1024", "Beam Search kRG (difference)", 0.69, POINTS, 278,
                                     "D1024 80.57 -54.26 81.26+0.69", gain="linear"),
    "yan2022.t2.exact_kqrg": Quote(YAN2022, "Table 2", "6-layer", "Top Region kQRG (COMET)", -74.72, POINTS, 268, "6-layer 81.37 -74.72"),
    "yan2022.t2.beam_kqrg": Quote(YAN2022, "Table 2", "6-layer", "Beam Search kQRG (COMET)", 19.46, POINTS, 268,
                              "6-layer 81.37 -74.72 80.82-0.55 19.46"),
    "yan2022.t2.lucky": Quote(YAN2022, "Table 2", "6-layer", "Beam Search kQRG (difference, COMET)", 94.19, POINTS, 268,
                          "6-layer 81.37 -74.72 80.82-0.55 19.46+94.19"),
    "yan2022.t2.lucky_min": Quote(YAN2022, "Table 2", "D1024", "Beam Search kQRG (difference, COMET)", 77.52, POINTS, 278,
                              "D1024 80.57 -54.26 81.26+0.69 23.26+77.52"),
    "yan2022.t2.lucky_max": Quote(YAN2022, "Table 2", "D384", "Beam Search kQRG (difference, COMET)", 102.63, POINTS, 273,
                              "D384 82.05 -86.18 80.59-1.46 16.46+102.63"),
    "yan2022.lucky.text": Quote(YAN2022, "Section 5.2.1", "", "kQRG", 77, POINTS, 289, "a decent improvement (from +77"),
    "yan2022.beam_krg.text": Quote(YAN2022, "Section 5.2.1", "", "", None, TEXT, 291, "beam search generally does not affect ranking abilities"),
    "yan2022.top_region.text": Quote(YAN2022, "Section 5.1 / Figure 1", "", "", None, TEXT, 249,
                                 "kRG values are close to the random line when increasing k"),
    "yan2022.sampling.text": Quote(YAN2022, "Section 5.1 / Figure 1", "", "", None, TEXT, 249,
                               "the model outperforms the random line with a considerable gap"),
    "yan2022.k.random": Quote(YAN2022, "Appendix, Figure 4", "", "", None, TEXT, 589, "stay close to the random permutation results"),
    "yan2022.k.text": Quote(YAN2022, "Appendix, Figure 4", "", "", None, TEXT, 591, "Both of our metrics are not sensitive to the choice of k"),
    "yan2022.human.pearson": Quote(YAN2022, "Section 4 (human evaluation)", "kQRG vs human scores of top-5 lists", "Pearson", 0.8554,
                                   COEFFICIENT, 217, "The results are 0.8554"),
    "yan2022.human.spearman": Quote(YAN2022, "Section 4 (human evaluation)", "kQRG vs human scores of top-5 lists", "Spearman", 0.8506,
                                    COEFFICIENT, 217, "The results are 0.8554/0.8506"),
    "yan2022.t1.empty": Quote(YAN2022, "Table 1", "Transformer", "# Emp", 64.70, POINTS, 231, "Transformer 27.22 64.70"),
    "yan2022.t8.top_kqrg": Quote(YAN2022, "Table 8 (chrF)", "Transformer", "Top kQRG", 31.67, POINTS, 447, "Transformer 27.22 64.70 31.67"),
    "yan2022.t8.sample_kqrg": Quote(YAN2022, "Table 8 (chrF)", "Transformer", "Sample kQRG", 34.58, POINTS, 447,
                                "Transformer 27.22 64.70 31.67 34.58"),
    "yan2022.t3.ours": Quote(YAN2022, "Table 3", "Ours (sampled kQRG)", "Pearson", 0.977, COEFFICIENT, 299, "Ours 0.977"),
    "yan2022.t3.sampling": Quote(YAN2022, "Table 3", "Sampling (mean quality)", "Pearson", 0.975, COEFFICIENT, 298, "Sampling 0.975"),
    "yan2022.t3.beam": Quote(YAN2022, "Table 3", "Beam Search", "Pearson", -0.143, COEFFICIENT, 297, "Beam Search -0.143"),
    # ------------------------------------------------------------ Amrhein and Sennrich (2022)
    "amrhein2022.t7.numbers": Quote(AMRHEIN2022, "Table 7 (chrF++, samples as support)", "average", "Numbers", -1.32, POINTS, 304, "average -1.32"),
    "amrhein2022.t7.nes": Quote(AMRHEIN2022, "Table 7 (chrF++, samples as support)", "average", "NEs", -2.31, POINTS, 304, "average -1.32 -2.31"),
    "amrhein2022.t7.nouns": Quote(AMRHEIN2022, "Table 7 (chrF++, samples as support)", "average", "Nouns", -1.41, POINTS, 304, "average -1.32 -2.31 -1.41"),
    "amrhein2022.t7.alt_ende": Quote(AMRHEIN2022, "Table 7 (chrF++)", "en-de", "alternative (control)", -0.73, POINTS, 300,
                             "en-de add -0.88 -1.25 -0.80 -2.28 -2.04 -1.52 altern. -0.73"),
    "amrhein2022.t6.numbers": Quote(AMRHEIN2022, "Table 6 (BLEU, samples as support)", "average", "Numbers", -1.69, POINTS, 292, "average -1.69"),
    "amrhein2022.t6.nes": Quote(AMRHEIN2022, "Table 6 (BLEU, samples as support)", "average", "NEs", -1.70, POINTS, 292, "average -1.69 -1.70"),
    "amrhein2022.t6.nouns": Quote(AMRHEIN2022, "Table 6 (BLEU, samples as support)", "average", "Nouns", -1.05, POINTS, 292, "average -1.69 -1.70 -1.05"),
    "amrhein2022.t6.alt_ende": Quote(AMRHEIN2022, "Table 6 (BLEU)", "en-de", "alternative (control)", -0.33, POINTS, 288,
                             "en-de add -1.62 -1.41 -0.88 -4.10 -3.56 -2.73 altern. -0.33"),
    "amrhein2022.t3.numbers": Quote(AMRHEIN2022, "Table 3 (wmt20-comet-da, samples as support)", "average", "Numbers", -0.037, POINTS, 155, "average -0.037"),
    "amrhein2022.t3.nes": Quote(AMRHEIN2022, "Table 3 (wmt20-comet-da, samples as support)", "average", "NEs", -0.068, POINTS, 155, "average -0.037 -0.068"),
    "amrhein2022.t3.nouns": Quote(AMRHEIN2022, "Table 3 (wmt20-comet-da, samples as support)", "average", "Nouns", -0.232, POINTS, 155,
                          "average -0.037 -0.068 -0.232"),
    "amrhein2022.t2.beam_numbers": Quote(AMRHEIN2022, "Table 2", "beam search", "Numbers en-de (F1)", 95.73, POINTS, 117,
                                 "beam search 95.91 +02.67 95.73"),
    "amrhein2022.t2.mbr_chrf_numbers": Quote(AMRHEIN2022, "Table 2", "MBR chrF++", "Numbers en-de (F1)", 93.43, POINTS, 118,
                                     "MBR chrF++ 91.22 -02.02 93.43"),
    "amrhein2022.t2.mbr_bleu_numbers": Quote(AMRHEIN2022, "Table 2", "MBR bleu", "Numbers en-de (F1)", 91.37, POINTS, 119,
                                     "MBR bleu 93.88 +00.64 91.37"),
    "amrhein2022.t2.mbr_comet_numbers": Quote(AMRHEIN2022, "Table 2", "MBR wmt20-comet-da", "Numbers en-de (F1)", 89.14, POINTS, 120,
                                      "MBR wmt20-comet-da 90.34 -02.90 89.14"),
    "amrhein2022.t2.retrain_numbers": Quote(AMRHEIN2022, "Table 2", "MBR retrain-comet-da", "Numbers en-de (F1)", 90.17, POINTS, 122,
                                            "MBR retrain-comet-da 92.65 -00.59 90.17"),
    "amrhein2022.retrain.text": Quote(AMRHEIN2022, "Section 7 (COMET retraining)", "", "", None, TEXT, 221,
                                      "the retrained COMET model can still not beat non-neural utility functions"),
    "amrhein2022.t2.reference_numbers": Quote(AMRHEIN2022, "Table 2", "reference", "Numbers en-de (F1)", 93.46, POINTS, 115,
                                              "reference 93.24 93.46"),
    "amrhein2022.t2.beam_gain": Quote(AMRHEIN2022, "Table 2", "beam search", "Numbers en-de (F1 change to the reference)", 2.27, POINTS, 117,
                                      "beam search 95.91 +02.67 95.73 +02.27"),
    "amrhein2022.controls.text": Quote(AMRHEIN2022, "Section 6", "", "", None, TEXT, 202,
                                       "The MBR score difference to the hallucination is by far the largest, followed by the copied source"),
    **{key: q for table, first, rows in (("t6", 288, _ENDE_T6), ("t7", 300, _ENDE_T7)) for key, q in _ende(table, first, rows).items()},
}


def quote(key: str) -> Quote:
    """One quote by its key (a KeyError names it)."""
    return QUOTES[key]


def show(*keys: str) -> str:
    """Several quotes, each with its table, unit and line, joined by "; "."""
    return "; ".join(QUOTES[k].show() for k in keys)
