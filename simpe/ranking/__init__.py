"""Ranking model errors (Yan et al. (2022)): measures.py (kRG, kQRG, random kRG), evaluate.py (the
top-region and Monte Carlo evaluation, and the loop's snapshots), study.py (``simpe rank``
and the Table 3 correlation with MBR). Settings: ``simpe.config.tree.RankingConfig``."""
