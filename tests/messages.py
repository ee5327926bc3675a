"""Error messages are checked by their key fragments (the key or flag, the bad value, the valid values), not whole
sentences: rewording a message keeps the tests, dropping what the user needs to fix the input fails them."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def raises_naming(exc_type: type[BaseException], *fragments: str) -> Iterator[pytest.ExceptionInfo]:
    """``pytest.raises(exc_type)`` whose message must hold every fragment (plain substrings, no regular expressions)."""
    with pytest.raises(exc_type) as info:
        yield info
    message = str(info.value)
    missing = [fragment for fragment in fragments if fragment not in message]
    assert not missing, f"{missing} not in {message!r}"
