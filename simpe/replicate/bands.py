"""One rule for bands: how each kind of claim gets the band its effect is judged in, set before any simpe figure is
seen (docs/replicate.md, "The bands"), and which kinds each claim of the page uses.

A band is where simpe's effect counts as the paper's size, in the paper's unit. ``KINDS`` says, per kind of claim,
how it is set; ``BANDS`` names the kinds each counted claim uses (a claim of several parts may use several).
``tests/unit/test_replicate_bands.py`` checks on the committed records that every row follows its kinds: a factor
band is [x/2, 2x] of the paper's figure x, a null band's half-width stands in the rule, a band that is a judgement
says so in the rule, a direction row is never reproduced, and no row is reproduced without its intervals inside its
bands. This module holds no figures and judges nothing.
"""
from __future__ import annotations

FACTOR, RANGE, MARGIN, NULL_PAPER, NULL_JUDGEMENT = "factor", "range", "margin", "null-paper", "null-judgement"
CORRELATION, DIRECTION, THEOREM, SHAPE, NONE = "correlation", "direction", "theorem", "shape", "none"
JUDGEMENT = "a judgement"  # what a rule says where its band is one

KINDS: dict[str, str] = {
    FACTOR: "a paper's figure x in simpe's unit: the band is within a factor of 2 of it, [x/2, 2x] (ordered)",
    RANGE: "the paper's figures for the same contrast on several data sets: the band is their range",
    MARGIN: "a part \"not above the baseline\" (another method is the only one that improves): its interval's upper "
            "bound must lie below the improving method's factor band's lower edge, the smallest effect of interest",
    NULL_PAPER: "a claim of no effect where the paper prints the spread of rows it calls the same: ± that spread",
    NULL_JUDGEMENT: f"a claim of no effect where the paper prints no spread: ± a band fixed in the rule, which says it is {JUDGEMENT}",
    CORRELATION: f"a claim of a strong correlation: r in [0.5, 1], {JUDGEMENT}",
    DIRECTION: "a stated direction with no size in simpe's unit: no band; significant and right is at most partly, "
               "labelled direction only",
    THEOREM: "a direction a theorem guarantees: measured as a check, not counted; only the size is tested, in a factor band",
    SHAPE: "a curve's shape over the stream: shares of segments, no interval; linked to the rows of its end points, not counted",
    NONE: "not testable here: no band",
}

BANDS: dict[str, tuple[str, ...]] = {
    "simianer2019-bleu": (FACTOR, NULL_JUDGEMENT),
    "simianer2019-bleu-similar": (NULL_JUDGEMENT, NULL_PAPER),
    "simianer2019-r01-lasso": (FACTOR,),
    "simianer2019-r0-degrade": (FACTOR,),
    "simianer2019-r0-lasso": (FACTOR, MARGIN),
    "simianer2019-r1-lasso": (FACTOR,),
    "simianer2019-r1-raise": (FACTOR,),
    "simianer2019-t3-novel": (FACTOR,),
    "simianer2019-t4-subword": (FACTOR,),
    "simianer2019-fig2": (SHAPE,),
    "simianer2019-t5-streams": (RANGE,),
    "yan2021-t3-search-errors": (THEOREM,),
    "yan2021-beam-sizes": (DIRECTION,),
    "yan2021-fig1b-bleu": (DIRECTION,),
    "yan2021-fig1c": (NULL_JUDGEMENT,),
    "yan2021-t4-heap-bleu": (FACTOR,),
    "yan2021-t4-heap-ln": (NULL_JUDGEMENT,),
    "yan2021-t2-length-norm": (DIRECTION,),
    "yan2022-top-region": (NULL_PAPER,),
    "yan2022-beam-krg": (NULL_PAPER,),
    "yan2022-lucky-bias": (DIRECTION,),
    "yan2022-mbr": (CORRELATION,),
    "yan2022-t3-baselines": (CORRELATION, NULL_JUDGEMENT),
    "yan2022-sampling": (DIRECTION,),
    "yan2022-k": (NULL_JUDGEMENT,),
    "yan2022-human": (NONE,),
    "yan2022-width-depth": (NONE,),
    "amrhein2022-chrf++": (FACTOR,),
    "amrhein2022-sbleu": (FACTOR,),
    "amrhein2022-controls": (FACTOR,),
    "amrhein2022-refs-support": (FACTOR,),
    "amrhein2022-comet": (NONE,),
    "amrhein2022-f1": (FACTOR,),
    "amrhein2022-retrain": (NONE,),
}
