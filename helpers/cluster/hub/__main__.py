"""``python -m helpers.cluster.hub up|down|stop|status``: see the package's docstring."""

import sys

from . import main

sys.exit(main())
