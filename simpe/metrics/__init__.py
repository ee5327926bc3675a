"""The metric stack: one ``Metric`` contract (base.py) for every number simpe reports.

sacre.py: bleu, sbleu, chrf, chrf++, ter (sacreBLEU); recall.py: R0/R1/R0+1 and their
variants; comet.py: COMET (unbabel-comet in its own environment, comet_env.py, through the worker
process of comet_worker.py);
utility.py: any of them as an MBR utility / ranking quality; text.py and stopwords.py:
the R metrics' word pipeline; online.py: the streaming scorer of the loop. Importing the
package registers every module's metrics in ``METRICS``.
"""
from simpe.metrics.base import METRICS, Metric
from simpe.metrics.online import OnlineScorer, cumulative_curves, logged_stats, metric_for
from simpe.registry import import_all

import_all(__name__, __path__)

__all__ = ["METRICS", "Metric", "OnlineScorer", "cumulative_curves", "logged_stats", "metric_for"]
