"""The benchmarks run only on the course's own cluster.

They create up to 140,000 ConfigMaps, delete their namespaces and restart
controllers: on somebody's work cluster that would be damage, not a
measurement. Every entry point that talks to a cluster calls
:func:`refuse_clusters_not_the_courses` before its first request.
"""

from __future__ import annotations

from helpers.cluster.identity import require_course_cluster
from helpers.errors import CourseError


def refuse_clusters_not_the_courses() -> None:
    """Exit with one sentence unless the kubeconfig names a cluster the course created
    (or the one named in ``CFS_ALLOW_CLUSTER``); nothing has been sent by then."""
    try:
        require_course_cluster(doing="The benchmarks")
    except CourseError as exc:
        raise SystemExit(f"error: {exc.problem}\nnext step: {exc.next_step}") from None
