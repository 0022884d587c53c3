"""``python -m selfroute.eval`` runs ``selfroute eval``."""

from __future__ import annotations

import sys

from selfroute.eval.cli import main

if __name__ == "__main__":
    sys.exit(main())
