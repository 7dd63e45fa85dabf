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


def make_private_dirs(path: Path) -> Path:
    """Make folder ``path`` and each missing folder above it readable by their owner only (0700).

    ``Path.mkdir(parents=True)`` would make the folders above ``path`` with the
    umask's mode (0755 under the usual 022), so another user could look into
    them; here each one made is 0700 whatever the umask. Folders that exist are
    left as they are.
    """
    missing = []
    for folder in (path, *path.parents):
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue  # made meanwhile by someone else: theirs to keep as it is
        os.chmod(folder, 0o700)  # mkdir's mode passes through the umask (0o700 & ~umask)
    return path
