"""How every benchmark script ends: its ``main`` run, a user mistake (``simpe.errors.SimpeError``) printed as one line
with exit status 2, as the command line prints it (``simpe.cli.main``), never a traceback."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable


def run_main(main: Callable[[], int | None]) -> int:
    """``main()``'s exit status (0 for None); a SimpeError: ``<script>: error: <message>`` on stderr, 2."""
    from simpe.errors import SimpeError

    try:
        return main() or 0
    except SimpeError as err:
        print(f"{Path(sys.argv[0]).name}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{Path(sys.argv[0]).name}: interrupted", file=sys.stderr)
        return 130
