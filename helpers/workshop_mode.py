"""Who this kernel works for in a workshop: attendee mode.

On a shared workshop cluster the facilitator gives each attendee namespaces
of their own (``<attendee>-ch04-workqueue``, ...) and no right to create or
delete namespaces (``python -m helpers.cluster.workshop up``). A chapter then
works in the attendee's namespace and empties it instead of deleting it
(:mod:`helpers.namespaces`). Outside a workshop nothing here changes anything.
"""

from __future__ import annotations

import os
import re

from .errors import CourseError
from .kube import Kubeconfig, KubeconfigArg

ATTENDEE_ENV = "CFS_ATTENDEE"
"""An attendee's name (as ``python -m helpers.cluster.workshop up`` made it): attendee mode."""
WORKSHOP_LABEL = "controllers-from-scratch/workshop"
"""Objects the facilitator made in an attendee's namespaces carry it; emptying keeps them."""
_CHAPTER_NAMESPACE = re.compile(
    r"^(?P<attendee>[a-z0-9]([-a-z0-9]*[a-z0-9])?)-ch\d\d[a-z]?-[-a-z0-9]+$"
)


def attendee(kubeconfig: KubeconfigArg = None) -> str | None:
    """The workshop attendee this kernel works for, or None outside a shared workshop cluster.

    Attendee mode is on when ``$CFS_ATTENDEE`` names the attendee, or when the
    current context's namespace is one of their chapter namespaces (the
    kubeconfig ``python -m helpers.cluster.workshop up`` writes sets it).
    """
    named = os.environ.get(ATTENDEE_ENV, "").strip()
    if named:
        return named
    try:
        config = Kubeconfig(kubeconfig)
        namespace = (config.context(None).value.get("context") or {}).get("namespace") or ""
    except CourseError:
        return None
    match = _CHAPTER_NAMESPACE.match(namespace)
    return match["attendee"] if match else None


def chapter_namespace(name: str) -> str:
    """The namespace a chapter calls ``name``: ``<attendee>-name`` in attendee mode, else itself."""
    who = attendee()
    if who is None or name.startswith(f"{who}-"):
        return name
    return f"{who}-{name}"
