"""Who made each change in a chain from a Deployment down to its Pods, and how we know.

No client-go counterpart: chapter 07's reasoning, written by hand. It turns what
an informer delivered (an :class:`Observation`: the object before and after)
into numbered, attributed :class:`Change` rows, and answers questions about a
list of them. Who made a change is read from the data, never assumed:
``managedFields`` name the field manager of each field's last write
(:func:`field_owner`); an Event names the controller inside
kube-controller-manager, the scheduler that bound a Pod, or whoever deleted one
(:func:`reporting_event`); RBAC names the controllers that may write a status,
and of those only one ever does (:func:`status_writers`). A change whose Event
has not arrived yet is *pending* (its actor is None). Each change gets the step
of the chain it belongs to (:data:`STEPS`).

Plain functions of plain data: :class:`helpers.chain.ChainRecorder` records
the observations and calls them; :mod:`helpers.chain_table` folds the changes
into a table, :mod:`helpers.swimlanes` draws them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from helpers.errors import CourseError

# The field manager (and Event source) the chapter writes with, so the data names you.
YOU = "you"

# --- evidence 1: managedFields ----------------------------------------------------------------

KUBE_CONTROLLER_MANAGER = "kube-controller-manager"  # one field manager, some thirty controllers


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return obj


def managed_fields(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(_get(obj, "metadata", "managedFields") or [])


def field_owner(
    obj: Mapping[str, Any], path: Sequence[str], *, or_enclosing: bool = False
) -> Mapping[str, Any] | None:
    """The entry holding ``path`` (``"f:spec", "f:replicas"``): its last writer (the newest).

    ``or_enclosing``: for a field a write removed, the holder of the nearest enclosing one."""
    for length in range(len(path), 0 if or_enclosing else len(path) - 1, -1):
        holders = []
        for entry in managed_fields(obj):
            node: Any = entry.get("fieldsV1") or {}
            for key in path[:length]:
                node = node.get(key) if isinstance(node, Mapping) else None
            if node is not None:
                holders.append(entry)
        if holders:
            return max(holders, key=lambda entry: entry.get("time") or "")
    return None


def creator(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The oldest managedFields entry of the object itself (not a subresource): who created it."""
    own = [entry for entry in managed_fields(obj) if not entry.get("subresource")]
    return min(own, key=lambda entry: entry.get("time") or "", default=None)


# --- evidence 2: Events -------------------------------------------------------------------------


def event_source(event: Mapping[str, Any]) -> str:
    """Who wrote an Event: ``reportingComponent`` (events.k8s.io), else ``source.component``."""
    return event.get("reportingComponent") or _get(event, "source", "component") or "?"


def reporting_event(
    events: Iterable[Mapping[str, Any]], reasons: Collection[str], obj: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """An Event with one of ``reasons``, about ``obj`` or its owner, whose message names ``obj``."""
    name = _get(obj, "metadata", "name")
    about = {name} | {ref.get("name") for ref in _get(obj, "metadata", "ownerReferences") or []}
    naming = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])")  # "web-1", not "web-1-x"
    for event in events:
        if (
            event.get("reason") in reasons
            and _get(event, "involvedObject", "name") in about
            and naming.search(event.get("message") or "")
        ):
            return event
    return None


# --- evidence 3: RBAC, for status writes ---------------------------------------------------------

DEFAULT_STATUS_WRITERS = {
    "deployments": "deployment-controller",
    "replicasets": "replicaset-controller",
}
"""What upstream's RBAC roles say; for clusters that will not show you their ClusterRoles."""
USE_DEFAULTS = "use helpers.attribution.DEFAULT_STATUS_WRITERS, upstream's defaults, instead."
GROUPS = {"deployments": "apps", "replicasets": "apps"}
"""The API group of each resource whose status writer the recorder asks RBAC about."""

NEVER_WRITES_STATUS = {
    "generic-garbage-collector": "it deletes objects and patches their metadata (owner "
    "references, finalizers) through a metadata-only client, never a status",
}
"""Controllers whose role may update a status (through ``*``) but whose code never does.
The garbage collector's writes are ``deleteObject`` and ``patchObject`` in
https://github.com/kubernetes/kubernetes/blob/v1.36.3/pkg/controller/garbagecollector/operations.go#L53-L102:
the object itself, never a subresource."""


@dataclass(frozen=True)
class Grant:
    """A controller whose ClusterRole may update a status, and the rule's resource that allows it
    (``"replicasets/status"`` by name, or ``"*"``, which RBAC matches to subresources too)."""

    controller: str
    resource: str


