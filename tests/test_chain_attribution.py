"""The attribution logic of helpers.chain, on objects shaped like recorded ones.

The managedFields entries, Events and Nodes below are copies (shortened, with
fixed names) of what the recorder saw on the course's cluster: kube-controller-
manager creating ReplicaSets and Pods, kwok writing Pod status, the scheduler's
events.k8s.io Event with an empty ``source``. No cluster is needed.
"""

from __future__ import annotations

import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import kubernetes
from nbval.plugin import get_sanitize_patterns

from helpers.attribution import (
    DEFAULT_STATUS_WRITERS,
    DELETED_BY_YOU,
    Change,
    Observation,
    attribute,
    attribute_all,
    creator,
    event_source,
    field_owner,
    node_agent,
    observed_changes,
    pod_counts,
    reporting_event,
    state,
    step_of,
)
from helpers.chain import ChainRecorder
from helpers.chain_table import summary, table

NS = "shop"
KWOK_NODE = {"metadata": {"name": "worker", "annotations": {"kwok.x-k8s.io/node": "fake"}}}
REAL_NODE = {"metadata": {"name": "worker2", "annotations": {"node.alpha.kubernetes.io/ttl": "0"}}}
NODES = {"worker": KWOK_NODE, "worker2": REAL_NODE}


def entry(manager: str, fields: dict[str, Any], time: str, subresource: str = "") -> dict:
    found = {"manager": manager, "operation": "Update", "time": time, "fieldsV1": fields}
    return found | ({"subresource": subresource} if subresource else {})


def owner(kind: str, name: str) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "name": name,
        "uid": f"uid-{name}",
        "controller": True,
    }


def replica_set(replicas: int = 3, available: int | None = None) -> dict:
    status = {"replicas": replicas} | ({"availableReplicas": available} if available else {})
    status_fields = {"f:replicas": {}} | ({"f:availableReplicas": {}} if available else {})
    return {
        "metadata": {
            "name": "web-5d4f8",
            "namespace": NS,
            "ownerReferences": [owner("Deployment", "web")],
            "managedFields": [
                entry(
                    "kube-controller-manager",
                    {"f:metadata": {}, "f:spec": {"f:replicas": {}}},
                    "T1",
                ),
                entry("kube-controller-manager", {"f:status": status_fields}, "T2", "status"),
            ],
        },
        "spec": {"replicas": replicas},
        "status": status,
    }


def pod(name: str = "web-5d4f8-abcde", node: str | None = None, agent: str | None = None) -> dict:
    managed = [
        entry("kube-controller-manager", {"f:metadata": {}, "f:spec": {"f:containers": {}}}, "T1")
    ]
    status: dict[str, Any] = {"phase": "Pending"}
    if agent:
        ready = {'k:{"type":"Ready"}': {"f:status": {}}}
        managed.append(
            entry(agent, {"f:status": {"f:phase": {}, "f:conditions": ready}}, "T2", "status")
        )
        status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    spec = {"containers": [{"name": "pause"}]} | ({"nodeName": node} if node else {})
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "ownerReferences": [owner("ReplicaSet", "web-5d4f8")],
            "managedFields": managed,
        },
        "spec": spec,
        "status": status,
    }


def event(
    reason: str, about: tuple[str, str], message: str, *, component: str = "", reporting: str = ""
) -> dict:
    return {
        "reason": reason,
        "involvedObject": {"kind": about[0], "name": about[1], "namespace": NS},
        "message": message,
        "source": {"component": component} if component else {},
        "reportingComponent": reporting,
    }


EVENTS = [
    event(
        "ScalingReplicaSet",
        ("Deployment", "web"),
        "Scaled up replica set web-5d4f8 from 0 to 3",
        component="deployment-controller",
        reporting="deployment-controller",
    ),
    event(
        "SuccessfulCreate",
        ("ReplicaSet", "web-5d4f8"),
        "Created pod: web-5d4f8-abcde",
        component="replicaset-controller",
        reporting="replicaset-controller",
    ),
    event(
        "Scheduled",
        ("Pod", "web-5d4f8-abcde"),
        f"Successfully assigned {NS}/web-5d4f8-abcde to worker",
        reporting="default-scheduler",
    ),
]


def who(kind: str, field: str, path: tuple[str, ...] | None, obj: dict, events=EVENTS) -> tuple:
    return attribute(kind, field, path, obj, events, DEFAULT_STATUS_WRITERS, NODES)


# --- the evidence -------------------------------------------------------------------------------


