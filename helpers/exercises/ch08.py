"""Checks for chapter 08's exercises, in its two parts.

08a, the controller as a program: check 1 asks for a prediction (more workers
against the client's token bucket) and shows the answer on the course's real
bucket; check 2 runs the learner's readiness check in two real controller
processes (in this kernel) that share one Lease, asks their ``/readyz``, stops
the leader and asks the other again. 08b, shipping it: check 3 binds the
learner's Role rules to a ServiceAccount and asks the API server, one
SelfSubjectAccessReview per permission, whether that account may do what the
finalizing controller does, and nothing more (it counts what is missing without
naming it: :func:`run_finalizing` runs the controller as that account on one Foo
and shows each 403 it meets, which is how the learner finds out); check 4 asks
for a prediction (a foreground delete of a Foo held by a finalizer) and carries
it out.

Verdicts name the exercise as its notebook numbers it (checks 1 and 2 are 08a's
exercises 1 and 2, checks 3 and 4 are 08b's exercises 1 and 2). Checks 2, 3
and 4 bring the chapter's namespace back first: after "Run All" its last cell
has deleted it.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from .. import namespaces, rbac
from ..apierrors import explain, status_of
from ..clock import StopEvent
from ..controller import (
    FOO_GROUP,
    FOO_PLURAL,
    FOO_VERSION,
    CacheSyncError,
    foo_body,
    run_controller,
)
from ..errors import CourseError
from ..finalizers import (
    FINALIZER,
    ExternalRecords,
    FinalizingFooController,
    is_being_deleted,
    set_foo_finalizers,
)
from ..informer import SharedInformer
from ..listwatch import ListWatch
from ..program import ControllerProcess, parse_args
from ..startup_checks import CONTROLLER_PERMISSIONS, Permission
from ..throttle import Throttle
from ..waiting import wait_for
from . import CannotCheck, Verdict, correct, not_attempted, wrong

GUARD_SECONDS = 60.0
"""How long a check waits for what takes a few seconds on a quiet machine."""

# --- 08a, exercise 1: more workers, one bucket -------------------------------------------------

ANSWERS_1 = {
    "a": "workers do not make tokens: every sync writes a Foo status through the one "
    "samplecontroller.k8s.io bucket (5 a second), so eight workers wait for it as two did",
    "c": "the queue's lock is held for microseconds; the wait that sets the pace is for the "
    "client's tokens, and it is the same for two workers or eight",
    "d": "--kube-api-qps sets the bucket's rate; --workers only sets how many wait for it",
}


def tokens_taken(threads: int, seconds: float, qps: float = 5, burst: int = 10) -> int:
    """How many tokens ``threads`` threads take from one fresh bucket in ``seconds``."""
    bucket, stop, taken, lock = Throttle(qps, burst), StopEvent(), [0], threading.Lock()

    def take() -> None:
        while not stop.is_set():
            bucket.wait()
            if stop.is_set():
                return
            with lock:
                taken[0] += 1

    workers = [threading.Thread(target=take, name=f"tokens-{n}") for n in range(threads)]
    for worker in workers:
        worker.start()
    stop.wait(seconds)  # the measurement's length, not a way of synchronising
    stop.set()
    for worker in workers:
        worker.join()
    return taken[0]


def check_1(answer: str | None) -> Verdict:
    """Eight workers instead of two, at --kube-api-qps 5: how fast on the plateau?"""
    if answer is None:
        return not_attempted("1", 'set answer_1 to "a", "b", "c" or "d"')
    answer = str(answer).strip().lower()
    if answer == "b":
        many, few = tokens_taken(8, 2.0), tokens_taken(2, 2.0)
        return correct(
            "1",
            f"in 2 s, 8 threads took {many} tokens from a bucket of 5 a second (burst 10), "
            f"2 threads took {few}: the bucket, not the workers, sets the pace. More workers "
            "only hold more keys while they wait.",
        )
    if answer in ANSWERS_1:
        return wrong("1", ANSWERS_1[answer])
    return wrong("1", f'{answer!r} is not one of "a", "b", "c", "d"')


# --- 08a, exercise 2: readiness tied to leadership ---------------------------------------------

LEASE_2 = "exercise-2"
DURATIONS = ["--leader-elect-lease-duration", "4", "--leader-elect-renew-deadline", "3",
             "--leader-elect-retry-period", "1"]  # fmt: skip


def _ask(url: str) -> tuple[int, str]:
    """GET ``url``: status and body, for 200 and for 500 alike."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as failed:
        return failed.code, failed.read().decode()


