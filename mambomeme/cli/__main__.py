"""`python -m mambomeme.cli`: the same command as the `mambomeme` console script."""

import sys

from mambomeme.cli import main

sys.exit(main())