def rule_allows(rule: Any, verb: str, group: str, resource: str, subresource: str = "") -> bool:
    """Does one RBAC rule (a ``V1PolicyRule``) allow ``verb`` on ``resource/subresource``?

    As Kubernetes matches a rule (``RuleAllows`` in
    https://github.com/kubernetes/kubernetes/blob/v1.36.3/plugin/pkg/auth/authorizer/rbac/rbac.go#L178-L193
    and ``ResourceMatches`` in
    https://github.com/kubernetes/kubernetes/blob/v1.36.3/pkg/apis/rbac/v1/evaluation_helpers.go#L52-L78):
    ``*`` matches every verb, group and resource, subresources included, and ``*/status``
    every resource's status. A rule limited to some ``resourceNames`` is left out: it does not
    allow the verb on any object of the resource.
    """
    combined = f"{resource}/{subresource}" if subresource else resource
    if rule.resource_names:
        return False
    if not {"*", verb} & set(rule.verbs or []) or not {"*", group} & set(rule.api_groups or []):
        return False
    return any(
        entry in ("*", combined) or (subresource and entry == f"*/{subresource}")
        for entry in rule.resources or []
    )


def status_grants(roles: Iterable[Any], resources: Iterable[str]) -> dict[str, list[Grant]]:
    """For each resource, every controller whose ClusterRole (``system:controller:<name>``)
    allows ``update`` on its ``/status``, with the rule's resource that allows it."""
    found: dict[str, list[Grant]] = {resource: [] for resource in resources}
    for role in roles:
        if not role.metadata.name.startswith("system:controller:"):
            continue
        controller = role.metadata.name.removeprefix("system:controller:")
        for resource, grants in found.items():
            for rule in role.rules or []:
                if rule_allows(rule, "update", GROUPS.get(resource, ""), resource, "status"):
                    named = f"{resource}/status" in (rule.resources or [])
                    grants.append(Grant(controller, f"{resource}/status" if named else "*"))
                    break
    return found


def writers_from(grants: Mapping[str, Sequence[Grant]]) -> dict[str, str]:
    """The one controller that writes each status: of those RBAC allows, the ones whose code
    writes statuses at all (``NEVER_WRITES_STATUS`` says who does not, and why)."""
    writers = {
        resource: sorted({g.controller for g in found if g.controller not in NEVER_WRITES_STATUS})
        for resource, found in grants.items()
    }
    unclear = {resource: names for resource, names in writers.items() if len(names) != 1}
    if unclear:
        raise CourseError(
            f"RBAC does not leave exactly one controller for {unclear}.", USE_DEFAULTS
        )
    return {resource: names[0] for resource, names in writers.items()}


def cluster_roles(api: kubernetes.client.ApiClient) -> list[Any]:
    """The cluster's default ClusterRoles (those the API server made at its start)."""
    rbac = kubernetes.client.RbacAuthorizationV1Api(api)
    try:
        selector = "kubernetes.io/bootstrapping=rbac-defaults"
        return list(rbac.list_cluster_role(label_selector=selector).items)
    except ApiException as err:
        raise CourseError(
            f"Could not read the cluster's ClusterRoles (HTTP {err.status}).", USE_DEFAULTS
        ) from err


def status_writers(
    api: kubernetes.client.ApiClient, resources: Iterable[str] = tuple(DEFAULT_STATUS_WRITERS)
) -> dict[str, str]:
    """For each resource, the controller that writes its ``/status``: RBAC names who may
    (:func:`status_grants`), the controllers' code who does (:func:`writers_from`)."""
    return writers_from(status_grants(cluster_roles(api), resources))


# --- naming the actors ---------------------------------------------------------------------------

DELETED_BY_YOU = "DeletedByYou"
"""The reason of the Event the chapter writes about its own deletes (a DELETE leaves no trace)."""

EVENT_REASONS: dict[tuple[str, str], frozenset[str]] = {
    ("ReplicaSet", "created"): frozenset({"ScalingReplicaSet"}),
    ("ReplicaSet", "spec.replicas"): frozenset({"ScalingReplicaSet"}),
    ("Pod", "created"): frozenset({"SuccessfulCreate"}),
    ("Pod", "spec.nodeName"): frozenset({"Scheduled"}),
    ("Pod", "deletionTimestamp"): frozenset({"SuccessfulDelete", DELETED_BY_YOU}),
}
"""Which Events report which change (kind, field): their writer names itself in them."""

