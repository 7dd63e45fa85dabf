"""Which tests use the cluster, and the check a session makes before the first of them runs.

The suite creates and deletes namespaces, CRDs and objects. A learner's
``KUBECONFIG`` (or ``~/.kube/config``) may point at their work cluster, so a
session that holds a cluster test or a notebook first checks, from the
kubeconfig's files alone, that the cluster is one the course created
(:func:`helpers.cluster.identity.require_course_cluster`), and otherwise stops
with one sentence before a request is sent.
``CFS_ALLOW_CLUSTER=<context>@<server>#sha256:<CA fingerprint>`` names another
cluster explicitly. The repository's root ``conftest.py`` calls
:func:`refuse_clusters_not_the_courses`, so ``pytest notebooks/...`` run on its
own is checked too.
"""

from __future__ import annotations

import pytest

from helpers.cluster.identity import require_course_cluster
from helpers.errors import CourseError

CLUSTER_FIXTURES = {"api", "namespace"}


def uses_cluster(item: pytest.Item) -> bool:
    """Does this test (or notebook cell) talk to the cluster?"""
    return (
        item.get_closest_marker("cluster") is not None
        or item.path.suffix == ".ipynb"
        or bool(CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())))
    )


def refuse_clusters_not_the_courses(items: list[pytest.Item]) -> None:
    """Stop the session (exit code 2) if it would use a cluster the course did not create."""
    if not any(uses_cluster(item) for item in items):
        return
    try:
        require_course_cluster()
    except CourseError as exc:
        pytest.exit(f"error: {exc.problem}\nnext step: {exc.next_step}", returncode=2)
