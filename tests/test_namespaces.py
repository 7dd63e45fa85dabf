"""A chapter's namespace: made fresh, brought back, deleted, and only ever the course's own.

Chapters call ``fresh_namespace`` at the top and ``delete_namespace`` at the
end; exercises call ``ensure_namespace`` after "Run All" deleted it. A
namespace of the same name that the course did not make (no course label) is
a learner's, and all three leave it and everything in it alone (issue 19).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import kubernetes
import pytest

from helpers import namespaces
from helpers.errors import CourseError

pytestmark = pytest.mark.cluster


@pytest.fixture
def learners_namespace(api: kubernetes.client.ApiClient) -> Iterator[str]:
    """A namespace the course did not make, holding a ConfigMap of the learner's."""
    core = kubernetes.client.CoreV1Api(api)
    name = f"t-theirs-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name, "labels": {"team": "payments"}}})
    core.create_namespaced_config_map(name, {"metadata": {"name": "settings"}, "data": {"a": "1"}})
    yield name
    core.delete_namespace(name)


def _still_there(api: kubernetes.client.ApiClient, name: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    assert core.read_namespace(name).metadata.deletion_timestamp is None
    assert core.read_namespaced_config_map("settings", name).data == {"a": "1"}


def test_a_learners_namespace_of_the_same_name_is_left_alone(
    api: kubernetes.client.ApiClient, learners_namespace: str
) -> None:
    for make in (namespaces.fresh_namespace, namespaces.ensure_namespace):
        with pytest.raises(CourseError, match="the course did not make it") as refused:
            make(api, learners_namespace)
        assert f"kubectl delete namespace {learners_namespace}" in refused.value.next_step
    said = namespaces.delete_namespace(api, learners_namespace)
    assert said == "was left alone: the course did not make it"
    _still_there(api, learners_namespace)


def test_the_courses_leftover_is_replaced(api: kubernetes.client.ApiClient) -> None:
    core = kubernetes.client.CoreV1Api(api)
    name = f"t-leftover-{uuid.uuid4().hex[:6]}"
    try:
        assert namespaces.fresh_namespace(api, name) == name
        first = core.read_namespace(name).metadata.uid
        assert namespaces.fresh_namespace(api, name) == name  # a leftover: deleted, made again
        again = core.read_namespace(name)
        assert again.metadata.uid != first and namespaces.is_the_courses(again)
    finally:
        assert namespaces.delete_namespace(api, name) == "is being deleted"


def test_a_namespace_replaced_after_the_check_is_not_deleted(
    api: kubernetes.client.ApiClient,
) -> None:
    """The delete carries the UID that was checked: another namespace of that name survives."""
    core = kubernetes.client.CoreV1Api(api)
    name = f"t-replaced-{uuid.uuid4().hex[:6]}"
    namespaces.fresh_namespace(api, name)
    try:
        checked = core.read_namespace(name)
        checked.metadata.uid = str(uuid.uuid4())  # as if it had been replaced meanwhile
        assert namespaces._delete_if_unchanged(core, checked) is False
        assert core.read_namespace(name).metadata.deletion_timestamp is None
    finally:
        core.delete_namespace(name)


def test_ensure_namespace_brings_back_a_deleted_namespace(api: kubernetes.client.ApiClient) -> None:
    """An exercise run after "Run All" finds its namespace deleted by the last cell."""
    core = kubernetes.client.CoreV1Api(api)
    name = f"t-ensure-{uuid.uuid4().hex[:6]}"
    try:
        assert namespaces.ensure_namespace(api, name) == name
        assert namespaces.ensure_namespace(api, name) == name  # already there: left alone
        core.delete_namespace(name)  # still terminating when ensure_namespace looks
        namespaces.ensure_namespace(api, name)
        found = core.read_namespace(name)
        assert found.metadata.deletion_timestamp is None
        assert found.metadata.labels["course"] == "controllers-from-scratch"
    finally:
        core.delete_namespace(name)