RESOURCES = {"Foo": "foos", "Deployment": "deployments", "ReplicaSet": "replicasets", "Pod": "pods"}
GARBAGE_COLLECTOR = "garbage-collector"


def actor_named(name: str) -> str:
    """The chapter's name for a field manager or an Event's writer."""
    if name in ("kube-scheduler", "default-scheduler"):
        return "scheduler"
    if name.startswith("kwok"):
        return "kubelet (kwok)"
    return name


def node_agent(node: Mapping[str, Any] | None) -> str:
    """Who plays the kubelet on ``node``: kwok marks the Nodes it fakes with an annotation."""
    annotations = _get(node or {}, "metadata", "annotations") or {}
    return "kubelet (kwok)" if "kwok.x-k8s.io/node" in annotations else "kubelet"


Alive = Mapping[str, Collection[str]]  # kind -> UIDs of its live objects


def gone_owner(obj: Mapping[str, Any], alive: Alive | None) -> str | None:
    """``"Kind name"`` of ``obj``'s controller owner if it is gone or being deleted, else None."""
    for ref in _get(obj, "metadata", "ownerReferences") or []:
        known = (alive or {}).get(ref.get("kind", ""))
        if ref.get("controller") and known is not None and ref.get("uid") not in known:
            return f"{ref['kind']} {ref['name']}"
    return None


def attribute_delete(
    kind: str,
    field: str,
    obj: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    nodes: Mapping[str, Mapping[str, Any]],
    alive: Alive | None,
) -> tuple[str | None, str]:
    """Who deleted ``obj``: ``field`` "deletionTimestamp" (the DELETE) or "deleted" (gone)."""
    node = _get(obj, "spec", "nodeName")
    if field == "deleted" and kind == "Pod" and node:
        return node_agent(nodes.get(node)), "DELETE with grace 0"
    if field == "deleted" and kind == "Pod" and not _get(obj, "metadata", "deletionTimestamp"):
        return "API server", "removed at once (unbound)"
    event = reporting_event(events, EVENT_REASONS.get((kind, "deletionTimestamp"), ()), obj)
    if event is not None:
        return actor_named(event_source(event)), f"Event {event['reason']}"
    if owner := gone_owner(obj, alive):
        return GARBAGE_COLLECTOR, f"owner {owner} gone"
    if field == "deleted":  # the DELETE itself was reported (or not) when it happened
        return "API server", "removed after its DELETE"
    return None, "Event SuccessfulDelete/DeletedByYou (not seen yet)"


def attribute(
    kind: str,
    field: str,
    path: Sequence[str] | None,
    obj: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    writers: Mapping[str, str],
    nodes: Mapping[str, Mapping[str, Any]],
    alive: Alive | None = None,
) -> tuple[str | None, str]:
    """``(actor, evidence)`` for a change of ``field`` on ``obj``; None: no Event yet."""
    if field in ("deleted", "deletionTimestamp"):
        return attribute_delete(kind, field, obj, events, nodes, alive)
    if field == "created":
        entry = creator(obj)
    else:
        entry = field_owner(obj, path, or_enclosing=True) if path else None
    manager = entry.get("manager", "?") if entry else None
    subresource = entry.get("subresource") if entry else None
    controller = writers.get(RESOURCES.get(kind, ""))
    if manager == KUBE_CONTROLLER_MANAGER and subresource == "status" and controller:
        return controller, "managedFields + RBAC"  # kube-controller-manager, and RBAC says which
    if manager is not None and (manager != KUBE_CONTROLLER_MANAGER or subresource):
        return actor_named(manager), "managedFields"  # a manager with one job
    # kube-controller-manager's own write, or a Binding (which leaves no entry): the Event says who.
    reasons = EVENT_REASONS.get((kind, field))
    if reasons is None:
        return actor_named(manager or "?"), "managedFields"
    event = reporting_event(events, reasons, obj)
    if event is None:
        return None, f"Event {'/'.join(sorted(reasons))} (not seen yet)"
    return actor_named(event_source(event)), f"Event {event['reason']}"


# --- the steps ---------------------------------------------------------------------------------