def test_field_owner_walks_the_field_tree() -> None:
    kwok_pod = pod(node="worker", agent="kwok-controller")
    assert field_owner(kwok_pod, ("f:status", "f:phase"))["manager"] == "kwok-controller"
    assert field_owner(kwok_pod, ("f:spec", "f:containers"))["manager"] == "kube-controller-manager"
    assert field_owner(kwok_pod, ("f:spec", "f:nodeName")) is None, "a binding leaves no entry"


def test_field_owner_takes_the_newest_holder_and_the_enclosing_field_when_asked() -> None:
    shared = {
        "metadata": {
            "managedFields": [
                entry("old-applier", {"f:spec": {"f:replicas": {}}}, "2026-01-01T00:00:00Z"),
                entry("new-applier", {"f:spec": {"f:replicas": {}}}, "2026-01-02T00:00:00Z"),
            ]
        }
    }
    assert field_owner(shared, ("f:spec", "f:replicas"))["manager"] == "new-applier"
    scaled_to_zero = replica_set(replicas=0)  # availableReplicas omitted, as the API server does
    path = ("f:status", "f:availableReplicas")
    assert field_owner(scaled_to_zero, path) is None
    holder = field_owner(scaled_to_zero, path, or_enclosing=True)
    assert (holder["manager"], holder["subresource"]) == ("kube-controller-manager", "status")


def test_creator_is_the_oldest_entry_of_the_object_itself() -> None:
    obj = {
        "metadata": {
            "managedFields": [
                entry("kube-controller-manager", {"f:status": {}}, "T0", "status"),
                entry("you", {"f:spec": {}}, "T1"),
                entry("kubectl-edit", {"f:spec": {}}, "T2"),
            ]
        }
    }
    assert creator(obj)["manager"] == "you"


def test_event_source_reads_both_event_apis() -> None:
    assert event_source(EVENTS[1]) == "replicaset-controller"
    assert event_source(EVENTS[2]) == "default-scheduler"  # events.k8s.io: source is empty
    assert event_source({"source": {}}) == "?"


def test_reporting_event_needs_the_reason_the_owner_and_the_exact_name() -> None:
    the_pod = pod()
    assert reporting_event(EVENTS, {"SuccessfulCreate"}, the_pod) is EVENTS[1]
    assert reporting_event(EVENTS, {"SuccessfulDelete"}, the_pod) is None
    rs = replica_set()
    # "Created pod: web-5d4f8-abcde" contains the ReplicaSet's name, but does not name it.
    assert reporting_event(EVENTS, {"SuccessfulCreate"}, rs) is None
    assert reporting_event(EVENTS, {"ScalingReplicaSet"}, rs) is EVENTS[0]
    stranger = pod() | {"metadata": pod()["metadata"] | {"ownerReferences": []}}
    elsewhere = event("SuccessfulCreate", ("ReplicaSet", "other"), "Created pod: web-5d4f8-abcde")
    assert reporting_event([elsewhere], {"SuccessfulCreate"}, stranger) is None


# --- attribution, step by step -------------------------------------------------------------------


def test_each_step_is_attributed_from_its_evidence() -> None:
    deployment = {
        "metadata": {"name": "web", "managedFields": [entry("you", {"f:spec": {}}, "T0")]}
    }
    kwok_pod, kubelet_pod = (
        pod(node="worker", agent="kwok-controller"),
        pod(node="worker2", agent="kubelet"),
    )
    phase = ("f:status", "f:phase")
    assert who("Deployment", "created", None, deployment) == ("you", "managedFields")
    assert who("ReplicaSet", "created", None, replica_set())[0] == "deployment-controller"
    assert who("Pod", "created", None, pod())[0] == "replicaset-controller"
    assert who("Pod", "spec.nodeName", None, kwok_pod) == ("scheduler", "Event Scheduled")
    assert who("Pod", "status.phase", phase, kwok_pod)[0] == "kubelet (kwok)"
    assert who("Pod", "status.phase", phase, kubelet_pod) == ("kubelet", "managedFields")
    available = ("f:status", "f:availableReplicas")
    assert who("ReplicaSet", "status.availableReplicas", available, replica_set(3, 3)) == (
        "replicaset-controller",
        "managedFields + RBAC",
    )
    assert who("ReplicaSet", "created", None, replica_set())[1] == "Event ScalingReplicaSet"


def test_a_change_whose_event_has_not_arrived_is_pending() -> None:
    actor, evidence = who("Pod", "created", None, pod(), events=[])
    assert actor is None and "not seen yet" in evidence
    assert who("Pod", "spec.nodeName", None, pod(node="worker"), events=[])[0] is None


