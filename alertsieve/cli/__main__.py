"""``python -m alertsieve.cli``: the ``alertsieve`` command, as tests and jobs start it."""

import sys

from alertsieve.cli import main

if __name__ == "__main__":
    sys.exit(main())
