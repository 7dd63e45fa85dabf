"""helpers.testing.recording: the sync handler alone, on hand-filled caches, with recording clients.

No API server: these are the fakes chapter 09a builds, tested on chapter 05's
controller, whose behaviour tests/test_controller.py pins down separately.
"""

from __future__ import annotations

import copy

import pytest
from kubernetes.client.exceptions import ApiException

from helpers.controller import FooController, ResourceExistsError, new_deployment
from helpers.testing.recording import (
    Action,
    NotWatched,
    RecordingClients,
    cached_deployment,
    cached_foo,
    sync_once,
)


def test_recording_clients_record_a_copy_and_answer_with_the_object_as_sent() -> None:
    clients = RecordingClients()
    deployment = new_deployment(cached_foo("web"))

    answer = clients.create_deployment("default", deployment)
    deployment["spec"]["replicas"] = 9  # the caller changes its object afterwards

    assert [str(action) for action in clients.actions] == ["create deployments"]
    assert clients.actions[0].obj["spec"]["replicas"] == 1, "the record must not follow the caller"
    assert answer["spec"]["replicas"] == 1 and answer is not clients.actions[0].obj


def test_fail_makes_one_call_raise_and_records_nothing_for_it() -> None:
    conflict = ApiException(status=409, reason="Conflict")
    clients = RecordingClients(fail={"update_foo_status": conflict})

    with pytest.raises(ApiException) as raised:
        clients.update_foo_status("default", cached_foo("web"))
    clients.update_deployment("default", new_deployment(cached_foo("web")))

    assert raised.value is conflict
    assert [str(action) for action in clients.actions] == ["update deployments"]


def test_sync_once_creates_then_writes_the_status_of_a_foo_without_deployment() -> None:
    foo = cached_foo("web", replicas=2)

    outcome = sync_once(FooController, "default/web", foos=[foo])

    assert outcome.writes == ["create deployments", "update foos/status"]
    assert outcome.actions[0] == Action("create", "deployments", new_deployment(foo))
    assert outcome.status == 0
    assert outcome.events == [("Normal", "Synced")]
    assert outcome.error is None
    assert outcome.controller.workqueue.shutting_down(), "the queue's thread must be stopped"


def test_sync_once_keeps_what_the_sync_raised() -> None:
    foo = cached_foo("web")

    outcome = sync_once(
        FooController, "default/web", foos=[foo], deployments=[cached_deployment(foo, owned=False)]
    )

    assert isinstance(outcome.error, ResourceExistsError)
    assert outcome.writes == [] and outcome.status is None
    assert outcome.events == [("Warning", "ErrResourceExists")]


def test_cached_deployment_changes_only_what_it_is_told() -> None:
    foo = cached_foo("web", replicas=1)
    plain = cached_deployment(foo)

    assert plain["spec"] == new_deployment(foo)["spec"]
    assert plain["status"] == {"availableReplicas": 0}
    assert cached_deployment(foo, replicas=3, available=2)["spec"]["replicas"] == 3
    assert cached_deployment(foo, owned=False)["metadata"]["ownerReferences"] == []
    assert foo == cached_foo("web", replicas=1), "the Foo itself must not change"
    assert "replicas" not in cached_foo("web", replicas=None)["spec"]


def test_the_caches_are_filled_by_hand_and_never_watched() -> None:
    foo = cached_foo("web")
    before = copy.deepcopy(foo)

    outcome = sync_once(FooController, "default/web", foos=[foo])

    assert outcome.controller.foos_lister.namespace("default").get("web") == before
    with pytest.raises(RuntimeError, match="filled by the test"):
        NotWatched().list()
