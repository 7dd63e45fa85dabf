"""Chapter 02's exercise checks (02a and 02b) say "not attempted", "wrong" and "correct" when
they should, and every stored solution passes its check (check 4 against the real cluster).

The cheats a learner could reach for are judged wrong too: flipping letters one at a time
until the verdict stops naming one, a table of schedules remembered from a failure message,
an answer copied from what the chapter printed. No wrong verdict says what is right.
"""

from __future__ import annotations

import threading

import kubernetes
import pytest

from helpers.exercises import ch02
from helpers.listwatch import ListWatch
from helpers.store import Indexer
from notebooks.solutions import ch02 as solutions

FIXED = [
    ch02.Ending("watch stream", None, 300.0, 5),  # timeoutSeconds ran out
    ch02.Ending("watch stream", "reset", 40.0, 3),  # the connection broke mid-stream
    ch02.Ending("watch stream", 410, 40.0, 3),
    ch02.Ending("watch request", 429),
    ch02.Ending("watch stream", None, 0.2, 0),  # a very short watch
    ch02.Ending("watch request", 403),
    ch02.Ending("watch stream", 500, 40.0, 3),  # an ERROR event
    ch02.Ending("watch request", "refused"),
    ch02.Ending("watch stream", 429, 40.0, 3),  # an ERROR event
    ch02.Ending("watch request", "reset"),  # the request to open the watch broke
    ch02.Ending("watch request", "timeout"),
    ch02.Ending("watch stream", "reset", 0.3, 0),  # broke at once: a very short watch
    ch02.Ending("watch stream", None, 0.5, 1),  # short, but it brought an event
    ch02.Ending("watch stream", "timeout", 30.0, 0),  # a silent connection, read timeout
    ch02.Ending("watch stream", None, 2.0, 0),
    ch02.Ending("list", "refused"),
    ch02.Ending("list", 500),
]


def test_exercise_1_the_course_reflector_decides_as_client_go() -> None:
    """The truth the check compares with: the course's reflector, scripted. Each answer is what
    client-go v0.36's reflector does too (reflector.go `watch`, `isWatchErrorRetriable`,
    `handleAnyWatch`; apimachinery's StreamWatcher for what ends a stream quietly)."""
    decided = [ch02.reflector_next_action(ending) for ending in FIXED]
    assert decided == [
        *["watch", "watch", "list", "watch", "list"],
        *["list", "list", "watch", "watch", "list", "list", "list", "watch", "watch", "watch"],
        *["list", "list"],
    ]
    assert [ch02.reflector_relist_resource_version(*state) for state in ch02.relist_states()][
        :1
    ] == ["0"]
    assert [ch02.reflector_relist_resource_version(*s) for s in [("7", False), ("7", True)]] == [
        "7",
        "",
    ]
    # Every kind of ending the check asks about is one of FIXED's.
    kinds = {(e.stage, e.cause, e.seconds < 1, e.events == 0) for e in FIXED}
    assert {(e.stage, e.cause, e.seconds < 1, e.events == 0) for e in ch02.endings()} <= kinds


def test_exercise_1_verdicts() -> None:
    assert ch02.check_1(None, None).state == "not attempted yet"
    verdict = ch02.check_1(solutions.next_action, None)
    assert verdict.state == "not attempted yet" and "relist_resource_version" in verdict.detail
    verdict = ch02.check_1(lambda ending: "maybe", solutions.relist_resource_version)
    assert verdict.state == "wrong" and "not 'watch' or 'list'" in verdict.detail
    upper = ch02.check_1(
        lambda ending: solutions.next_action(ending).upper(), solutions.relist_resource_version
    )
    assert upper.correct
    assert ch02.check_1(solutions.next_action, solutions.relist_resource_version).correct
    verdict = ch02.check_1(solutions.next_action, lambda last, unavailable: "0")
    assert verdict.state == "wrong" and "relist_resource_version(" in verdict.detail


def test_exercise_1_what_the_chapter_printed_is_wrong() -> None:
    """The five situations the chapter used to list and draw (a timeout, a break, a 410, a 429
    on the request, a very short watch), as a table, answer the new endings wrong, whatever
    it says for what it does not list; so do the error table's causes taken without the stage,
    and a table remembered from an earlier run."""

    def printed(default: str) -> object:
        listed = {
            ("watch stream", None): "watch",
            ("watch stream", "reset"): "watch",
            ("watch stream", 410): "list",
            ("watch request", 429): "watch",
        }

        def table(ending: ch02.Ending) -> str:
            very_short = ending.seconds < 1 and ending.events == 0
            if ending.stage == "watch stream" and ending.cause is None and very_short:
                return "list"
            return listed.get((ending.stage, ending.cause), default)

        return table

    for default in ("watch", "list"):
        verdict = ch02.check_1(printed(default), solutions.relist_resource_version)
        assert verdict.state == "wrong", default
        assert verdict.detail.startswith("next_action has")

    def by_cause(ending: ch02.Ending) -> str:
        # The chapter's table of errors, read by cause alone: refused and 429 repeat the
        # request; a reset or a timeout, as on a stream, watches again.
        if ending.cause in ("refused", 429, "reset", "timeout"):
            return "watch"
        if ending.cause is None:
            return "list" if ending.seconds < 1 and ending.events == 0 else "watch"
        return "list"

    assert ch02.check_1(by_cause, solutions.relist_resource_version).state == "wrong"

    remembered = {e: ch02.reflector_next_action(e) for e in ch02.endings()}
    verdict = ch02.check_1(lambda e: remembered.get(e, "watch"), solutions.relist_resource_version)
    assert verdict.state == "wrong"
    for always in ("watch", "list"):
        verdict = ch02.check_1(lambda e, a=always: a, solutions.relist_resource_version)
        assert verdict.state == "wrong"

    # The versions the chapter printed, remembered: the check draws its own.
    printed_versions = {("", False): "0", ("821", False): "821", ("821", True): ""}
    verdict = ch02.check_1(
        solutions.next_action, lambda last, unavailable: printed_versions.get((last, unavailable))
    )
    assert verdict.state == "wrong"