def test_deletes_are_attributed_by_events_then_to_the_node_agent() -> None:
    bound = pod(node="worker", agent="kwok-controller")
    name = bound["metadata"]["name"]
    ours = event(DELETED_BY_YOU, ("Pod", name), f"Deleted pod: {name}", component="you")
    theirs = event(
        "SuccessfulDelete",
        ("ReplicaSet", "web-5d4f8"),
        f"Deleted pod: {name}",
        component="replicaset-controller",
    )
    assert who("Pod", "deletionTimestamp", None, bound, [ours]) == ("you", "Event DeletedByYou")
    assert who("Pod", "deletionTimestamp", None, bound, [theirs])[0] == "replicaset-controller"
    assert who("Pod", "deletionTimestamp", None, bound, [])[0] is None
    assert who("Pod", "deleted", None, bound)[0] == "kubelet (kwok)"
    assert who("Pod", "deleted", None, pod(node="worker2"))[0] == "kubelet"
    assert who("Pod", "deleted", None, pod())[0] == "API server"


def test_the_garbage_collector_deletes_what_an_owner_that_is_gone_owned() -> None:
    bound = pod(node="worker", agent="kwok-controller")
    gone = {"ReplicaSet": {"uid-of-a-new-web-5d4f8"}, "Pod": {"uid-of-the-pod"}}
    there = {"ReplicaSet": {"uid-web-5d4f8"}}
    assert who_alive("deletionTimestamp", bound, gone) == (
        "garbage-collector",
        "owner ReplicaSet web-5d4f8 gone",
    )
    assert who_alive("deletionTimestamp", bound, there)[0] is None, "still waiting for an Event"
    assert who_alive("deletionTimestamp", bound, {})[0] is None, "owner kind not watched: unknown"
    rs = replica_set()
    assert who_alive("deleted", rs, {"Deployment": set()})[0] == "garbage-collector"
    assert step_of("ReplicaSet", "deleted", "garbage-collector") is None


def who_alive(field: str, obj: dict, alive: dict) -> tuple:
    kind = "Pod" if "containers" in obj["spec"] else "ReplicaSet"
    return attribute(kind, field, None, obj, [], DEFAULT_STATUS_WRITERS, NODES, alive)


def test_node_agent_reads_kwoks_annotation() -> None:
    assert node_agent(KWOK_NODE) == "kubelet (kwok)"
    assert node_agent(REAL_NODE) == node_agent(None) == "kubelet"


def test_steps() -> None:
    assert [
        step_of("Deployment", f, "you")
        for f in ("created", "spec.replicas", "status.availableReplicas")
    ] == [1, 1, 8]
    assert [
        step_of("ReplicaSet", f, "x")
        for f in ("created", "spec.replicas", "status.availableReplicas")
    ] == [2, 2, 7]
    pod_fields = ("created", "not bound yet", "spec.nodeName", "status.phase", "Ready", "deleted")
    assert [step_of("Pod", f, "x") for f in pod_fields] == [3, 4, 5, 6, 6, 9]
    assert step_of("Pod", "deletionTimestamp", "replicaset-controller") == 3
    assert step_of("Pod", "deletionTimestamp", "you") == 9
    assert (step_of("Foo", "created", "you"), step_of("Foo", "status.availableReplicas", "x")) == (
        0,
        10,
    )
    assert step_of("Node", "Ready", "kubelet") is None


# --- from observations to rows --------------------------------------------------------------------


def test_observed_changes_report_only_the_chosen_fields() -> None:
    before = pod(node="worker")
    after = pod(node="worker", agent="kwok-controller")
    after["metadata"]["resourceVersion"] = "99"  # not reported
    changed = observed_changes(Observation(1.0, "Pod", "updated", before, after))
    assert changed == [("status.phase", "Pending", "Running"), ("Ready", "-", "True")]
    scaled = observed_changes(
        Observation(1.0, "ReplicaSet", "updated", replica_set(1, 1), replica_set(0))
    )
    assert scaled == [("spec.replicas", "1", "0"), ("status.availableReplicas", "1", "0")]
    assert observed_changes(Observation(1.0, "Pod", "added", None, pod())) == [
        ("created", "", "spec.nodeName empty")
    ]


