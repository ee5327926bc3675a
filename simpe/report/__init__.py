"""Outputs derived from logged runs: compare.py (the method table with significance), render.py
(Markdown, CSV, LaTeX), plotting.py (Figure 2's cumulative deltas, ranking snapshots) and
stats.py (bootstrap, correlations). Nothing here translates or writes a run."""