class _Running:
    """A ControllerProcess in a thread of this kernel, with the learner's readiness check."""

    def __init__(self, api: kubernetes.client.ApiClient, namespace: str, identity: str,
                 leading: Callable[[Any], str | None]) -> None:  # fmt: skip
        options = parse_args(["--namespace", namespace, "--workers", "1", "--leader-elect",
                              "--leader-elect-lease-name", LEASE_2,
                              "--leader-elect-lease-namespace", namespace,
                              "--leader-elect-identity", identity, *DURATIONS,
                              "--metrics-bind-address", "0",
                              "--health-probe-bind-address", "127.0.0.1:0"])  # fmt: skip
        self.identity = identity
        self.process = ControllerProcess(api, options, on_lost_lease=self._lost)
        self.process.readiness["leading"] = lambda: leading(self.process)
        self.changed = threading.Condition()
        self.seen: list[str] = []  # holders this process observed, in order
        self.leads = False
        elector = self.process.elector
        assert elector is not None
        callbacks = elector.callbacks
        started, new_leader = callbacks.on_started_leading, callbacks.on_new_leader

        def on_started(leading_event: StopEvent) -> None:
            started(leading_event)
            with self.changed:
                self.leads = True
                self.changed.notify_all()

        def on_new(holder: str) -> None:
            if new_leader is not None:
                new_leader(holder)
            with self.changed:
                self.seen.append(holder)
                self.changed.notify_all()

        callbacks.on_started_leading, callbacks.on_new_leader = on_started, on_new
        self.process.serve()
        self.thread = threading.Thread(target=self.process.run, name=f"exercise-2-{identity}")
        self.thread.start()

    def _lost(self, code: int) -> None:
        self.process.shut_down("lost the lease")

    def wait(self, what: Callable[[], bool], description: str) -> None:
        with self.changed:
            ok = self.changed.wait_for(what, GUARD_SECONDS)
        assert ok, f"{self.identity}: no {description} within {GUARD_SECONDS:g} s"

    def ready(self) -> tuple[int, str]:
        return _ask(self.process.endpoints[0].url + "/readyz")

    def stop(self) -> None:
        self.process.shut_down("exercise 2 is done")
        self.thread.join(GUARD_SECONDS)


