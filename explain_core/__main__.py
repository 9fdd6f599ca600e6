"""``python -m explain_core``: the ``explain-core`` command (:mod:`explain_core.cli`)."""
import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main())
