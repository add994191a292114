#!/usr/bin/python3
"""pmuprof as the Debian package installs it: the package lives in /usr/lib/pmuprof, off Python's path."""

import sys

sys.path.insert(0, "/usr/lib/pmuprof")

from pmuprof.cli.main import main  # noqa: E402 - after the path it is found on

sys.exit(main())
