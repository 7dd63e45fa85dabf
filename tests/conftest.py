"""Shared fixtures: a connection to the real cluster and a namespace per test.

Tests marked ``cluster`` talk to the cluster that ``make test`` starts (it
exports KUBECONFIG). Run on their own without a cluster, they fail with the
sentence :func:`helpers.kube.connect` gives, rather than skipping silently.

They create and delete namespaces, CRDs and objects, so a session that holds
any of them (or a notebook) first checks that the cluster is one the course
created (``tests/session_guard.py``, called from the root ``conftest.py``).

Tests that start, break and stop clusters of their own use ``course_home``: a
course folder under the test's tmp_path, so they never touch the cluster the
rest of the suite (or a learner) uses.

A failing test that used the cluster (or a notebook cell) gets a section "cluster
state at the failure" (see ``tests/cluster_report.py``): CI keeps only what the
run printed, and a timeout alone does not say which component stalled.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from helpers import kube
from helpers.cluster.paths import CourseHome
from helpers.errors import CourseError
from helpers.namespaces import COURSE_LABELS
from tests.session_guard import uses_cluster

MAX_CLUSTER_REPORTS = 5
"""A run that fails in many cells at once repeats itself after a few reports."""
_reports_made: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed or not uses_cluster(item):
        return
    if len(_reports_made) >= MAX_CLUSTER_REPORTS:
        return
    from tests.cluster_report import cluster_report

    _reports_made.append(item.nodeid)
    report.sections.append(("cluster state at the failure", cluster_report()))


@pytest.fixture(scope="session")
def api() -> kubernetes.client.ApiClient:
    try:
        return kube.connect()
    except CourseError as exc:
        pytest.fail(f"these tests need the course's cluster (run `make test`): {exc}")


def namespace_name(test_name: str) -> str:
    """A fresh namespace's name for test ``test_name``: a DNS label (RFC 1123), as the API
    server demands. A parametrized test's name holds ``[``, ``]``, ``.`` or ``/``; each run of
    characters other than a-z and 0-9 becomes one ``-``, and at most 40 characters are kept."""
    base = re.sub(r"[^a-z0-9]+", "-", test_name.lower())[:40].strip("-")
    return f"t-{base}-{uuid.uuid4().hex[:6]}" if base else f"t-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def namespace(api: kubernetes.client.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace named after the test, deleted afterwards (with everything in it)."""
    core = kubernetes.client.CoreV1Api(api)
    name = namespace_name(request.node.name)
    labels = {**COURSE_LABELS, "course-test": "true"}
    core.create_namespace({"metadata": {"name": name, "labels": labels}})
    yield name
    try:
        core.delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture
def course_home(tmp_path: Path) -> CourseHome:
    """A course folder of its own, sharing the built binaries (a build takes 12 minutes)."""
    home = CourseHome(tmp_path / "home")
    home.root.mkdir()
    shared = CourseHome.from_environment().bin_cache
    if shared.exists():
        home.bin_cache.symlink_to(shared.resolve())
    return home