def test_exercise_1_is_judged_as_a_whole_not_ending_by_ending() -> None:
    """A learner who flips one answer at a time learns only a count: every answer with one
    wrong ending gets the same sentence, which names no ending."""
    details = set()
    for flipped in FIXED:
        kind = (flipped.stage, flipped.cause, flipped.seconds < 1, flipped.events == 0)

        def one_wrong(ending: ch02.Ending, kind: tuple = kind) -> str:
            answer = solutions.next_action(ending)
            if (ending.stage, ending.cause, ending.seconds < 1, ending.events == 0) == kind:
                return {"watch": "list", "list": "watch"}[answer]
            return answer

        verdict = ch02.check_1(one_wrong, solutions.relist_resource_version)
        assert verdict.state == "wrong", flipped
        details.add(verdict.detail)
    assert len(details) == 1
    (detail,) = details
    assert detail.startswith(f"next_action has {len(FIXED) - 1} of {len(FIXED)} endings right")
    assert "Ending(" not in detail


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
    assert "delay 7 (51.2 s)" in verdict.detail

    def caps_the_first_one_too(initial: float, factor: float, cap: float, n: int) -> list[float]:
        delays, base = [], min(initial, cap)  # the course's old rule; client-go's delay()
        for _ in range(n):  # hands an initial above the cap out once, uncapped
            delays.append(base)
            base = min(base * factor, cap)
        return delays

    verdict = ch02.check_3(caps_the_first_one_too)
    assert verdict.state == "wrong" and "schedule(5.0, 2.0, 3.0, 3)" in verdict.detail
    assert "delay 1 (3 s)" in verdict.detail and "client-go's delay()" in verdict.detail
    assert ch02.check_3(solutions.schedule).correct


def test_exercise_3_a_table_of_remembered_schedules_is_wrong() -> None:
    """The schedules of the fixed settings, remembered (from a failure message, or from
    Backoff itself), fail on the setting the check makes up on each run; and a wrong
    verdict never prints the delays Backoff hands out."""
    remembered = {
        (initial, factor, cap, n): ch02.backoff_schedule(initial, factor, cap, n)
        for initial, factor, cap, n in ch02._SCHEDULE_CASES
    }

    def table(initial: float, factor: float, cap: float, n: int) -> list[float]:
        return remembered.get((initial, factor, cap, n), [initial] * n)

    verdict = ch02.check_3(table)
    assert verdict.state == "wrong"
    assert "[" not in verdict.detail  # no list of delays, right or wrong

    def chapter_printed(initial: float, factor: float, cap: float, n: int) -> list[float]:
        return [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0][:n]  # 02a's cell 37

    assert ch02.check_3(chapter_printed).state == "wrong"


def test_exercise_5_what_the_store_holds() -> None:
    """02a's exercise 1: the prediction is judged against the course's store, and each
    misconception gets the sentence that corrects it."""
    store = ch02.run_store_script()
    assert store.list_keys() == ["farm/cherry", "kwok-node-0"]
    assert store.get_by_key("shop/banana") is None
    assert ch02.check_5(None).state == "not attempted yet"
    assert ch02.check_5("farm/cherry").state == "wrong"
    verdict = ch02.check_5(([1, 2], ["farm"]))
    assert verdict.state == "wrong" and "list of strings" in verdict.detail
    namespaces = ["", "farm"]
    cases = {
        # replace merged into the old content instead of swapping it
        ("farm/cherry", "kwok-node-0", "shop/apple"): "the apple) is gone",
        # the tombstone ignored
        ("farm/cherry", "kwok-node-0", "shop/banana"): "tombstone",
        # a cluster-scoped key with a slash
        ("/kwok-node-0", "farm/cherry"): "its name alone",
        # the Node forgotten
        ("farm/cherry",): "a key you left out",
    }
    for keys, hint in cases.items():
        verdict = ch02.check_5((list(keys), namespaces))
        assert verdict.state == "wrong" and hint in verdict.detail, (keys, verdict)
    keys = ["kwok-node-0", "farm/cherry"]  # any order will do
    verdict = ch02.check_5((keys, ["", "farm", "shop"]))  # the emptied value kept
    assert verdict.state == "wrong" and "drops the value" in verdict.detail
    verdict = ch02.check_5((keys, ["farm"]))  # the cluster-scoped object not indexed
    assert verdict.state == "wrong" and "namespace ''" in verdict.detail
    assert ch02.check_5((tuple(keys), {"farm", ""})).correct
    assert ch02.check_5(solutions.answer_store).correct
    printed = (["farm/cherry", "shop/apple"], ["farm", "shop"])  # what 02a's cell 25 printed
    verdict = ch02.check_5(printed)
    assert verdict.state == "wrong" and "kwok-node-0" not in verdict.detail


def test_verdicts_carry_the_number_the_learner_sees() -> None:
    """02a shows checks 5 and 3 as exercises 1 and 2; 02b shows checks 1, 2, 4 as 1, 2, 3."""
    assert ch02.check_5(None).exercise == "1" and ch02.check_3(None).exercise == "2"
    assert ch02.check_1(None, None).exercise == "1" and ch02.check_2(None).exercise == "2"
    assert str(ch02.check_3(solutions.schedule)).startswith("✓ Exercise 2:")


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