def a_recorded_chain(order: list[str]) -> list[Observation]:
    """Two Pods created, bound and started, in the interleaving ``order`` gives."""
    names = ["web-5d4f8-aaaaa", "web-5d4f8-bbbbb"]
    steps = (
        {f"{n}-created": ("added", None, pod(n)) for n in names}
        | {f"{n}-bound": ("updated", pod(n), pod(n, node="worker")) for n in names}
        | {
            f"{n}-started": ("updated", pod(n, "worker"), pod(n, "worker", agent="kwok-controller"))
            for n in names
        }
    )
    return [Observation(i * 0.01, "Pod", *steps[key]) for i, key in enumerate(order)]


def events_for(names: list[str]) -> list[dict]:
    created = [
        event(
            "SuccessfulCreate",
            ("ReplicaSet", "web-5d4f8"),
            f"Created pod: {n}",
            component="replicaset-controller",
        )
        for n in names
    ]
    scheduled = [
        event(
            "Scheduled",
            ("Pod", n),
            f"Successfully assigned {NS}/{n} to worker",
            reporting="default-scheduler",
        )
        for n in names
    ]
    return created + scheduled


def test_step_4_is_checked_not_assumed() -> None:
    names = ["web-5d4f8-aaaaa", "web-5d4f8-bbbbb"]
    order = [f"{n}-{s}" for n in names for s in ("created", "bound", "started")]
    changes = attribute_all(
        a_recorded_chain(order), events_for(names), DEFAULT_STATUS_WRITERS, NODES
    )
    waits = [c for c in changes if c.step == 4]
    assert sorted(c.name for c in waits) == names and {c.actor for c in waits} == {"kubelet (kwok)"}
    # A node agent writing to a Pod before it is bound would break step 4: no row then.
    unbound = pod(names[0])
    early = [
        Observation(0.0, "Pod", "added", None, unbound),
        Observation(0.1, "Pod", "updated", unbound, pod(names[0], agent="kwok")),
    ]
    assert not [
        c
        for c in attribute_all(early, events_for(names), DEFAULT_STATUS_WRITERS, NODES)
        if c.step == 4
    ]


def test_the_table_is_the_same_for_every_interleaving_but_its_times() -> None:
    names = ["web-5d4f8-aaaaa", "web-5d4f8-bbbbb"]
    texts = set()
    for seed in range(20):
        order = [f"{n}-created" for n in names]
        random.Random(seed).shuffle(order)
        rest = [f"{n}-{s}" for n in names for s in ("bound", "started")]
        random.Random(seed + 100).shuffle(rest)
        rest.sort(key=lambda key: key.endswith("started"))  # a Pod starts only once bound
        changes = attribute_all(
            a_recorded_chain(order + rest), events_for(names), DEFAULT_STATUS_WRITERS, NODES
        )
        texts.add(re.sub(r"t\+\d+\.\d{3}s", "t+T", table(summary(changes))))
    assert len(texts) == 1, texts
    (text,) = texts
    assert "2 Pods" in text and "status phase=Running, Ready=True" in text
    assert [line.split()[0] for line in text.splitlines()[1:]] == ["3", "4", "5", "6"]


def test_the_table_through_the_nbval_sanitizer_does_not_depend_on_how_long_the_run_took() -> None:
    """Chapter 07's stored tables are compared through tests/nbval-sanitize.cfg.

    A run that passes 10 s writes one digit more (t+10.123s): that must not move
    a column, as it did on a loaded machine before the time column had a fixed width.
    """
    cfg = Path(__file__).with_name("nbval-sanitize.cfg").read_text()
    patterns = get_sanitize_patterns(cfg)

    def sanitized(text: str) -> str:
        for regex, replacement in patterns:
            text = re.sub(regex, replacement, text)
        return text

    names = ["web-5d4f8-aaaaa", "web-5d4f8-bbbbb"]
    order = [f"{n}-{s}" for s in ("created", "bound", "started") for n in names]
    changes = attribute_all(
        a_recorded_chain(order), events_for(names), DEFAULT_STATUS_WRITERS, NODES
    )
    texts = {
        sanitized(table(summary([replace(c, at=c.at + late) for c in changes])))
        for late in (0.0, 9.99, 10.0, 99.5, 990.0)
    }
    assert len(texts) == 1, texts


