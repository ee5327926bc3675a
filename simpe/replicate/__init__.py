"""``simpe replicate``: each finding of the papers, measured by simpe on its own data, with a verdict.

plan.py says what runs (loop runs as sweep specs, decoding studies), studies.py runs the
decoding studies of Yan et al. (2021, 2022), claims.py turns runs and studies into one row per
claim with the paper's figures, simpe's and a verdict (its table of claims; their judges in judges.py,
simianer.py, yan.py, amrhein.py and beyond.py), and page.py writes docs/replication.md
and its HTML twin. The runs go through the sweep executor (complete runs are skipped,
incomplete ones resumed), so a second call costs only what is missing.
"""
