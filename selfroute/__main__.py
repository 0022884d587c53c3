"""``python -m selfroute``: the ``selfroute`` command."""

from selfroute.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
