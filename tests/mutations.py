"""The mutation drill's mutations: small bugs planted in the machinery the chapters build.

Each :class:`Mutation` is one exact edit (``old`` -> ``new``, ``old`` found exactly
once) in one ``#| export`` cell of one chapter, named by the cell's id. The drill
(``python -m tests.mutation_drill``, ``make mutations``) applies it to a copy of the
repository, re-exports the modules there (so the chapter and ``helpers/`` carry the
same bug), and runs the chapter under strict nbval and the module's unit tests. A
mutation that neither catches fails the drill.

``lesson`` is the heading of the chapter section whose cell should fail: where the
chapter teaches what the mutation breaks. The README's testing section lists what
caught each one (``python -m tests.mutation_drill --write-readme`` rewrites it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    name: str
    notebook: str
    """The chapter, a file in notebooks/."""
    cell: str
    """The id of the ``#| export`` cell the edit goes into."""
    old: str
    new: str
    lesson: str
    """The heading of the section whose cell should catch it."""


UNIT_TESTS: dict[str, tuple[str, ...]] = {
    "helpers/store.py": ("tests/test_store.py",),
    "helpers/reflector.py": ("tests/test_reflector.py",),
    "helpers/informer.py": ("tests/test_informer.py",),
    "helpers/workqueue/queue.py": ("tests/test_workqueue.py",),
    "helpers/workqueue/delaying.py": ("tests/test_workqueue.py",),
    "helpers/workqueue/rate_limiters.py": ("tests/test_rate_limiters.py",),
    "helpers/controller.py": ("tests/test_controller.py", "tests/test_controller_e2e.py"),
    "helpers/leaderelection.py": (
        "tests/test_leaderelection.py",
        "tests/test_leaderelection_cluster.py",
    ),
}
"""The unit tests that concern each mutated module (none restarts the API server)."""


MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        name="workqueue: a dirty key added again joins the line again (no dedup)",
        notebook="04_workqueue.ipynb",
        cell="4d12f3c3",
        old="if self._shutting_down or item in self._dirty:",
        new="if self._shutting_down:",
        lesson="Dedup, and a key that changes mid-sync",
    ),
    Mutation(
        name="workqueue: a key added while processed joins the line (two workers get it)",
        notebook="04_workqueue.ipynb",
        cell="4d12f3c3",
        old=(
            "        if item in self._processing:\n"
            "            return  # done() will queue it; a second worker must not get it now\n"
        ),
        new="",
        lesson="Dedup, and a key that changes mid-sync",
    ),
    Mutation(
        name="delaying queue: the last add_after wins, not the earliest",
        notebook="04_workqueue.ipynb",
        cell="ac49131f",
        old=(
            "        if current is not None and current.ready_at <= ready_at:\n            return\n"
        ),
        new="",
        lesson="On a fake clock",
    ),
    Mutation(
        name="per-item limiter: the exponent starts at 1 (the first retry waits 2 x base)",
        notebook="04_workqueue.ipynb",
        cell="5416cf2f",
        old="backoff = self._base * 2.0**exponent",
        new="backoff = self._base * 2.0 ** (exponent + 1)",
        lesson="client-go's default, at work",
    ),
    Mutation(
        name="bucket limiter: past the burst every key waits one token, not its place in line",
        notebook="04_workqueue.ipynb",
        cell="87b00dde",
        old="else -self._tokens / self._qps",
        new="else 1 / self._qps",
        lesson="client-go's default, at work",
    ),
    Mutation(
        name="reflector: events do not move its version (it watches again from the list's)",
        notebook="02b_reflector.ipynb",
        cell="36cbbd62",
        old="        if resource_version:\n            self._last_sync_rv = resource_version\n",
        new=(
            '        if resource_version and kind == "BOOKMARK":\n'
            "            self._last_sync_rv = resource_version\n"
        ),
        lesson="WATCH, and watch again: the fix for failure 1",
    ),
    Mutation(
        name="reflector: a 410 is watched again from the same version (no re-list)",
        notebook="02b_reflector.ipynb",
        cell="1cd8cfb1",
        old="(isinstance(err, ApiException) and err.status == 429)",
        new="(isinstance(err, ApiException) and err.status in (410, 429))",
        lesson="A `410`, recovered",
    ),
    Mutation(
        name="informer: a delete missed across a re-list gets no tombstone",
        notebook="03a_informer.ipynb",
        cell="5fabfef6",
        old="self._distribute(_Delete(DeletedFinalStateUnknown(key, last_known)))",
        new="pass  # the missed delete is dropped",
        lesson="Run it: the three failures again",
    ),
    Mutation(
        name="informer: a handler added late gets no replay of the cache",
        notebook="03a_informer.ipynb",
        cell="4805d7f0",
        old="for obj in self.indexer.list():",
        new="for obj in []:",
        lesson="Run it: the three failures again",
    ),
    Mutation(
        name="store: an update leaves the object under its old index values",
        notebook="02a_store_and_backoff.ipynb",
        cell="1c45e17e",
        old="moves = self._index_moves(self._items.get(key), obj)",
        new="moves = self._index_moves(None, obj)",
        lesson="Try it",
    ),
    Mutation(
        name="controller: a Deployment with no controller counts as the Foo's (IsControlledBy)",
        notebook="05_controller.ipynb",
        cell="8c58281a",
        old="return ref is not None and ref.get",
        new="return ref is None or ref.get",
        lesson="A Deployment that exists and is not ours",
    ),
    Mutation(
        name="controller: the status reports the replicas asked for, not those available",
        notebook="05_controller.ipynb",
        cell="43859617",
        old='available = (deployment.get("status") or {}).get("availableReplicas", 0)',
        new='available = (deployment.get("spec") or {}).get("replicas", 0)',
        lesson="Deep dive: Trying it without a cluster",
    ),
    Mutation(
        name="controller: the status is written to the Foo, not its /status (ignored there)",
        notebook="05_controller.ipynb",
        cell="d8d4fedb",
        old="self._custom.replace_namespaced_custom_object_status(",
        new="self._custom.replace_namespaced_custom_object(",
        lesson="Create a Foo",
    ),
    Mutation(
        name="leader election: one failed try ends leadership (no RenewDeadline)",
        notebook="08_leader_election.ipynb",
        cell="ec43c16c",
        old="renewed = self._renew_before(deadline, stop)",
        new="renewed = self.try_acquire_or_renew(self.renew_deadline)",
        lesson="No fencing: a leader that does not know it lost",
    ),
)
