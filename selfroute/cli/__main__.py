"""``python -m selfroute.cli``: the ``selfroute`` command."""

from __future__ import annotations

from selfroute.cli import main

raise SystemExit(main())
