"""``python -m pmuprof`` runs the CLI."""

import sys

from .cli.main import main

sys.exit(main())