def check_2(
    leading: Callable[[Any], str | None] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """A readiness check that passes only on the leader (or without leader election)."""
    if leading is None:
        return not_attempted("2", "set leading to your function (process) -> None or a sentence")
    namespaces.ensure_namespace(api, namespace)
    coordination = kubernetes.client.CoordinationV1Api(api)
    try:
        coordination.delete_namespaced_lease(LEASE_2, namespace)  # from an earlier attempt
    except ApiException as err:
        if err.status != 404:
            raise
    alone = ControllerProcess(api, parse_args(["--namespace", namespace]))
    try:
        without = leading(alone)
    except Exception as err:
        return wrong("2", f"for a process without leader election it raised {err!r}")
    finally:
        alone.events.stop(1)  # its Event thread; nothing else of it was started
    if without is not None:
        return wrong("2", f"a process without --leader-elect always works, so it is ready; "
                          f"yours said {without!r}")  # fmt: skip
    first = _Running(api, namespace, "first", leading)
    started = [first]
    try:
        first.wait(lambda: first.leads, "leadership")
        second = _Running(api, namespace, "second", leading)
        started.append(second)
        second.wait(lambda: "first" in second.seen, "sight of the leader")
        verdict = _judge_pair(first, second)
        if verdict is not None:
            return verdict
        first.stop()
        second.wait(lambda: second.leads, "leadership after the leader stopped")
        status, body = second.ready()
        if status != 200:
            return wrong("2", "after the leader stopped, the other process led, but its "
                              f"/readyz answered {status}: {body}")  # fmt: skip
    finally:
        for running in started:
            running.stop()
    return correct(
        "2",
        "only the leader is ready, and readiness follows the Lease. Mind the price: a "
        "Deployment counts a standby as unavailable, so with 2 replicas and the default "
        "rolling update (maxUnavailable 0 at 2 replicas) a new Pod, a standby, never becomes "
        "ready and the rollout waits until its progress deadline. kube-controller-manager "
        "and controller-runtime keep readiness apart from leadership for that reason.",
    )


def _judge_pair(leader: _Running, standby: _Running) -> Verdict | None:
    """None if the leader is ready and the standby is not, with a sentence; else why not."""
    status, body = leader.ready()
    if status != 200:
        return wrong("2", f"the leader's /readyz answered {status}: {body}")
    status, body = standby.ready()
    if status == 200:
        return wrong("2", "the standby (it does not lead: first does) answered /readyz with "
                          "200; its readiness should fail while another process leads")  # fmt: skip
    line = next((x for x in body.splitlines() if x.startswith("[-]leading")), "")
    if "failed: " not in line or len(line.split("failed: ", 1)[1].split()) < 3:
        return wrong("2", f"the standby's /readyz failed, but says no sentence why: {body!r}")
    if "TypeError" in line or "Error:" in line:
        return wrong("2", f"your check raised in the standby: {line}")
    return None


# --- 08b, exercise 1 (check 3): least privilege for the finalizing controller ------------------

ROLE_3 = "exercise-3"
TRIAL_SECONDS = 30.0
"""How long a trial waits for each step of its Foo (a few seconds on a quiet machine)."""
GRACE_SECONDS = 2.0
"""After the first 403, how long a trial goes on, collecting any other 403s, before it stops."""
FINALIZING_PERMISSIONS = (
    *CONTROLLER_PERMISSIONS,
    Permission("patch", "foos", "samplecontroller.k8s.io"),  # the finalizer's merge patch
)
WHERE_OWNER_REFERENCES_ARE_ENFORCED = Permission(
    "update", "foos", "samplecontroller.k8s.io", subresource="finalizers"
)
"""Asked for only where the OwnerReferencesPermissionEnforcement admission plugin is on (it is
off by default): it then checks ``update`` on the owner's ``finalizers`` for every Deployment
whose owner reference sets ``blockOwnerDeletion``. A Role may grant it; it need not."""


def granted_by(rules: list[dict[str, Any]]) -> set[Permission]:
    """Each (verb, resource, group, subresource) the rules allow; ``*`` stays ``*``."""
    granted = set()
    for rule in rules:
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                name, _, sub = resource.partition("/")
                for verb in rule.get("verbs") or []:
                    granted.add(Permission(verb, name, group, sub))
    return granted


def _rules_problem(rules: object) -> str | None:
    if not isinstance(rules, list) or not rules:
        return "give a list of rules (dicts), as in manifests/rbac.yaml"
    for rule in rules:
        if not isinstance(rule, Mapping) or not {"apiGroups", "resources", "verbs"} <= set(rule):
            return f"each rule needs apiGroups, resources and verbs; this one does not: {rule!r}"
        if "resourceNames" in rule:
            return "resourceNames cannot name Foos that do not exist yet: leave them out here"
    return None


def _apply_role(api: kubernetes.client.ApiClient, namespace: str, rules: list[Any]) -> None:
    """ServiceAccount, Role (its rules replaced) and RoleBinding ``exercise-3``."""
    core = kubernetes.client.CoreV1Api(api)
    rbac_api = kubernetes.client.RbacAuthorizationV1Api(api)
    role = {"metadata": {"name": ROLE_3}, "rules": rules}
    binding = {
        "metadata": {"name": ROLE_3},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE_3},
        "subjects": [{"kind": "ServiceAccount", "name": ROLE_3, "namespace": namespace}],
    }
    for create, body in ((core.create_namespaced_service_account, {"metadata": {"name": ROLE_3}}),
                         (rbac_api.create_namespaced_role_binding, binding)):  # fmt: skip
        try:
            create(namespace, body)
        except ApiException as err:
            if err.status != 409:
                raise
    try:
        rbac_api.replace_namespaced_role(ROLE_3, namespace, role)
    except ApiException as err:
        if err.status != 404:
            raise
        rbac_api.create_namespaced_role(namespace, role)