STEPS = {
    0: "you create or change a Foo",
    1: "you (or a controller) write a Deployment",
    2: "deployment-controller creates or scales a ReplicaSet",
    3: "replicaset-controller creates or deletes Pods",
    4: "no kubelet sees a Pod not bound to its node",
    5: "the scheduler binds a Pod to a node (a Binding)",
    6: "the node's kubelet reports the Pod's status",
    7: "replicaset-controller writes the ReplicaSet's status",
    8: "deployment-controller writes the Deployment's status",
    9: "a Pod is deleted: its kubelet confirms; it is gone",
    10: "the Foo controller copies availableReplicas",
}


def is_status(field: str) -> bool:
    """Status fields are written through the ``status`` subresource (Ready is a condition)."""
    return field.startswith("status.") or field == "Ready"


def step_of(kind: str, field: str, actor: str | None) -> int | None:
    """The step of a change (see ``STEPS``); None for what is not a step (Nodes, Events)."""
    if kind in ("Foo", "Deployment", "ReplicaSet") and field != "deleted":
        return {"Foo": (0, 10), "Deployment": (1, 8), "ReplicaSet": (2, 7)}[kind][is_status(field)]
    if kind != "Pod":
        return None
    if field == "deletionTimestamp":
        return 3 if actor == "replicaset-controller" else 9
    return {"created": 3, "not bound yet": 4, "spec.nodeName": 5, "deleted": 9}.get(field, 6)


# --- what an informer delivered -------------------------------------------------------------


@dataclass(frozen=True)
class Observation:
    """One change an informer delivered, ``at`` seconds after the recorder started.

    ``rv`` is the object's resourceVersion after the change (None if it is not a number). The
    API's rules call resourceVersions opaque; on a cluster with one etcd they are its
    revisions, one counter for every kind, so they tell which of two writes came first even
    when two watches deliver them in the other order (:func:`from_write`)."""

    at: float
    kind: str
    verb: str  # "added", "updated" or "deleted"
    old: Mapping[str, Any] | None  # None unless updated
    new: Mapping[str, Any]  # when deleted: the last state known
    rv: int | None = None


# --- the fields each kind reports --------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """A reported field: how to read it, and where managedFields keep it (None: they never do)."""

    name: str
    read: Callable[[Mapping[str, Any]], Any]
    path: Callable[[Mapping[str, Any]], tuple[str, ...]] | None


def _plain(*path: str) -> Field:
    """The field at ``path``; a count the API server omits when it is zero reads as 0."""
    managed = tuple(f"f:{key}" for key in path)
    zero = 0 if path[-1].endswith("eplicas") else None

    def read(obj: Mapping[str, Any]) -> Any:
        value = _get(obj, *path)
        return zero if value is None else value

    return Field(".".join(path), read, lambda obj: managed)


def _key(**item: str) -> str:
    """How managedFields name an item of a list: ``k:{"type":"Ready"}``."""
    return "k:" + json.dumps(item, separators=(",", ":"))


