"""Terminology: glossaries as data and the term metrics beside R0/R1.

glossary.py: the one loader of glossary files (TSV, TBX through translate-toolkit), checked against the stream's
languages; match.py: where a term occurs in a text (the one matching rule); score.py: term accuracy, T0/T1, the
repeated term error and the R values outside the glossary, streamed per segment. The embedded default's glossary is
built by ``simpe.build_data.glossary`` (``make glossary``). Nothing here translates or decodes.
"""