@dataclass
class Trial:
    """What the finalizing controller did with one Foo, run as a ServiceAccount with some rules."""

    user: str
    steps: list[tuple[bool, str]] = field(default_factory=list)  # (done?, what), in order
    refused: dict[str, int] = field(default_factory=dict)  # each 403's message -> times logged
    problem: str = ""  # the rules could not even be tried

    @property
    def worked(self) -> bool:
        return not self.problem and not self.refused and all(done for done, _ in self.steps)

    def __str__(self) -> str:
        if self.problem:
            return f"Not tried: {self.problem}"
        lines = [f"The finalizing controller, as {self.user}:"]
        lines += [f"  {'✓' if done else '✗'} {what}" for done, what in self.steps]
        for message, times in self.refused.items():
            lines.append(f"403 Forbidden ({times} {'time' if times == 1 else 'times'}): {message}")
        if self.worked:
            lines.append("No 403: these rules let it do all of that.")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


class _Refusals(logging.Handler):
    """Collects every 403 the controller's threads log (a sync, a reflector, an Event)."""

    def __init__(self, condition: threading.Condition) -> None:
        super().__init__(logging.WARNING)
        self.condition = condition
        self.seen: dict[str, int] = {}
        self.first_at: float | None = None

    def emit(self, record: logging.LogRecord) -> None:
        message = None
        for arg in record.args if isinstance(record.args, tuple) else ():
            if isinstance(arg, ApiException) and arg.status == 403:
                message = status_of(arg)["message"]
        text = record.getMessage()
        if message is None and "Forbidden: " in text:  # a sync's error, as explain() put it
            message = text.split("Forbidden: ", 1)[1].split(". The identity in", 1)[0]
        elif message is None and "forbidden: " in text:  # a reflector's LIST or WATCH
            message = text.split("forbidden: ", 1)[1]
        if message is None:
            return
        with self.condition:
            self.seen[message] = self.seen.get(message, 0) + 1
            if self.first_at is None:
                self.first_at = time.monotonic()
            self.condition.notify_all()