def test_summary_keeps_a_specs_values_in_order_and_a_status_final() -> None:
    def rs_change(at: float, field: str, before: str, after: str, available: str) -> Change:
        state = (
            ("spec.replicas", after if field == "spec.replicas" else "3"),
            ("status.availableReplicas", available),
        )
        return Change(
            at,
            "ReplicaSet",
            "web-5d4f8",
            field,
            before,
            after,
            "x",
            "e",
            2 if field == "spec.replicas" else 7,
            state,
        )

    changes = [
        rs_change(0.1, "spec.replicas", "3", "5", "3"),
        rs_change(0.2, "status.availableReplicas", "3", "4", "4"),
        rs_change(0.3, "status.availableReplicas", "4", "5", "5"),
        rs_change(0.4, "spec.replicas", "5", "2", "5"),
        rs_change(0.5, "status.availableReplicas", "5", "2", "2"),
    ]
    rows = summary(changes)
    assert [(row.step, row.change) for row in rows] == [
        (2, "spec.replicas 3 → 5 → 2"),
        (7, "status availableReplicas=2"),
    ]


def test_pod_counts_leave_out_pods_being_deleted() -> None:
    def c(at: float, name: str, field: str, after: str = "") -> Change:
        return Change(at, "Pod", name, field, "", after, "x", "e", None)

    changes = [c(0, "a", "created"), c(1, "a", "Ready", "True"), c(2, "b", "created")]
    changes += [
        c(3, "b", "Ready", "True"),
        c(4, "a", "deletionTimestamp", "set"),
        c(5, "a", "deleted"),
    ]
    times, existing, ready = pod_counts(changes)
    assert (times, existing, ready) == ([0, 1, 2, 3, 4, 5], [1, 1, 2, 2, 1, 1], [0, 1, 1, 2, 1, 1])


# --- the table and the picture --------------------------------------------------------------------


def test_the_table_is_text_and_an_html_table_that_wraps() -> None:
    from helpers.chain_table import Row, table

    text = table([Row(1, 0.5, "Deployment web", "created", "you", "managedFields <x>")])
    assert text.splitlines()[1].split()[:3] == ["1", "Deployment", "web"], "no time column"
    html = text._repr_html_()
    assert html.count("<tr>") == 2 and "&lt;x&gt;" in html, "a row, the header, escaped"


def pod_change(at: float, name: str, step: int, actor: str) -> Change:
    return Change(at, "Pod", name, "x", "", "", actor, "", step, ())


def test_circles_of_one_step_at_one_time_are_one_and_others_do_not_cover_each_other() -> None:
    from helpers.swimlanes import CIRCLE_PIXELS, LEVEL, circles

    row = {"kubelet": 0.0, "replicaset-controller": 1.0}
    per_second = 1000.0  # a pixel a millisecond
    created = [pod_change(0.100 + n * 0.002, f"web-1-{n}", 3, "replicaset-controller")
               for n in range(3)]  # fmt: skip
    near = [pod_change(0.300, "web-1-0", 4, "kubelet"), pod_change(0.305, "web-1-1", 9, "kubelet")]
    placed = circles([*created, *near], row, per_second, {})
    assert [len(c.changes) for c in placed] == [3, 1, 1], "three Pods created at once: one circle"
    four, nine = placed[1], placed[2]
    assert abs(nine.x - four.x) * per_second < CIRCLE_PIXELS and abs(nine.y - four.y) == LEVEL


def test_the_old_and_the_new_replica_set_are_told_apart() -> None:
    from helpers.swimlanes import circles, role_of

    roles = {"web-old": "old", "web-new": "new"}
    assert role_of(pod_change(0, "web-old-abcde", 3, "x"), roles) == "old"
    assert role_of(pod_change(0, "web-new", 2, "x"), roles) == "new"
    assert role_of(pod_change(0, "web-older-abcde", 3, "x"), roles) is None
    both = [pod_change(0.1, "web-old-a", 3, "rs"), pod_change(0.1, "web-new-b", 3, "rs")]
    assert len(circles(both, {"rs": 0.0}, 1000.0, roles)) == 2, "never one mark for both"


def test_a_replay_grows_to_the_whole_chain_and_says_when_it_is_done() -> None:
    """The cell waits for the replay's last frame (an event, not a sleep)."""
    import time

    from helpers.swimlanes import LiveSwimlanes

    class Recorded:
        def __init__(self, changes: list[Change]) -> None:
            self._changes = changes

        def changes(self, since: float = 0.0) -> list[Change]:
            return [c for c in self._changes if c.at >= since]

    changes = [pod_change(0.1 * n, f"web-1-{n}", 3, "you") for n in range(10)]
    lanes = LiveSwimlanes(Recorded(changes), caption="c", title="t", replay=1.0, show=False)  # type: ignore[arg-type]
    lanes.freeze(changes)
    lanes._replay_from = time.monotonic()
    lanes._draw()
    assert "replayed" in lanes.axes["lanes"].get_title(loc="left")
    assert not lanes._replayed.is_set()
    lanes._replay_from = time.monotonic() - 1.0
    lanes._draw()
    assert lanes._replayed.is_set()


