"""``python -m benchmarks``."""

from benchmarks.run_all import main

raise SystemExit(main())
