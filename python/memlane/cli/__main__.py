"""``python -m memlane.cli``: the ``memlane`` command without its console script."""

from __future__ import annotations

import sys

from memlane.cli import main

sys.exit(main())