def deployment(available: int) -> dict:
    status_fields = {"f:status": {"f:availableReplicas": {}, "f:updatedReplicas": {}}}
    managed = [entry("kube-controller-manager", status_fields, "2026-12-04T00:00:00Z", "status")]
    metadata = {"name": "web", "namespace": NS, "uid": "uid-web", "managedFields": managed}
    status = {"availableReplicas": available, "updatedReplicas": available}
    return {"metadata": metadata, "spec": {"replicas": available}, "status": status}


def test_a_wait_returns_the_changes_its_condition_was_judged_on() -> None:
    """An arrival while a condition is judged (the informers record from their own threads)
    makes the wait judge again: the changes it returns then hold what the condition saw."""
    recorder = ChainRecorder(kubernetes.client.ApiClient(), NS)  # never started: no request
    recorder.record("Deployment", "updated", deployment(3), deployment(5))
    judged: list[str] = []

    def condition(changes: list[Change]) -> bool:
        if not judged:  # the first judgement: the status update to 2 arrives meanwhile
            recorder.record("Deployment", "updated", deployment(5), deployment(2))
        judged.append(state(recorder.changes(), "Deployment", "web")["status.availableReplicas"])
        return judged[-1] == "2"

    changes = recorder.wait_for(condition, what="the whole record to say 2", timeout=0.5)
    assert state(changes, "Deployment", "web")["status.availableReplicas"] == "2", judged


# --- RBAC: who may write a status, and who does --------------------------------------------


def role(name: str, *rules: dict) -> Any:
    """A ClusterRole as the Python client returns it."""
    return kubernetes.client.V1ClusterRole(
        metadata=kubernetes.client.V1ObjectMeta(name=f"system:controller:{name}"),
        rules=[kubernetes.client.V1PolicyRule(**rule) for rule in rules],
    )


# Upstream's bootstrap roles, as the cluster serves them (bootstrappolicy/controller_policy.go).
UPSTREAM_ROLES = [
    role("deployment-controller",
         {"api_groups": ["apps", "extensions"], "resources": ["deployments/status"],
          "verbs": ["update"]}),
    role("generic-garbage-collector",
         {"api_groups": ["*"], "resources": ["*"],
          "verbs": ["delete", "get", "list", "patch", "update", "watch"]}),
    role("horizontal-pod-autoscaler",
         {"api_groups": ["*"], "resources": ["*/scale"], "verbs": ["get", "update"]}),
    role("replicaset-controller",
         {"api_groups": ["apps", "extensions"], "resources": ["replicasets"],
          "verbs": ["get", "list", "watch", "update"]},
         {"api_groups": ["apps", "extensions"], "resources": ["replicasets/status"],
          "verbs": ["update"]}),
]  # fmt: skip


def test_a_rule_for_star_allows_every_subresource_as_rbac_matches_it() -> None:
    """ResourceMatches: "*" matches every resource and subresource; "*/scale" every resource's
    scale, not its status; a rule limited to resourceNames allows no object in general."""
    from helpers.attribution import rule_allows

    def rule(resources: list[str], verbs: list[str], **more: Any) -> Any:
        return kubernetes.client.V1PolicyRule(
            api_groups=more.pop("groups", ["*"]), resources=resources, verbs=verbs, **more
        )

    assert rule_allows(rule(["*"], ["update"]), "update", "apps", "replicasets", "status")
    assert rule_allows(rule(["*/status"], ["*"]), "update", "apps", "replicasets", "status")
    assert not rule_allows(rule(["*/scale"], ["update"]), "update", "apps", "replicasets", "status")
    assert not rule_allows(
        rule(["replicasets"], ["update"]), "update", "apps", "replicasets", "status"
    )
    assert not rule_allows(rule(["*"], ["get"]), "update", "apps", "replicasets", "status")
    assert not rule_allows(
        rule(["*"], ["update"], groups=["batch"]), "update", "apps", "replicasets", "status"
    )
    named = rule(["*"], ["update"], resource_names=["web"])
    assert not rule_allows(named, "update", "apps", "replicasets", "status")


