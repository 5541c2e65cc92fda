"""``python -m apibank_lib`` runs the ``apibank`` command."""

import sys

from apibank_lib.cli import main

sys.exit(main())