def _first_container(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (_get(obj, "spec", "template", "spec", "containers") or [{}])[0]


def _ready(obj: Mapping[str, Any]) -> str | None:
    conditions = _get(obj, "status", "conditions") or []
    return next((c.get("status") for c in conditions if c.get("type") == "Ready"), None)


IMAGE = Field(
    "image",
    lambda obj: _first_container(obj).get("image"),
    lambda obj: (
        "f:spec",
        "f:template",
        "f:spec",
        "f:containers",
        _key(name=_first_container(obj).get("name", "")),
        "f:image",
    ),
)
READY = Field("Ready", _ready, lambda obj: ("f:status", "f:conditions", _key(type="Ready")))
NODE_NAME = Field("spec.nodeName", lambda obj: _get(obj, "spec", "nodeName"), None)
DELETION = Field(
    "deletionTimestamp", lambda obj: bool(_get(obj, "metadata", "deletionTimestamp")), None
)
RESTARTS = Field(
    "restartCount",
    lambda obj: sum(c.get("restartCount", 0) for c in _get(obj, "status", "containerStatuses")
                    or []) or None,  # no change to report until a container restarted
    lambda obj: ("f:status", "f:containerStatuses"),
)  # fmt: skip

FIELDS: dict[str, list[Field]] = {
    "Foo": [_plain("spec", "replicas"), _plain("status", "availableReplicas")],
    "Deployment": [
        _plain("spec", "replicas"),
        IMAGE,
        _plain("status", "availableReplicas"),
        _plain("status", "updatedReplicas"),
    ],
    "ReplicaSet": [_plain("spec", "replicas"), _plain("status", "availableReplicas")],
    "Pod": [NODE_NAME, _plain("status", "phase"), READY, RESTARTS, DELETION],
    "Node": [READY],
}

# --- from observations to attributed, numbered changes -----------------------------------------


@dataclass(frozen=True)
class Change:
    """One reported change: when (seconds since start), to what, by whom, and how we know."""

    at: float
    kind: str
    name: str
    field: str  # a Field's name, or "created", "deleted", "not bound yet"
    before: str
    after: str
    actor: str | None  # None while the evidence (an Event) has not arrived: pending
    evidence: str
    step: int | None
    state: tuple[tuple[str, str], ...] = ()  # every reported field of the object, just after
    rv: int | None = None  # the object's resourceVersion just after (see Observation)

    @property
    def pending(self) -> bool:
        return self.actor is None


def _text(value: Any) -> str:
    if value is None or value is False:
        return "-"
    return "set" if value is True else str(value)


def observed_changes(observation: Observation) -> list[tuple[str, str, str]]:
    """``(field, before, after)`` for each reported field an observation changed."""
    obj = observation.new
    if observation.verb == "added":
        if observation.kind == "Pod":
            node = _get(obj, "spec", "nodeName")
            return [("created", "", f"spec.nodeName={node}" if node else "spec.nodeName empty")]
        replicas = _get(obj, "spec", "replicas")
        return [("created", "", "" if replicas is None else f"spec.replicas={replicas}")]
    if observation.verb == "deleted":
        return [("deleted", "", "")]
    old = observation.old or {}
    return [
        (f.name, _text(f.read(old)), _text(f.read(obj)))
        for f in FIELDS.get(observation.kind, [])
        if f.read(old) != f.read(obj)
    ]


def changes_of(
    observation: Observation,
    events: Sequence[Mapping[str, Any]],
    writers: Mapping[str, str],
    nodes: Mapping[str, Mapping[str, Any]],
    alive: Alive | None = None,
) -> list[Change]:
    """The reported changes in one observation, attributed and numbered."""
    kind, obj = observation.kind, observation.new
    fields = {f.name: f for f in FIELDS.get(kind, [])}
    state = tuple((name, _text(f.read(obj))) for name, f in fields.items())
    changes = []
    for field, before, after in observed_changes(observation):
        path = fields[field].path if field in fields else None
        managed = path(obj) if path else None
        actor, evidence = attribute(kind, field, managed, obj, events, writers, nodes, alive)
        step = step_of(kind, field, actor)
        changes.append(
            Change(
                observation.at,
                kind,
                obj["metadata"]["name"],
                field,
                before,
                after,
                actor,
                evidence,
                step,
                state,
                observation.rv,
            )
        )
    return changes


def attribute_all(
    observations: Iterable[Observation],
    events: Sequence[Mapping[str, Any]],
    writers: Mapping[str, str],
    nodes: Mapping[str, Mapping[str, Any]],
    alive: Alive | None = None,
) -> list[Change]:
    """Every reported change in ``observations``, attributed and numbered, step 4 included."""
    changes = [
        change
        for observation in observations
        if observation.kind in FIELDS
        for change in changes_of(observation, events, writers, nodes, alive)
    ]
    return with_unbound_waits(changes, nodes)


def unbound_waits(
    changes: Sequence[Change], nodes: Mapping[str, Mapping[str, Any]]
) -> list[Change]:
    """Step 4, checked: a row for each Pod created unbound that no kubelet wrote to until bound."""
    waits = []
    for created in (c for c in changes if c.kind == "Pod" and c.field == "created"):
        if created.after != "spec.nodeName empty":
            continue
        mine = [c for c in changes if c.kind == "Pod" and c.name == created.name]
        bound = next((c for c in mine if c.step == 5), None)
        started = next((c for c in mine if c.step == 6), None)
        if started is not None and (bound is None or started.at < bound.at):
            continue  # a kubelet wrote to an unbound Pod: step 4 did not hold
        agent = node_agent(nodes.get(bound.after)) if bound else "kubelet"
        evidence = "nothing written until bound"
        waits.append(
            replace(
                created,
                field="not bound yet",
                before="",
                after="ignored",
                actor=agent,
                evidence=evidence,
                step=4,
            )
        )
    return waits


def with_unbound_waits(
    changes: Sequence[Change], nodes: Mapping[str, Mapping[str, Any]]
) -> list[Change]:
    """``changes`` and the step 4 rows they imply, in time order."""
    return sorted([*changes, *unbound_waits(changes, nodes)], key=lambda change: change.at)


# --- questions about a list of changes ----------------------------------------------------------


def state(changes: Sequence[Change], kind: str, name: str | None = None) -> dict[str, str]:
    """The reported fields of object ``name`` (or of any ``kind``) after its last change."""
    for change in reversed(changes):
        if change.kind == kind and name in (None, change.name) and change.state:
            return dict(change.state)
    return {}


def from_write(changes: Sequence[Change], actor: str = YOU) -> list[Change]:
    """The changes from ``actor``'s first write on, in the order etcd wrote them.

    Each kind arrives over a watch of its own, so arrival times mix two things: a change
    written before yours (the tail of something earlier) may arrive after it, and one it
    caused may arrive before it (a Pod created a moment before the Deployment update that led
    to it). The resourceVersions (see :class:`Observation`) put them in the order they were
    written. Without numbers to compare, the arrival time decides.
    """
    first = next((c for c in changes if c.actor == actor), None)
    if first is None:
        return list(changes)
    versions = [c.rv for c in changes if c.actor == actor and c.rv is not None]
    if first.rv is None or not versions:
        return [c for c in changes if c.at >= first.at]
    return [c for c in changes if c.rv is not None and c.rv >= min(versions)]


def names(changes: Sequence[Change], kind: str, field: str, after: str | None = None) -> set[str]:
    """The objects of ``kind`` with a change of ``field`` (to ``after``, if given)."""
    return {
        c.name for c in changes if c.kind == kind and c.field == field and after in (None, c.after)
    }


def pod_counts(changes: Sequence[Change]) -> tuple[list[float], list[int], list[int]]:
    """Over time: Pods that exist and are not being deleted, and how many of them are Ready."""
    alive: set[str] = set()
    ready: set[str] = set()
    times, existing, available = [], [], []
    for change in changes:
        if change.kind != "Pod":
            continue
        if change.field == "created":
            alive.add(change.name)
        elif change.field in ("deletionTimestamp", "deleted"):
            alive.discard(change.name)
        elif change.field == "Ready":
            (ready.add if change.after == "True" else ready.discard)(change.name)
        times.append(change.at)
        existing.append(len(alive))
        available.append(len(alive & ready))
    return times, existing, available


def replicas_asked(changes: Sequence[Change], since: float = 0.0) -> tuple[list[float], list[int]]:
    """Over time, from ``since``: the sum of the ReplicaSets' ``spec.replicas``.

    That sum is what deployment-controller keeps within replicas + maxSurge
    during a rollout. The Pods themselves can exceed it for a moment: a
    ReplicaSet it scaled down deletes its Pod in its own sync, which may run
    after the other ReplicaSet's sync has created the replacement (since 1.36
    replicaset-controller retries a sync whose cache has not yet seen its own
    last write, so under load that order is not rare).
    """
    asked: dict[str, int] = {}
    times, sums = [], []
    for change in changes:
        if change.kind != "ReplicaSet":
            continue
        replicas = dict(change.state).get("spec.replicas", "")
        if change.field == "deleted":
            asked.pop(change.name, None)
        elif replicas.isdigit():
            asked[change.name] = int(replicas)
        if change.at >= since:
            times.append(change.at)
            sums.append(sum(asked.values()))
    return times, sums


def settled(name: str, replicas: int) -> Callable[[Sequence[Change]], bool]:
    """A condition on a whole record: Deployment ``name`` and all under it settled at ``replicas``.

    The Deployment reports that many updated and available; each of its
    ReplicaSets reports as many available as it asks for; and that many of its
    Pods are Ready in the record. The last part matters: the informers are
    independent streams, and the Deployment may report its Pods available a
    moment before the Pod informer delivers the last one's Ready.
    """

    def condition(changes: Sequence[Change]) -> bool:
        mine = [c for c in changes if c.name == name or c.name.startswith(f"{name}-")]
        deployment = state(mine, "Deployment", name)
        reports = {deployment.get(f"status.{f}") for f in ("availableReplicas", "updatedReplicas")}
        if reports != {str(replicas)}:
            return False
        for replica_set in {c.name for c in mine if c.kind == "ReplicaSet"}:
            reported = state(mine, "ReplicaSet", replica_set)
            if reported.get("status.availableReplicas") != reported.get("spec.replicas"):
                return False
        return ready_count(mine) == replicas

    return condition


def ready_count(changes: Sequence[Change]) -> int:
    """How many recorded Pods are Ready and not being deleted, after the last change."""
    return (pod_counts(changes)[2] or [0])[-1]
