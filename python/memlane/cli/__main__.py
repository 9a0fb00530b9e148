"""``python -m memlane.cli``: the ``memlane`` command without its console script."""

from __future__ import annotations

import sys

from memlane.cli import main

# Guarded: tools that import every module of the package (pkgutil.walk_packages) must not run it.
if __name__ == "__main__":
    sys.exit(main())
