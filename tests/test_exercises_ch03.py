"""Chapter 03's exercise checks say "not attempted", "wrong" and "correct" when they should,
and every stored solution passes its check. Checks 1, 2 and 7 are 03a's exercises 1, 2 and 3,
checks 3 to 6 are 03b's exercises 1 to 4, and each verdict names its exercise as the notebook
does.

Each check is tried with an answer copied from what its chapter printed (and check 2 with a
class that holds fixed counts): each must say "wrong". On a cluster with etcd access the
tombstone check gives a real verdict; only without it may it say it can't check.
"""

from __future__ import annotations

import random
from typing import Any

import kubernetes
import pytest

from helpers import informer
from helpers.cluster.info import describe
from helpers.exercises import ch03
from helpers.lister import Lister
from helpers.store import (
    DeletedFinalStateUnknown,
    meta_namespace_key,
    namespace_index_func,
    owner_uid_index_func,
)
from notebooks.solutions import ch03 as solutions


def assert_check_2_judges(verdict: Any) -> None:
    """A real verdict where the cluster can compact etcd; "can't check" only where it cannot."""
    if describe().etcd_url is None:
        assert "can't check this on a cluster without etcd access" in str(verdict)
        assert "not attempted" not in str(verdict)
    else:
        assert verdict.correct, verdict


