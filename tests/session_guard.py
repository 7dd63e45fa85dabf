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


def require_sample_controllers_crd(item: pytest.Item, checked: dict[str, list[str]]) -> None:
    """Before the cells of a notebook: is the Foo CRD sample-controller's?

    The stored outputs were recorded on it (CI's cluster is new). Chapters 06b and 10 extend
    it and put it back at their end; a run stopped in between leaves it extended, and then a
    chapter prints other fields or meets chapter 10's name rule. That is said once, at the
    notebook's first cell, with the way back; its other cells are skipped, not compared.
    """
    if item.path.suffix != ".ipynb":
        return
    notebook = str(item.path)
    if notebook in checked:
        if checked[notebook]:
            pytest.skip("the Foo CRD is not sample-controller's: see this notebook's first cell")
        return
    from helpers import workshop_mode

    if workshop_mode.attendee() is not None:
        checked[notebook] = []  # a workshop's CRD has the facilitator's additions
        return
    checked[notebook] = drift = _foo_crd_drift()
    if drift:
        pytest.fail(
            f"the Foo CRD on this cluster is not sample-controller's ({', '.join(drift)}): a run "
            "of chapter 06b or 10, or a test, was stopped before it put the CRD back, and the "
            "stored outputs were recorded on sample-controller's CRD.\n"
            "next step: `make up` puts sample-controller's CRD back on the running cluster.",
            pytrace=False,
        )


def note_the_foo_crd(item: pytest.Item, found: dict[str, list[str]]) -> None:
    """At a test module's first test that uses the cluster: the Foo CRD as the module found it."""
    module = str(item.path)
    if item.path.suffix == ".ipynb" or module in found or not uses_cluster(item):
        return
    found[module] = _foo_crd_drift()


def require_the_foo_crd_as_found(
    item: pytest.Item, nextitem: pytest.Item | None, found: dict[str, list[str]]
) -> None:
    """After a test module's last test: the Foo CRD must be as the module found it.

    The CRD is cluster-wide and every later notebook's stored outputs assume
    sample-controller's; a module that extends it (``workshop up`` installs chapter 10's rule)
    and leaves it so is named here, not found out later from a notebook's first cell.
    """
    module = str(item.path)
    if module not in found or (nextitem is not None and str(nextitem.path) == module):
        return
    now, before = _foo_crd_drift(), found.pop(module)
    if now != before:
        base = "sample-controller's"
        pytest.fail(
            f"{item.path.name} left the Foo CRD changed: it found {', '.join(before) or base} "
            f"and leaves {', '.join(now) or base}. A test that changes the CRD must put back "
            "what it found (helpers.foo_crd.restore_foo_crd, restore_foo_status).",
            pytrace=False,
        )


def _foo_crd_drift() -> list[str]:
    """The Foo CRD's difference from sample-controller's, on the cluster KUBECONFIG names
    (imported here, not at the top: a session without cluster tests never connects)."""
    from helpers import kube
    from helpers.cluster.bootstrap import foo_crd_drift

    return foo_crd_drift(kube.connect())
