"""Chapter 02's exercise checks say "not attempted", "wrong" and "correct" when they should,
and every stored solution passes its check (exercise 4 against the real cluster)."""

from __future__ import annotations

import threading

import kubernetes
import pytest

from helpers.exercises import ch02
from helpers.listwatch import ListWatch
from helpers.store import Indexer
from notebooks.solutions import ch02 as solutions


def test_exercise_1_predictions() -> None:
    assert {letter: ch02.next_request(letter) for letter in "abcde"} == {
        "a": "watch",
        "b": "watch",
        "c": "list",
        "d": "watch",
        "e": "list",
    }
    assert ch02.check_1(None).state == "not attempted yet"
    assert ch02.check_1(["watch"]).state == "wrong"
    verdict = ch02.check_1({"a": "watch"})
    assert verdict.state == "wrong" and "no 'watch' or 'list' for b" in verdict.detail
    # The old belief: a broken connection means a re-list.
    relist_on_break = {"a": "watch", "b": "list", "c": "list", "d": "watch", "e": "list"}
    verdict = ch02.check_1(relist_on_break)
    assert verdict.state == "wrong" and "StreamWatcher" in verdict.detail
    relist_on_429 = {**solutions.answer_1, "d": "re-list"}
    verdict = ch02.check_1(relist_on_429)
    assert verdict.state == "wrong" and "slow down" in verdict.detail
    assert ch02.check_1({k.upper(): v.upper() for k, v in solutions.answer_1.items()}).correct
    assert ch02.check_1(solutions.answer_1).correct


def test_exercise_2_watch_versions() -> None:
    assert ch02.scripted_watch_versions() == ["120", "150"]
    assert ch02.check_2(None).state == "not attempted yet"
    verdict = ch02.check_2(("115", "130"))  # the newest item; ignoring the bookmark
    assert verdict.state == "wrong" and "first watch" in verdict.detail
    verdict = ch02.check_2(("120", "130"))
    assert verdict.state == "wrong" and "bookmarks" in verdict.detail
    assert ch02.check_2("120").state == "wrong"
    assert ch02.check_2((120, 150)).correct  # numbers are accepted too
    assert ch02.check_2(solutions.answer_2).correct


def test_exercise_3_schedule() -> None:
    assert ch02.check_3(None).state == "not attempted yet"

    def uncapped(initial: float, factor: float, cap: float, n: int) -> list[float]:
        return [initial * factor**step for step in range(n)]

    verdict = ch02.check_3(uncapped)
    assert verdict.state == "wrong" and "schedule(0.8, 2.0, 30.0, 8)" in verdict.detail

    def caps_only_growth(initial: float, factor: float, cap: float, n: int) -> list[float]:
        delays, base = [], initial  # forgets that initial itself may be above the cap
        for _ in range(n):
            delays.append(base)
            base = min(base * factor, cap)
        return delays

    verdict = ch02.check_3(caps_only_growth)
    assert verdict.state == "wrong" and "schedule(5.0, 2.0, 3.0, 3)" in verdict.detail
    assert ch02.check_3(solutions.schedule).correct


@pytest.mark.cluster
def test_exercise_4_recovers_from_410(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch02.check_4(None, api, namespace).state == "not attempted yet"
    assert ch02.check_4(solutions.follow, api, namespace).correct


@pytest.mark.cluster
def test_exercise_4_after_run_all_brings_the_namespace_back(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    kubernetes.client.CoreV1Api(api).delete_namespace(namespace)  # as the chapter's last cell does
    assert ch02.check_4(solutions.follow, api, namespace).correct


@pytest.mark.cluster
def test_exercise_4_without_etcd_says_it_cannot_check(
    api: kubernetes.client.ApiClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CFS_WITHOUT_ETCD", "1")
    verdict = ch02.check_4(solutions.follow, api, namespace)
    assert "can't check this on a cluster without etcd access" in str(verdict)
    assert not verdict.correct


@pytest.mark.cluster
def test_exercise_4_a_loop_that_ignores_410_is_wrong(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    def never_relists(list_watch: ListWatch, store: Indexer, stop: threading.Event) -> None:
        listed = list_watch.list()
        version = listed["metadata"]["resourceVersion"]
        store.replace(listed["items"], version)
        while not stop.is_set():
            for event in list_watch.watch(version, timeout_seconds=60):
                version = event["object"]["metadata"]["resourceVersion"]
                store.add(event["object"])

    verdict = ch02.check_4(never_relists, api, namespace)
    assert verdict.state == "wrong" and "WatchExpired" in verdict.detail


@pytest.mark.cluster
def test_exercise_4_a_loop_that_always_relists_is_wrong(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    def always_relists(list_watch: ListWatch, store: Indexer, stop: threading.Event) -> None:
        while not stop.is_set():
            listed = list_watch.list()
            store.replace(listed["items"], listed["metadata"]["resourceVersion"])
            for _ in list_watch.watch(listed["metadata"]["resourceVersion"], 60):
                pass

    verdict = ch02.check_4(always_relists, api, namespace)
    assert (
        verdict.state == "wrong" and "listed again after a watch ended normally" in verdict.detail
    )
