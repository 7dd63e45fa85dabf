"""Files that hold credentials: readable by their owner only, from the first byte.

Kubeconfigs and service account tokens let whoever reads them act on the
cluster. Writing such a file and chmod-ing it afterwards leaves a moment in
which another user of the machine can open it, and keep what they opened; so
the file is created with mode 0600, and a link put in its place is not followed.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, a file only its owner may read or write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as out:
        os.fchmod(out.fileno(), 0o600)  # a file that existed keeps its old mode through open()
        out.write(text)
