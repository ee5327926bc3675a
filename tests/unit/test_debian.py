"""build_data.debian: the download step, without apt-get."""
from __future__ import annotations

from pathlib import Path

import pytest

from simpe.build_data import debian
from simpe.errors import DataError


def test_download_names_the_packages_and_the_folder_without_apt_get(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(debian.shutil, "which", lambda name: None)
    (tmp_path / "cached_1.0-1_all.deb").write_bytes(b"")
    with pytest.raises(DataError, match=rf"cannot fetch gnumeric-common, yelp: apt-get is not available; .* put them in {tmp_path}"):
        debian.download(("cached", "gnumeric-common", "yelp"), tmp_path, "Debian bookworm")
    assert debian.download(("cached",), tmp_path, "Debian bookworm") == {"cached": tmp_path / "cached_1.0-1_all.deb"}
    assert debian.deb_version(tmp_path / "libreoffice-help-de_4%3a7.4.7-1+deb12u14_all.deb") == "4:7.4.7-1+deb12u14"
