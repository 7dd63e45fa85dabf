"""Chapter 08's exercise checks say "not attempted", "wrong" and "correct" when they should.

Every stored solution passes its check (2 to 6 against the real cluster), and each check
says "wrong" to what the chapter printed: the answers a reader could copy from 08, 08a and 08b
without building or predicting anything, and the cheats a check could be fooled by (an
always-true answer, a write that never looks). After "Run All" the chapters' last cells have
deleted their namespaces; the checks bring them back.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest
import yaml

from helpers import namespaces, rbac
from helpers.exercises import ch08
from notebooks.solutions import ch08 as solutions


@pytest.fixture
def chapter_namespace(api: kubernetes.client.ApiClient) -> Iterator[str]:
    """A namespace made the way a chapter makes its own (the course's labels), deleted after."""
    name = namespaces.fresh_namespace(api, f"t-ch08-{uuid.uuid4().hex[:6]}")
    yield name
    namespaces.delete_namespace(api, name)


def test_exercise_1_events_and_status_writes_on_one_bucket() -> None:
    assert ch08.check_1(None).state == "not attempted yet"
    # 08a printed a plateau of 5 a second, and ran at --kube-api-qps 50; 10 is the burst,
    # 20 four times the workers of an older version of this exercise, "b" its answer.
    for copied_or_guessed in (5, "5", 10, 50, 20, 1.25, 3.5, "b", "two and a half"):
        verdict = ch08.check_1(copied_or_guessed)
        assert verdict.state == "wrong", copied_or_guessed
        assert "2.5" not in verdict.detail
    verdict = ch08.check_1(solutions.answer_1)
    assert verdict.correct and "finished" in verdict.detail
    assert ch08.check_1("2.5/s").correct


def test_syncs_of_two_tokens_go_at_half_the_bucket_rate() -> None:
    """The demonstration behind check 1: once the burst is spent, a bucket of 5 a second gives
    syncs of two tokens at 2.5 a second, however many workers wait for it (a timer's rounding
    and a loaded machine may shift one sync across the window's edges)."""
    for workers in (2, 4):
        syncs = ch08.syncs_paced(workers, 2, 2.0, 2.5)
        assert 3 <= syncs <= 6, (workers, syncs)


def _copied_from_08a(process: Any) -> str | None:
    """What 08a printed for readiness: the informers' check, the same on leader and standby."""
    return process._caches_synced()


def _ready_always(process: Any) -> str | None:
    return None


def _raises(process: Any) -> str | None:
    raise AttributeError("no such thing")


def _ready_only_if_nobody_leads(process: Any) -> str | None:
    """Plausible and wrong: ready when the process leads... or when it cannot tell."""
    elector = process.elector
    if elector is None:
        return None
    return None if elector.get_leader() in ("", elector.lock.identity) else "standby"


@pytest.mark.cluster
def test_exercise_2_readiness_tied_to_leadership(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    assert ch08.check_2(None, api, chapter_namespace).state == "not attempted yet"
    for wrong_check in (_copied_from_08a, _ready_always, _raises):
        verdict = ch08.check_2(wrong_check, api, chapter_namespace)
        assert verdict.state == "wrong", (wrong_check.__name__, verdict)
    assert ch08.check_2(solutions.leading, api, chapter_namespace).correct
    # A standby that says one word is not a sentence: the check asks for why.
    verdict = ch08.check_2(_ready_only_if_nobody_leads, api, chapter_namespace)
    assert verdict.state == "wrong" and "sentence" in verdict.detail


@pytest.mark.cluster
def test_exercise_2_an_always_ready_check_is_wrong_for_the_right_reason_every_time(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """The check asks /readyz only once both processes have synced their caches, so an
    always-ready answer (or the chapter's informers check) is judged on the standby's 200,
    never on an informers check that had not passed yet; and it answers within seconds."""
    for attempt in range(3):
        for cheat in (_ready_always, _copied_from_08a):
            started = time.monotonic()
            verdict = ch08.check_2(cheat, api, chapter_namespace)
            took = time.monotonic() - started
            assert verdict.state == "wrong", (attempt, cheat.__name__, verdict)
            assert "answered /readyz with 200" in verdict.detail, (attempt, verdict)
            assert took < 30, took


def _rules_08b_printed() -> list[dict[str, Any]]:
    """The ClusterRole rules 08b printed from manifests/rbac.yaml (the plain controller's)."""
    documents = yaml.safe_load_all((rbac.MANIFESTS / "rbac.yaml").read_text())
    (cluster_role,) = [d for d in documents if d and d["kind"] == "ClusterRole"]
    return cluster_role["rules"]


@pytest.mark.cluster
def test_exercise_1_of_08b_the_printed_rules_meet_a_403_the_trial_shows(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """The discovery: run with the rules 08b printed, the finalizing controller is refused the
    finalizer's patch, and the trial shows the API server's sentence; with the solution's rules
    it does everything, and leaves nothing behind."""
    started = time.monotonic()
    trial = ch08.run_finalizing(_rules_08b_printed(), api, chapter_namespace)
    assert not trial.worked and time.monotonic() - started < 15, trial
    assert any('cannot patch resource "foos"' in message for message in trial.refused), trial
    assert "✗ it added its finalizer" in str(trial)
    trial = ch08.run_finalizing(solutions.finalizing_rules, api, chapter_namespace)
    assert trial.worked and trial.refused == {}, trial
    assert [done for done, _ in trial.steps] == [True] * 5, trial
    left = kubernetes.client.CustomObjectsApi(api).list_namespaced_custom_object(
        "samplecontroller.k8s.io", "v1alpha1", chapter_namespace, "foos"
    )
    assert left["items"] == []
    assert "Not tried" in str(ch08.run_finalizing(None, api, chapter_namespace))


@pytest.mark.cluster
def test_exercise_1_of_08b_each_verb_the_check_asks_for_is_one_the_trial_uses(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """What the check counts as missing, the trial shows: each verb of the solution, taken
    away, makes the controller meet a 403 (so a learner who reads the 403s finds them all)."""
    for index, rule in enumerate(solutions.finalizing_rules):
        for verb in rule["verbs"]:
            fewer = [dict(r) for r in solutions.finalizing_rules]
            fewer[index] = {**rule, "verbs": [v for v in rule["verbs"] if v != verb]}
            fewer = [r for r in fewer if r["verbs"]]  # a rule needs a verb
            trial = ch08.run_finalizing(fewer, api, chapter_namespace)
            resource = rule["resources"][0].split("/")[0]
            assert any(verb in message and resource in message for message in trial.refused), (
                verb,
                rule,
                trial,
            )


@pytest.mark.cluster
def test_exercise_1_of_08b_cheats_are_wrong_and_the_verdict_names_nothing_missing(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    assert ch08.check_3(None, api, chapter_namespace).state == "not attempted yet"
    started = time.monotonic()
    verdict = ch08.check_3(_rules_08b_printed(), api, chapter_namespace)  # copied from 08b
    assert verdict.state == "wrong" and time.monotonic() - started < 10
    assert "403" in verdict.detail and "run_finalizing" in verdict.detail
    assert "patch" not in verdict.detail, "the check must not say what is missing"
    deleting = {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["delete"]}
    too_much = [*solutions.finalizing_rules, deleting]
    verdict = ch08.check_3(too_much, api, chapter_namespace)
    assert verdict.state == "wrong" and "delete deployments.apps" in verdict.detail
    always_allowed = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    assert "wildcard" in ch08.check_3(always_allowed, api, chapter_namespace).detail
    everything_named = [{"apiGroups": ["", "apps", "samplecontroller.k8s.io"],
                         "resources": ["foos", "foos/status", "deployments", "events"],
                         "verbs": ["get", "list", "watch", "create", "update", "patch",
                                   "delete"]}]  # fmt: skip
    assert ch08.check_3(everything_named, api, chapter_namespace).state == "wrong"
    assert ch08.check_3([{"verbs": ["get"]}], api, chapter_namespace).state == "wrong"
    assert ch08.check_3(solutions.finalizing_rules, api, chapter_namespace).correct
    # The rule an OwnerReferencesPermissionEnforcement cluster asks for may be there too.
    finalizers = {"apiGroups": ["samplecontroller.k8s.io"], "resources": ["foos/finalizers"],
                  "verbs": ["update"]}  # fmt: skip
    verdict = ch08.check_3([*solutions.finalizing_rules, finalizers], api, chapter_namespace)
    assert verdict.correct and "OwnerReferencesPermissionEnforcement" in verdict.detail
    # The Role's rules are replaced on every attempt, not kept from the first one.
    assert ch08.check_3(_rules_08b_printed(), api, chapter_namespace).state == "wrong"


@pytest.mark.cluster
def test_exercise_2_of_08b_foreground_delete_of_a_finalized_foo(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    assert ch08.check_4(None, api, chapter_namespace).state == "not attempted yet"
    # "a" is the order 08b's picture showed (a plain, background delete); "abcd" and a list of
    # all four are answers that try to be always right.
    for copied_or_guessed in ("a", "c", "d", "z", "abcd", ["a", "b", "c", "d"]):
        assert ch08.check_4(copied_or_guessed, api, chapter_namespace).state == "wrong"
    assert ch08.check_4(solutions.foreground_answer, api, chapter_namespace).correct
    # Each check cleaned up after itself: no Foo, no Deployment left.
    foos = kubernetes.client.CustomObjectsApi(api).list_namespaced_custom_object(
        "samplecontroller.k8s.io", "v1alpha1", chapter_namespace, "foos"
    )
    deployments = kubernetes.client.AppsV1Api(api).list_namespaced_deployment(chapter_namespace)
    assert foos["items"] == [] and deployments.items == []


@pytest.mark.cluster
def test_checks_after_run_all_bring_the_namespace_back(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """After "Run All" a chapter's last cell has deleted its namespace: no bare 404."""
    core = kubernetes.client.CoreV1Api(api)
    core.delete_namespace(chapter_namespace)  # still Terminating when the check starts
    assert ch08.check_3(solutions.finalizing_rules, api, chapter_namespace).correct
    core.delete_namespace(chapter_namespace)
    assert ch08.check_4(solutions.foreground_answer, api, chapter_namespace).correct
    core.delete_namespace(chapter_namespace)
    assert ch08.check_2(solutions.leading, api, chapter_namespace).correct
    core.delete_namespace(chapter_namespace)
    assert ch08.check_5(solutions.answer_5, api, chapter_namespace).correct
    core.delete_namespace(chapter_namespace)
    assert ch08.check_6(solutions.fenced_write, api, chapter_namespace).correct


def test_verdicts_number_exercises_as_each_notebook_does() -> None:
    """08b's first exercise is check 3, 08's are checks 5 and 6: their verdicts say
    "Exercise 1" and "Exercise 2", as the notebooks do."""
    assert str(ch08.check_1(None)).startswith("… Exercise 1:")
    assert str(ch08.check_5(None, None, "")).startswith("… Exercise 1:")  # type: ignore[arg-type]
    assert str(ch08.check_6(None, None, "")).startswith("… Exercise 2:")  # type: ignore[arg-type]
    assert str(ch08.check_3(None, None, "")).startswith("… Exercise 1:")  # type: ignore[arg-type]
    assert str(ch08.check_4(None, None, "")).startswith("… Exercise 2:")  # type: ignore[arg-type]


# --- 08 -----------------------------------------------------------------------------------------


def test_exercise_5_a_pause_shorter_than_the_lease_wrong_answers() -> None:
    """08 showed a paused leader overtaken ("a", "d"); "c" is the tempting misreading of
    RenewDeadline. None of them needs the cluster to be judged, and no verdict names "b"."""
    assert ch08.check_5(None, None, "").state == "not attempted yet"  # type: ignore[arg-type]
    for copied_or_guessed in ("a", "c", "d"):
        verdict = ch08.check_5(copied_or_guessed, None, "")  # type: ignore[arg-type]
        assert verdict.state == "wrong" and '"b"' not in verdict.detail, copied_or_guessed
    for unknown in ("z", "b."):
        assert ch08.check_5(unknown, None, "").state == "wrong"  # type: ignore[arg-type]


@pytest.mark.cluster
def test_exercise_5_is_replayed_on_the_chapters_elector(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    seen = ch08.pause_replayed(api, chapter_namespace)
    assert seen["took"] and seen["renewed after"] and not seen["standby took"], seen
    assert seen["holder"] == "leader"
    assert seen["standby waits again from"] > 8.0  # it saw the renewal after the pause
    verdict = ch08.check_5(solutions.answer_5, api, chapter_namespace)
    assert verdict.correct, verdict


def _always_writes(core: Any, namespace: str, name: str, token: int, data: dict) -> bool:
    """No fence at all: what the lease worker of 08 does."""
    body = {"metadata": {"annotations": {"fencing-token": str(token)}}, "data": data}
    core.patch_namespaced_config_map(name, namespace, body)
    return True


def _checks_then_patches(core: Any, namespace: str, name: str, token: int, data: dict) -> bool:
    """A fence with a hole: the check and the write are two requests, and nothing ties them."""
    found = core.read_namespaced_config_map(name, namespace)
    if int((found.metadata.annotations or {}).get("fencing-token", "0")) > token:
        return False
    return _always_writes(core, namespace, name, token, data)


def _compares_strings(core: Any, namespace: str, name: str, token: int, data: dict) -> bool:
    """Tokens compared as text: "10" < "9"."""
    found = core.read_namespaced_config_map(name, namespace)
    if (found.metadata.annotations or {}).get("fencing-token", "0") > str(token):
        return False
    found.metadata.annotations = {**(found.metadata.annotations or {}),
                                  "fencing-token": str(token)}  # fmt: skip
    found.data = {**(found.data or {}), **data}
    core.replace_namespaced_config_map(name, namespace, found)
    return True


def _never_writes(core: Any, namespace: str, name: str, token: int, data: dict) -> bool:
    return False


def _says_yes(core: Any, namespace: str, name: str, token: int, data: dict) -> bool:
    return True


@pytest.mark.cluster
def test_exercise_6_a_fenced_write(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    assert ch08.check_6(None, api, chapter_namespace).state == "not attempted yet"
    expected = {
        _always_writes: "wrote over a newer leader",
        _checks_then_patches: "between your read and your write",
        _compares_strings: "token 10",
        _never_writes: "should have written",
        _says_yes: "should have written",
    }
    for cheat, because in expected.items():
        verdict = ch08.check_6(cheat, api, chapter_namespace)
        assert verdict.state == "wrong" and because in verdict.detail, (cheat.__name__, verdict)
    assert ch08.check_6(solutions.fenced_write, api, chapter_namespace).correct
