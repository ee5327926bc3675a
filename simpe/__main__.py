import sys

from simpe.cli import main

sys.exit(main())
