"""build_data.licences: the licence named from a copyright file or a URL."""
from __future__ import annotations

import pytest

from simpe.build_data.licences import copyright_licence, licence_from_url

DEP5 = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: sheets

Files: *
Copyright: 2020 Someone
License: GPL-2+

Files: help/*
 data/help.xml
Copyright: 2021 Writer
License: CC-BY-SA-3.0
 Creative Commons Attribution-ShareAlike 3.0 Unported

License: GPL-2+
 This program is free software.
"""


FREE_FORM = """This package was debianized by someone.

Main License (everything except docs):

    This package is free software; you can redistribute it and/or modify
    it under the terms of the GNU General Public License as published by
    the Free Software Foundation; either version 3 of the License, or
    (at your option) any later version.

The help is licensed under the GFDL:

    Permission is granted to copy, distribute and/or modify this
    document under the terms of the GNU Free Documentation License,
    Version 1.1 or any later version.
"""


@pytest.mark.parametrize("text, path, expected", [
    (DEP5, "po/de.po", "GPL-2+"),
    (DEP5, "help/C/index.page", "CC-BY-SA-3.0"),  # the last matching Files paragraph wins
    (FREE_FORM, "po/de.po", "GPL-3+"),  # the first grant
    (FREE_FORM, "help/C/index.page", "GFDL-1.1+"),  # the first grant introduced by help or documentation
    ("File | Licence\npo/de.po | GPLv2h | Someone\n", "po/de.po", "GPL-2+"),  # a table row for the path
    ("no licence here", "po/de.po", "unknown"),
])
def test_copyright_licence(text, path, expected):
    assert copyright_licence(text, path) == expected


@pytest.mark.parametrize("url, expected", [
    ("http://creativecommons.org/licenses/by-sa/3.0/", "CC-BY-SA-3.0"),
    ("http://creativecommons.org/licenses/by-sa/3.0/us/", "CC-BY-SA-3.0-US"),
    ("http://www.gnu.org/licenses/fdl-1.1.html", "GFDL-1.1"),
    ("https://example.org/licence", "https://example.org/licence"),
])
def test_licence_from_url(url, expected):
    assert licence_from_url(url) == expected