def run_finalizing(
    rules: list[dict[str, Any]] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Trial:
    """Run the finalizing controller as a ServiceAccount allowed only ``rules``, on one Foo.

    In this kernel, for a few seconds: the Foo is created, scaled from 1 to 2 and
    deleted (by you, the admin), and the controller does its part of each step.
    Returns what it got done and every 403 it logged. A trial stops
    ``GRACE_SECONDS`` after the first 403, and removes its Foo whatever happened.
    """
    user = f"system:serviceaccount:{namespace}:{ROLE_3}"
    problem = _rules_problem(rules)
    if problem is not None:
        return Trial(user, problem=problem)
    assert isinstance(rules, list)
    namespaces.ensure_namespace(api, namespace)
    try:
        _apply_role(api, namespace, list(rules))
    except ApiException as err:
        return Trial(user, problem=f"the API server refused the Role: {explain(err)}")
    client = rbac.token_client(api, rbac.service_account_token(api, namespace, ROLE_3, 600))
    name = f"trial-{uuid.uuid4().hex[:5]}"
    custom = kubernetes.client.CustomObjectsApi(api)
    foos = dict(group=FOO_GROUP, version=FOO_VERSION, namespace=namespace, plural=FOO_PLURAL)
    changed = threading.Condition()
    refusals = _Refusals(changed)
    # What you see of the Foo, as the admin: each change wakes the trial.
    path = f"/apis/{FOO_GROUP}/{FOO_VERSION}/namespaces/{namespace}/{FOO_PLURAL}"
    seen = SharedInformer(ListWatch(api, path), name="trial-foos")

    def wake(*_: Any) -> None:
        with changed:
            changed.notify_all()

    seen.add_event_handler(on_add=wake, on_update=wake, on_delete=wake, name="trial")
    controller = FinalizingFooController.new(client, namespace=namespace)
    controller.api, controller.records = client, ExternalRecords(Path(tempfile.mkdtemp()))
    stop = StopEvent()

    def run() -> None:
        with contextlib.suppress(CacheSyncError):  # stopped before it synced: the trial says so
            run_controller(controller, 1, stop)

    running = threading.Thread(target=run, name=name)
    helpers_log = logging.getLogger("helpers")
    helpers_log.addHandler(refusals)
    trial = Trial(user)
    seen.start()
    running.start()
    try:
        custom.create_namespaced_custom_object(**foos, body=foo_body(name, name, 1))
        deadline = time.monotonic() + TRIAL_SECONDS

        def until(what: str, done: Callable[[], bool]) -> bool:
            """Wait for ``done``; stop at the first 403 (after a grace) or at the deadline."""
            with changed:
                while not done():
                    now = time.monotonic()
                    stop_at = deadline
                    if refusals.first_at is not None:
                        stop_at = min(deadline, refusals.first_at + GRACE_SECONDS)
                    if now >= stop_at:
                        trial.steps.append((False, what))
                        return False
                    changed.wait(stop_at - now)
            trial.steps.append((True, what))
            return True

        def foo() -> dict[str, Any]:
            return seen.indexer.get_by_key(f"{namespace}/{name}") or {}

        def available(replicas: int) -> bool:
            return (foo().get("status") or {}).get("availableReplicas") == replicas

        if not (
            until("its caches synced", lambda: all(i.has_synced() for i in controller.informers))
            and until(f"it added its finalizer to Foo {name}",
                      lambda: FINALIZER in (foo().get("metadata") or {}).get("finalizers", []))
            and until("it wrote the Foo's record outside the cluster, made its Deployment, "
                      "and the Foo's status says 1 available", lambda: available(1))
        ):  # fmt: skip
            return trial
        custom.patch_namespaced_custom_object(**foos, name=name, body={"spec": {"replicas": 2}})
        if not until("you scaled the Foo to 2: it scaled the Deployment, the status followed",
                     lambda: available(2)):  # fmt: skip
            return trial
        custom.delete_namespaced_custom_object(**foos, name=name)
        until("you deleted the Foo: it deleted the record, removed its finalizer, the Foo went",
              lambda: not foo() and not controller.records.names())  # fmt: skip
        return trial
    finally:
        stop.set()
        running.join(TRIAL_SECONDS)
        helpers_log.removeHandler(refusals)
        with changed:
            trial.refused = dict(refusals.seen)
        _remove_foo(api, namespace, name)
        seen.stop()
        seen.join(TRIAL_SECONDS)


def _remove_foo(api: kubernetes.client.ApiClient, namespace: str, name: str) -> None:
    """Delete Foo ``name`` as the admin, finalizers and all (a trial leaves nothing behind)."""
    custom = kubernetes.client.CustomObjectsApi(api)
    foos = dict(group=FOO_GROUP, version=FOO_VERSION, namespace=namespace, plural=FOO_PLURAL)
    try:
        custom.patch_namespaced_custom_object(**foos, name=name,
                                              body={"metadata": {"finalizers": None}})  # fmt: skip
        custom.delete_namespaced_custom_object(**foos, name=name)
    except ApiException as err:
        if err.status != 404:
            raise


def check_3(rules: list[dict[str, Any]] | None, api: kubernetes.client.ApiClient,
            namespace: str) -> Verdict:  # fmt: skip
    """The least a FinalizingFooController needs in one namespace, as Role rules.

    One SelfSubjectAccessReview per permission the controller uses, as the
    ServiceAccount bound to ``rules``: a few seconds. What is missing is counted,
    not named: :func:`run_finalizing` shows the 403s themselves.
    """
    if rules is None:
        return not_attempted("1", "set finalizing_rules to a list of Role rules")
    problem = _rules_problem(rules)
    if problem is not None:
        return wrong("1", problem)
    namespaces.ensure_namespace(api, namespace)
    try:
        _apply_role(api, namespace, list(rules))
    except ApiException as err:
        return wrong("1", f"the API server refused the Role: {explain(err)}")
    token = rbac.service_account_token(api, namespace, ROLE_3, 600)
    authz = kubernetes.client.AuthorizationV1Api(rbac.token_client(api, token))
    missing = 0
    for need in FINALIZING_PERMISSIONS:
        attributes = {"namespace": namespace, "verb": need.verb, "group": need.group,
                      "resource": need.resource, "subresource": need.subresource}  # fmt: skip
        answer = authz.create_self_subject_access_review(
            {"spec": {"resourceAttributes": attributes}}
        )
        missing += not answer.status.allowed
    if missing:
        kinds = "kind of request" if missing == 1 else "kinds of request"
        return wrong(
            "1",
            f"the controller would get 403 Forbidden on {missing} {kinds} it makes. Run "
            "ch08.run_finalizing(finalizing_rules, api, NAMESPACE): it runs the controller with "
            "your rules, and shows each 403 as the API server worded it",
        )
    keys = ("apiGroups", "resources", "verbs")
    wild = next((r for r in rules if any("*" in (r.get(key) or []) for key in keys)), None)
    if wild is not None:
        return wrong("1", f"a wildcard grants far more than the controller uses: {dict(wild)}")
    optional = {WHERE_OWNER_REFERENCES_ARE_ENFORCED}
    extra = granted_by(list(rules)) - set(FINALIZING_PERMISSIONS) - optional
    if extra:
        shown = "; ".join(sorted(str(p) for p in extra))
        return wrong("1", f"the controller never does: {shown}. Least privilege grants only "
                          "what it does, request by request")  # fmt: skip
    granted = WHERE_OWNER_REFERENCES_ARE_ENFORCED in granted_by(list(rules))
    also = (
        "You also granted update on foos/finalizers: unused here, and"
        if granted
        else ("One more rule is")
    )
    return correct(
        "1",
        f"exactly the {len(FINALIZING_PERMISSIONS)} permissions it uses: the controller's "
        "list plus patch on foos, for the finalizer (added and removed with a merge patch of "
        "the Foo). manifests/rbac.yaml would need that rule before a finalizing controller "
        "could run as its ServiceAccount. "
        + also
        + " needed where the OwnerReferencesPermissionEnforcement admission plugin is on "
        "(OpenShift turns it on): creating a Deployment whose owner reference sets "
        "blockOwnerDeletion then takes update on foos/finalizers.",
    )


# --- 08b, exercise 2 (check 4): a foreground delete of a finalized Foo ------------------------

NAME_4 = "exercise-4"
WAIT_4_SECONDS = 30.0
"""How long check 4 waits for each step (the garbage collector takes about a second)."""
ANSWERS_4 = {
    "a": "that is the background order, which a plain DELETE of a custom resource gets; "
    "Foreground asks the garbage collector to delete the dependents first",
    "c": "nothing overrides a finalizer: the object stays until every name in "
    "metadata.finalizers is removed (foregroundDeletion is one more such name)",
    "d": "the API server accepts the DELETE (200) and adds the finalizer foregroundDeletion "
    "beside ours",
}


def _owned_deployment(foo: Mapping[str, Any]) -> dict[str, Any]:
    """A Deployment owned by ``foo`` the way chapter 05's controller owns one (no replicas)."""
    name = foo["metadata"]["name"]
    labels = {"app": "exercise-4", "controller": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "ownerReferences": [{
                "apiVersion": f"{FOO_GROUP}/{FOO_VERSION}", "kind": "Foo", "name": name,
                "uid": foo["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True,
            }],
        },
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels},
                         "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}},
        },
    }  # fmt: skip


