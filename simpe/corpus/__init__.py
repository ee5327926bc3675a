"""Corpus builders: LibreOffice help pages, gettext catalogs, and the split writer."""
