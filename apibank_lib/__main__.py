"""``python -m apibank_lib`` runs the ``apibank`` command."""

import sys

from apibank_lib.cli.commands import main

sys.exit(main())