@pytest.mark.cluster
def test_ch03_check_1_stuck_handler(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch03.check_1(None, api, namespace).state == "not attempted yet"
    assert ch03.check_1("2, 3", api, namespace).state == "wrong"
    merged = ch03.check_1((0, 3), api, namespace)
    assert merged.state == "wrong" and "merged" in merged.detail
    in_the_call = ch03.check_1((3, 3), api, namespace)
    assert in_the_call.state == "wrong" and "middle" in in_the_call.detail
    held_back = ch03.check_1((2, 0), api, namespace)
    assert held_back.state == "wrong" and "thread" in held_back.detail
    # 03a's slow-handler drill printed: 2 changes heard by the other, 1 waiting in the buffer.
    copied = ch03.check_1((1, 2), api, namespace)
    assert copied.state == "wrong" and "3" not in copied.detail
    assert ch03.check_1(solutions.answer_1, api, namespace).correct
    kubernetes.client.CoreV1Api(api).delete_namespace(namespace)
    assert_check_2_judges(ch03.check_2(solutions.DeleteCounter, api, namespace))


def test_ch03_check_7_replace_all_notifications() -> None:
    assert ch03.check_7(None).state == "not attempted yet"
    assert str(ch03.check_7(None)).startswith("… Exercise 3:"), "03a's third exercise"
    for _ in range(20):  # three of its re-lists are drawn at random on every run
        assert ch03.check_7(solutions.replace_all_notifications).correct


def test_ch03_check_7_expects_what_the_informer_is_told() -> None:
    """The check expects, re-list by re-list, what the chapter's SharedInformer._replace_all
    hands _distribute (as client-go's processReplacedAllInfo hands the informer's OnDelete,
    OnUpdate and OnAdd), tombstones in any order."""
    as_tuple = {
        informer._Delete: lambda n: ("delete", n.obj),
        informer._Update: lambda n: ("update", n.old, n.new),
        informer._Add: lambda n: ("add", n.obj),
    }
    for _, cache_before, listed in ch03._relists(random.Random(7)):
        shared = informer.SharedInformer(object(), name="oracle")  # type: ignore[arg-type]
        shared.indexer.replace(list(cache_before.values()), "1")
        shared.synced.set()  # a re-list, not the first list
        told: list[tuple] = []

        def record(n: Any, sync: bool = False, told: list[tuple] = told) -> None:
            told.append(as_tuple[type(n)](n))

        shared._distribute = record  # type: ignore[method-assign]
        shared._replace_all(listed, "2")
        expected = ch03._replace_all_expected(cache_before, listed)
        assert ch03._sorted_deletes(told) == ch03._sorted_deletes(expected)


def _grouped(cache_before: dict[str, Any], listed: list[Any]) -> list[tuple]:
    """Tombstones, then every add, then every update: the right notifications, wrong order."""
    told = solutions.replace_all_notifications(cache_before, listed)
    return sorted(told, key=lambda n: ["delete", "add", "update"].index(n[0]))


def _changed_only(cache_before: dict[str, Any], listed: list[Any]) -> list[tuple]:
    """Leaves out an update whose old and new resourceVersion are the same."""
    told = solutions.replace_all_notifications(cache_before, listed)
    version = lambda obj: obj["metadata"]["resourceVersion"]  # noqa: E731
    return [n for n in told if n[0] != "update" or version(n[1]) != version(n[2])]


def _by_uid(cache_before: dict[str, Any], listed: list[Any]) -> list[tuple]:
    """An object created again under its name (a new uid) as a delete and an add."""
    uid = {meta_namespace_key(o): o["metadata"]["uid"] for o in listed}
    renewed = {k: o for k, o in cache_before.items() if k in uid and o["metadata"]["uid"] != uid[k]}
    told = solutions.replace_all_notifications(
        {k: o for k, o in cache_before.items() if k not in renewed}, listed
    )
    return [("delete", DeletedFinalStateUnknown(k, o)) for k, o in renewed.items()] + told


def _plain_deletes(cache_before: dict[str, Any], listed: list[Any]) -> list[tuple]:
    told = solutions.replace_all_notifications(cache_before, listed)
    return [("delete", n[1].obj) if n[0] == "delete" else n for n in told]


PRINTED_IN_03A = [
    # 03a's re-list drill printed "delete db tombstone", "add queue", "update web new version".
    ("delete", DeletedFinalStateUnknown("ch03a-informer/db", {"metadata": {"name": "db"}})),
    ("add", {"metadata": {"name": "queue", "namespace": "ch03a-informer"}}),
    (
        "update",
        {"metadata": {"name": "web", "namespace": "ch03a-informer", "resourceVersion": "1"}},
        {"metadata": {"name": "web", "namespace": "ch03a-informer", "resourceVersion": "2"}},
    ),
]


@pytest.mark.parametrize(
    ("cheat", "says"),
    [
        (lambda cache_before, listed: [], "said nothing of it"),
        (lambda cache_before, listed: PRINTED_IN_03A, "which was not in the cache"),
        (_grouped, "not in the order of the list"),
        (_changed_only, "listed again unchanged"),
        (_by_uid, "even its uid"),
        (_plain_deletes, "DeletedFinalStateUnknown"),
    ],
    ids=["always-empty", "printed-in-03a", "adds-before-updates", "changed-only", "by-uid",
         "plain-deletes"],
)  # fmt: skip
def test_ch03_check_7_says_wrong_to_cheats(cheat: Any, says: str) -> None:
    """Each cheat is told which rule it broke, never the notifications it should have returned."""
    verdict = ch03.check_7(cheat)
    assert verdict.state == "wrong", verdict
    assert says in verdict.detail, verdict.detail
    assert "('update'" not in verdict.detail and "('add'" not in verdict.detail


def test_ch03_check_3_same_colour() -> None:
    assert ch03.check_3(None, Lister).state == "not attempted yet"

    def every_namespace(lister: Any, namespace: str, name: str) -> list[str] | None:
        colour = lister.namespace(namespace).get(name)["metadata"]["labels"]["colour"]
        return sorted(o["metadata"]["name"] for o in lister.list({"colour": colour})
                      if o["metadata"]["name"] != name)  # fmt: skip

    verdict = ch03.check_3(every_namespace, Lister)
    assert verdict.state == "wrong" and "a/apple" in verdict.detail
    assert "another namespace" in verdict.detail
    assert ch03.check_3(solutions.same_colour, Lister).correct


def test_ch03_check_3_says_wrong_to_an_answer_copied_from_the_chapter() -> None:
    """03b printed "green or black: ['cherry', 'fig']"; a function returning what the chapter
    printed is wrong, and the message names the rule it broke, not the expected list."""

    def copied(lister: Any, namespace: str, name: str) -> list[str]:
        return ["cherry", "fig"]

    verdict = ch03.check_3(copied, Lister)
    assert verdict.state == "wrong", verdict
    assert "['cherry']" not in verdict.detail and "['lime']" not in verdict.detail


@pytest.mark.cluster
def test_ch03_check_2_delete_counter(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch03.check_2(None, api, namespace).state == "not attempted yet"
    if describe().etcd_url is None:
        verdict = ch03.check_2(solutions.DeleteCounter, api, namespace)
        assert "can't check this on a cluster without etcd access" in str(verdict)
        assert "not attempted" not in str(verdict)
        return

    class OnlyObjects:
        def __init__(self) -> None:
            self.deletes = 0
            self.tombstones = 0

        def on_delete(self, obj: Any) -> None:
            obj["metadata"]["name"]  # a tombstone is not a dict: this raises for it
            self.deletes += 1

    verdict = ch03.check_2(OnlyObjects, api, namespace)
    assert verdict.state == "wrong" and "tombstone" in verdict.detail

    class FixedCounts:
        """The cheat: the counts the exercise text used to state, one live and one missed."""

        deletes = 2
        tombstones = 1

    verdict = ch03.check_2(FixedCounts, api, namespace)
    assert verdict.state == "wrong", verdict
    # The message names what the class did, never the count it should have had (3 in run 1).
    assert "deletes is 2," in verdict.detail and "3" not in verdict.detail
    assert ch03.check_2(solutions.DeleteCounter, api, namespace).correct


@pytest.mark.cluster
def test_ch03_check_4_lister_requests(api: kubernetes.client.ApiClient, namespace: str) -> None:
    assert ch03.check_4(None, api, namespace).state == "not attempted yet"
    assert ch03.check_4(5, api, namespace).state == "wrong"
    # 03b printed "through the lister: 2 requests" and "calling the API: 63 requests".
    for copied in (2, 63):
        assert ch03.check_4(copied, api, namespace).state == "wrong"
    assert ch03.check_4(solutions.answer_2, api, namespace).correct


@pytest.mark.cluster
def test_ch03_checks_after_run_all(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """After "Run All" the chapter's last cell has deleted its namespace; checks bring it back."""
    kubernetes.client.CoreV1Api(api).delete_namespace(namespace)
    assert ch03.check_4(solutions.answer_2, api, namespace).correct
    assert ch03.check_1(solutions.answer_1, api, namespace).correct
    kubernetes.client.CoreV1Api(api).delete_namespace(namespace)
    assert_check_2_judges(ch03.check_2(solutions.DeleteCounter, api, namespace))


def test_ch03_verdicts_number_exercises_as_each_notebook_does() -> None:
    """03b's first exercise is check 3: its verdict says "Exercise 1", as the notebook does."""
    assert str(ch03.check_3(None, Lister)).startswith("… Exercise 1:")


@pytest.mark.cluster
def test_ch03_check_5_node_index(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """03b exercise 3: an index of Pods by node, registered on a running informer. The chapter's
    own index functions (by owner, by namespace), an always-empty one, one that files an
    unplaced Pod under "", one that fails on it and one that returns a bare string are wrong."""
    assert ch03.check_5(None, api, namespace).state == "not attempted yet"
    for cheat in (owner_uid_index_func, namespace_index_func, lambda pod: []):
        verdict = ch03.check_5(cheat, api, namespace)
        assert verdict.state == "wrong", verdict
    verdict = ch03.check_5(lambda pod: [pod["spec"].get("nodeName") or ""], api, namespace)
    assert verdict.state == "wrong" and "no value" in verdict.detail, verdict
    verdict = ch03.check_5(lambda pod: [pod["spec"]["nodeName"]], api, namespace)
    assert verdict.state == "wrong" and "KeyError" in verdict.detail, verdict
    verdict = ch03.check_5(lambda pod: pod["spec"].get("nodeName") or [], api, namespace)
    assert verdict.state == "wrong" and "list of values" in verdict.detail, verdict
    assert ch03.check_5(solutions.by_node, api, namespace).correct


@pytest.mark.cluster
def test_ch03_check_6_sync_colour_fixed(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """03b exercise 4: cell 28's sync_colour as the chapter wrote it changes the cache and is
    wrong; so is one that never writes, and one that writes without comparing first."""
    assert ch03.check_6(None, api, namespace).state == "not attempted yet"

    def as_in_the_chapter(lister, core, namespace, name, want, *, lose_the_write=False):
        cm = lister.get(name)
        if cm["metadata"]["labels"]["colour"] == want:
            return "nothing to do"
        cm["metadata"]["labels"]["colour"] = want
        if lose_the_write:
            raise ConnectionError("the write was lost")
        core.patch_namespaced_config_map(
            name, namespace, {"metadata": {"labels": {"colour": want}}}
        )
        return "written"

    verdict = ch03.check_6(as_in_the_chapter, api, namespace)
    assert verdict.state == "wrong" and "changed the cache" in verdict.detail, verdict

    def never_writes(lister, core, namespace, name, want, *, lose_the_write=False):
        if lose_the_write:
            raise ConnectionError("the write was lost")
        return "written"

    verdict = ch03.check_6(never_writes, api, namespace)
    assert verdict.state == "wrong" and "still has" in verdict.detail, verdict

    def never_compares(lister, core, namespace, name, want, *, lose_the_write=False):
        if lose_the_write:
            raise ConnectionError("the write was lost")
        core.patch_namespaced_config_map(
            name, namespace, {"metadata": {"labels": {"colour": want}}}
        )
        return "written"

    verdict = ch03.check_6(never_compares, api, namespace)
    assert verdict.state == "wrong" and "compare first" in verdict.detail, verdict
    assert ch03.check_6(solutions.fixed_sync_colour, api, namespace).correct


@pytest.mark.cluster
def test_ch03_checks_5_and_6_after_run_all(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """After "Run All" the chapter's last cell has deleted its namespace; checks bring it back."""
    kubernetes.client.CoreV1Api(api).delete_namespace(namespace)
    assert ch03.check_5(solutions.by_node, api, namespace).correct
    kubernetes.client.CoreV1Api(api).delete_namespace(namespace)
    assert ch03.check_6(solutions.fixed_sync_colour, api, namespace).correct
