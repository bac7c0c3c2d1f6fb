"""``python -m racer_lib``: the ``racer`` command."""

import sys

from racer_lib.cli import main

sys.exit(main())
