"""Builders of the LibreOffice corpus (`make corpus`): help pages, gettext catalogs, the split writer; `simpe.datasets` loads what they build."""