def test_rbac_names_two_status_writers_and_the_code_leaves_one() -> None:
    """The garbage collector's "*" allows it to update any status; it never does, so the
    recorder names the one controller whose role names the status (chapter 07, A2)."""
    from helpers.attribution import NEVER_WRITES_STATUS, Grant, status_grants, writers_from

    grants = status_grants(UPSTREAM_ROLES, ["replicasets", "deployments"])
    assert grants["replicasets"] == [
        Grant("generic-garbage-collector", "*"),
        Grant("replicaset-controller", "replicasets/status"),
    ]
    assert {g.controller for g in grants["deployments"]} == {
        "deployment-controller",
        "generic-garbage-collector",
    }
    assert "generic-garbage-collector" in NEVER_WRITES_STATUS
    assert writers_from(grants) == DEFAULT_STATUS_WRITERS


def test_two_controllers_that_may_write_a_status_are_not_guessed_between() -> None:
    from helpers.attribution import status_grants, writers_from
    from helpers.errors import CourseError

    rogue = role("rogue-controller", {"api_groups": ["apps"], "resources": ["replicasets/status"],
                                      "verbs": ["update"]})  # fmt: skip
    grants = status_grants([*UPSTREAM_ROLES, rogue], ["replicasets"])
    try:
        writers_from(grants)
    except CourseError as err:
        assert "replicasets" in str(err)
    else:
        raise AssertionError("two candidate writers must not be guessed between")


# --- a picture starts at your write, in the order etcd wrote things ------------------------


def change(at: float, kind: str, name: str, field: str, actor: str, rv: int, **more: Any) -> Change:
    step = {"created": 3, "Ready": 6, "deletionTimestamp": 3}.get(field, 1)
    state = more.pop("state", ())
    return Change(at, kind, name, field, "", more.pop("after", ""), actor, "", step, state, rv)


def test_a_picture_keeps_what_your_write_caused_however_early_it_arrived() -> None:
    """Two watches: the Pod a rollout created may arrive before the Deployment update that led
    to it, and a late status from before may arrive after it. resourceVersions decide."""
    from helpers.attribution import from_write

    tail = change(0.10, "Pod", "web-old-a", "Ready", "kubelet", rv=90, after="True")
    early = change(0.11, "Pod", "web-new-a", "created", "replicaset-controller", rv=102)
    yours = change(0.12, "Deployment", "web", "image", "you", rv=100)
    later = change(0.13, "Pod", "web-new-a", "Ready", "kubelet", rv=105, after="True")
    kept = from_write([tail, early, yours, later])
    assert kept == [early, yours, later]
    unnumbered = [replace(c, rv=None) for c in (tail, early, yours, later)]
    assert from_write(unnumbered) == unnumbered[2:], "without versions, the arrival time decides"


class Recorded:
    """A recorder's record, for LiveSwimlanes without a cluster."""

    def __init__(self, changes: list[Change]) -> None:
        self._changes = changes

    def changes(self, since: float = 0.0) -> list[Change]:
        return [c for c in self._changes if c.at >= since]


def a_rollout_whose_first_new_pod_arrives_first() -> list[Change]:
    """web of 3 rolling to a new ReplicaSet; the new ReplicaSet and its first Pod arrive over
    their watches before the Deployment's update does (seen on the course's cluster)."""

    def rs(at: float, name: str, field: str, replicas: int, rv: int, actor: str) -> Change:
        return change(at, "ReplicaSet", name, field, actor, rv,
                      state=(("spec.replicas", str(replicas)),))  # fmt: skip

    def pod(at: float, name: str, field: str, rv: int, actor: str = "kubelet") -> Change:
        return change(at, "Pod", name, field, actor, rv, after="True" if field == "Ready" else "")

    before = [rs(0.0, "web-old", "created", 3, 1, "deployment-controller")]
    for n in range(3):
        before += [pod(0.1, f"web-old-{n}", "created", 2 + n, "replicaset-controller"),
                   pod(0.2, f"web-old-{n}", "Ready", 5 + n)]  # fmt: skip
    dc, rsc = "deployment-controller", "replicaset-controller"
    during = [
        rs(1.00, "web-new", "created", 1, 101, dc),
        pod(1.01, "web-new-0", "created", 102, rsc),  # before yours: the case that failed
        change(1.02, "Deployment", "web", "image", "you", 100),
        pod(1.05, "web-new-0", "Ready", 103),
        rs(1.06, "web-old", "spec.replicas", 2, 104, dc),
        pod(1.07, "web-old-0", "deletionTimestamp", 105, rsc),
        rs(1.08, "web-new", "spec.replicas", 2, 106, dc),
        pod(1.09, "web-new-1", "created", 107, rsc),
        pod(1.10, "web-new-1", "Ready", 108),
        rs(1.11, "web-old", "spec.replicas", 1, 109, dc),
        pod(1.12, "web-old-1", "deletionTimestamp", 110, rsc),
        rs(1.13, "web-new", "spec.replicas", 3, 111, dc),
        pod(1.14, "web-new-2", "created", 112, rsc),
        pod(1.15, "web-new-2", "Ready", 113),
        rs(1.16, "web-old", "spec.replicas", 0, 114, dc),
        pod(1.17, "web-old-2", "deletionTimestamp", 115, rsc),
    ]
    return before + during


