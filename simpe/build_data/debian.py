"""Fetch Debian packages into a cache: ``apt-get download`` the .deb files, ``dpkg-deb -x`` them.

The cache holds ``debs/`` (the downloaded files, kept) and the unpacked trees; a tree is
unpacked again only when the set of .deb files it comes from (or the selection of files
to keep) changes: a stamp file lists them. When apt-get is missing or fails, the error names the packages and the folder to
put the .deb files in. This module does not read what the packages contain.
"""
from __future__ import annotations

import logging
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from simpe.errors import DataError

logger = logging.getLogger(__name__)

STAMP = ".unpacked"


def find_deb(debs: Path, package: str) -> Path | None:
    """The cached ``.deb`` of ``package`` (the last in sorted order when several are there)."""
    found = sorted(debs.glob(f"{package}_*.deb"))
    return found[-1] if found else None


def download(packages: tuple[str, ...] | list[str], debs: Path, release: str) -> dict[str, Path]:
    """Make sure a .deb of every package is in ``debs`` (``apt-get download``); return package -> file.

    release: what the packages must be, for the error message (``"Debian bookworm, LibreOffice 7.4"``).
    """
    debs.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if find_deb(debs, p) is None]
    if missing:
        if shutil.which("apt-get") is None:
            raise DataError(
                f"cannot fetch {', '.join(missing)}: apt-get is not available; download the .deb "
                f"files from https://packages.debian.org/bookworm/ and put them in {debs}"
            )
        logger.info("downloading %s with apt-get", " ".join(missing))
        result = subprocess.run(["apt-get", "download", *missing], cwd=debs, capture_output=True, text=True)
        if result.returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True)
            result = subprocess.run(["apt-get", "download", *missing], cwd=debs, capture_output=True, text=True)
        if result.returncode != 0:
            raise DataError(
                f"apt-get download {' '.join(missing)} failed ({result.stderr.strip().splitlines()[-1:]}); "
                f"put the .deb files ({release}) in {debs}, or run as root after apt-get update"
            )
    found = {p: find_deb(debs, p) for p in packages}
    absent = [p for p, deb in found.items() if deb is None]
    if absent:
        raise DataError(f"apt-get download left no .deb of {', '.join(absent)} in {debs}; put the files ({release}) there")
    return {p: deb for p, deb in found.items() if deb is not None}


def unpack(debs: list[Path], root: Path, keep: re.Pattern[str] | None = None) -> Path:
    """Unpack ``debs`` (in sorted order) into ``root`` unless its stamp matches; return ``root``.

    keep: when given, only the regular files whose path (``usr/share/…``, no leading ``./``)
        matches it are written (read from ``dpkg-deb --fsys-tarfile``); else ``dpkg-deb -x`` unpacks everything.
    """
    names = sorted(p.name for p in debs)
    stamp_text = "\n".join(names) + ("" if keep is None else f"\nkeep {keep.pattern}")
    stamp = root / STAMP
    if not stamp.exists() or stamp.read_text() != stamp_text:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        for deb in sorted(debs, key=lambda p: p.name):
            if keep is None:
                subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
            else:
                _extract_matching(deb, root, keep)
        stamp.write_text(stamp_text)
    return root


def _extract_matching(deb: Path, root: Path, keep: re.Pattern[str]) -> None:
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
        for member in tar:
            name = member.name.removeprefix("./")
            if member.isfile() and ".." not in name.split("/") and keep.fullmatch(name):
                source = tar.extractfile(member)
                assert source is not None
                target = root / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read())
    if proc.wait() != 0:
        raise DataError(f"dpkg-deb --fsys-tarfile {deb} failed (exit {proc.returncode}); is it a complete .deb file?")


def deb_version(deb: Path) -> str:
    """The package version in a Debian file name ``NAME_VERSION_ARCH.deb`` (``%3a`` is ``:``)."""
    return deb.name.split("_")[1].replace("%3a", ":")
