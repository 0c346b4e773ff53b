"""``python -m nomnesia.adapters.engines.residue``: the scanner's command line."""

from __future__ import annotations

import sys

from . import main

sys.exit(main())