def test_a_rollout_picture_counts_every_pod_your_write_made_and_says_so() -> None:
    """The picture of 1 run in 5 lost the first new Pod (it arrived before the Deployment's
    update, and the picture started at the update's arrival): Ready fell to 2 and ended at 2,
    under prose that says at least 3 stay Ready. The cluster never dipped; the picture did."""
    from helpers.swimlanes import LiveSwimlanes

    record = a_rollout_whose_first_new_pod_arrives_first()
    rollout = [c for c in record if c.at >= 0.9]
    lanes = LiveSwimlanes(Recorded(record), caption="c", title="t", since=0.9, limits=(4, 3),
                          show=False)  # type: ignore[arg-type]  # fmt: skip
    lanes.freeze(rollout)
    assert "web-new-0" in {c.name for c in lanes.changes if c.field == "created"}
    drawn = lanes.drawn
    assert drawn.counts == (4, 3, 3), drawn
    assert ("Pod", 3, 3, 0) in drawn.objects and ("ReplicaSet", 1, 0, 1) in drawn.objects
    text = str(drawn)
    assert "asked for at most 4, Ready at least 3, at the end 3" in text
    assert "Pod 3 new + 3 gone" in text and "changes drawn from t+" in text


def test_the_summary_line_under_a_picture_is_compared_through_the_sanitizer() -> None:
    """Only the count of changes and the times are masked (the cells assert on them)."""
    from helpers.swimlanes import Drawn

    cfg = Path(__file__).with_name("nbval-sanitize.cfg").read_text()
    patterns = get_sanitize_patterns(cfg)

    def sanitized(text: str) -> str:
        for regex, replacement in patterns:
            text = re.sub(regex, replacement, text)
        return text

    def line(changes: int, first: float) -> str:
        objects = (("Deployment", 1, 0, 0), ("Pod", 3, 0, 0))
        return str(Drawn(6, (1, 2, 3, 4, 5, 6), objects, changes, first, first + 0.2))

    assert sanitized(line(23, 0.7)) == sanitized(line(31, 12.5))
    assert sanitized(line(23, 0.7)) != sanitized(str(Drawn(6, (1, 2, 3), (), 23, 0.7, 0.9)))
    assert "steps 1-6 (+ statuses)" in line(23, 0.7)


def test_the_table_fits_a_laptops_notebook_column() -> None:
    """The first table of chapter 07 was 170 characters wide."""
    names = ["web-5d4f8-aaaaa", "web-5d4f8-bbbbb"]
    order = [f"{n}-{s}" for n in names for s in ("created", "bound", "started")]
    changes = attribute_all(
        a_recorded_chain(order), events_for(names), DEFAULT_STATUS_WRITERS, NODES
    )
    rows = [*summary(changes)]
    rows.append(
        replace(
            rows[0],
            step=8,
            what="Deployment web",
            actor="deployment-controller",
            change="status availableReplicas=3",
            evidence="managedFields + RBAC",
        )
    )
    assert max(len(line) for line in table(rows).splitlines()) <= 110


def test_an_informer_records_without_waiting_for_a_judgement() -> None:
    """A wait judged its condition while holding the lock every arrival needed: on a long
    record the informers' threads waited for each judgement and wrote the next changes down
    late, all at once (chapter 07's killed Pod drew 13 changes within one millisecond)."""
    import threading
    import time

    recorder = ChainRecorder(kubernetes.client.ApiClient(), NS)  # never started: no request
    judging, took = threading.Event(), []

    def slow(changes: list[Change]) -> bool:
        judging.set()
        time.sleep(0.3)  # a long record's judgement
        return len(recorder.observations()) >= 2

    def informer() -> None:
        judging.wait(5)
        began = time.monotonic()
        recorder.record("Deployment", "updated", deployment(3), deployment(2))
        took.append(time.monotonic() - began)

    thread = threading.Thread(target=informer, name="informer-test")
    thread.start()
    recorder.record("Deployment", "updated", deployment(2), deployment(3))
    recorder.wait_for(slow, what="two changes", timeout=5)
    thread.join(5)
    assert took and took[0] < 0.1, took
