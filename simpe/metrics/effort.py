"""The effort metrics of the interactive-predictive protocol: KSMR and WSR (``simpe.loop.interactive`` measures them).

KSMR (key-stroke and mouse-action ratio; Barrachina et al. 2009, as Peris, Domingo & Casacuberta 2017 report
it): the translator's keystrokes plus mouse actions over the reference's characters, with a simulated translator
who corrects one character at a time. WSR (word-stroke ratio; Knowles & Koehn 2016 report word-prediction
accuracy, its complement): words the translator typed over the reference's words, correcting one word at a time.
Both are ratios of sums, like the R values: a segment's statistics are [effort, reference size], a corpus figure,
a cumulative curve and a bootstrap resample the ratio of their sums; lower is better, shown in percent.

They are not registered in ``METRICS``: they score no (hypothesis, reference) pair, only a session of a simulated
translator, so they are neither a logged text metric nor an MBR utility. ``metric_for`` finds them by name.
"""
from __future__ import annotations

from collections.abc import Sequence

from simpe.metrics.base import Metric


class EffortMetric(Metric):
    """[effort, reference size] per segment; the score of summed statistics is their ratio (a fraction)."""

    higher_is_better = False
    percent = True

    def __init__(self, name: str, label: str, stat_names: tuple[str, str]) -> None:
        self.name, self.label, self.stat_names = name, label, stat_names

    def score_from_stats(self, stats: Sequence[float]) -> float | None:
        return stats[0] / stats[1] if stats[1] else None

    def signature(self) -> str:
        return f"{self.name}|{'+'.join(self.stat_names[:1])}/{self.stat_names[1]}|simulated-translator"


KSMR = EffortMetric("ksmr", "KSMR", ("keystrokes+mouse", "ref_chars"))
WSR = EffortMetric("wsr", "WSR", ("word_strokes", "ref_words"))
EFFORT_METRICS = {metric.name: metric for metric in (KSMR, WSR)}
LEVEL_OF = {"ksmr": "char", "wsr": "word"}  # the session that measures each