def check_4(answer: str | None, api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    """Foreground delete of a Foo held by our finalizer, with an owned Deployment: what happens?

    The check does it (no controller runs): creates the Foo with our finalizer
    and a Deployment it owns, deletes the Foo with propagationPolicy Foreground,
    watches what goes first, then removes our finalizer itself (the cleanup a
    controller would do). A few seconds; each wait gives up after ``WAIT_4_SECONDS``.
    """
    if answer is None:
        return not_attempted("2", 'set foreground_answer to "a", "b", "c" or "d"')
    answer = str(answer).strip().lower()
    if answer not in ("a", "b", "c", "d"):
        return wrong("2", f'{answer!r} is not one of "a", "b", "c", "d"')
    namespaces.ensure_namespace(api, namespace)
    custom = kubernetes.client.CustomObjectsApi(api)
    apps = kubernetes.client.AppsV1Api(api)
    foos = dict(group=FOO_GROUP, version=FOO_VERSION, namespace=namespace, plural=FOO_PLURAL)
    try:
        _leave_nothing_of_4(api, namespace)  # an earlier attempt may have stopped half-way
        body = foo_body(NAME_4, NAME_4, 1)
        body["metadata"]["finalizers"] = [FINALIZER]
        foo = custom.create_namespaced_custom_object(**foos, body=body)
        apps.create_namespaced_deployment(namespace, _owned_deployment(foo))
        foreground = {"propagationPolicy": "Foreground"}
        custom.delete_namespaced_custom_object(**foos, name=NAME_4, body=foreground)
        wait_for(apps.list_namespaced_deployment, lambda deployments: NAME_4 not in deployments,
                 what=f"Deployment {NAME_4} to be deleted by the garbage collector",
                 timeout=WAIT_4_SECONDS, namespace=namespace)  # fmt: skip
        held = wait_for(custom.list_namespaced_custom_object,
                        lambda listed: (listed.get(NAME_4, {}).get("metadata", {})
                                        .get("finalizers") == [FINALIZER]),
                        what=f"Foo {NAME_4} to wait for our finalizer alone",
                        timeout=WAIT_4_SECONDS, **foos)[NAME_4]  # fmt: skip
        seen = "b" if is_being_deleted(held) else "?"
        set_foo_finalizers(api, held, [])  # what the controller would do after its cleanup
        wait_for(custom.list_namespaced_custom_object, lambda listed: NAME_4 not in listed,
                 what=f"Foo {NAME_4} to go once our finalizer is removed",
                 timeout=WAIT_4_SECONDS, **foos)  # fmt: skip
    except CourseError as slow:
        _leave_nothing_of_4(api, namespace)
        return CannotCheck("2", f"the cluster did not get there: {slow.problem} Run the check "
                                "again; if it says this twice, look at the cluster.")  # fmt: skip
    if answer == seen == "b":
        return correct(
            "2",
            "the API server added foregroundDeletion beside our finalizer; the garbage "
            "collector deleted the Deployment, then removed foregroundDeletion, and the Foo "
            "still waited (Terminating) for ours. Only when that went did the Foo go.",
        )
    if answer in ANSWERS_4:
        return wrong("2", ANSWERS_4[answer])
    return wrong("2", "that is what the mechanism says, but this cluster did otherwise: "
                      f"the Foo was {held}")  # fmt: skip


def _leave_nothing_of_4(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """No Foo and no Deployment ``exercise-4`` left (the Foo with its finalizers removed)."""
    _remove_foo(api, namespace, NAME_4)
    try:
        kubernetes.client.AppsV1Api(api).delete_namespaced_deployment(NAME_4, namespace)
    except ApiException as err:
        if err.status != 404:
            raise
    foos = dict(group=FOO_GROUP, version=FOO_VERSION, namespace=namespace, plural=FOO_PLURAL)
    wait_for(kubernetes.client.CustomObjectsApi(api).list_namespaced_custom_object,
             lambda listed: NAME_4 not in listed, what=f"Foo {NAME_4} to be gone",
             timeout=WAIT_4_SECONDS, **foos)  # fmt: skip
    wait_for(kubernetes.client.AppsV1Api(api).list_namespaced_deployment,
             lambda listed: NAME_4 not in listed, what=f"Deployment {NAME_4} to be gone",
             timeout=WAIT_4_SECONDS, namespace=namespace)  # fmt: skip
