"""Checks for chapter 08's exercises, in its three parts.

08, leader election: check 5 asks for a prediction (a leader paused for less
than its lease) and replays it on the chapter's elector, with fake clocks and a
real Lease; check 6 gives the learner's fenced write a ConfigMap and three
leaders, one of which writes between the learner's read and write. 08a, the
controller as a program: check 1 asks for a prediction (Events and Foo-status
writes sharing one token bucket) and measures it on the course's real bucket;
check 2 runs the learner's readiness check in two real controller processes
(in this kernel) that share one Lease, waits until both have synced their
caches, asks their ``/readyz``, stops the leader and asks the other again. 08b,
shipping it: check 3 binds the learner's Role rules to a ServiceAccount and asks
the API server, one SelfSubjectAccessReview per permission, whether that account
may do what the finalizing controller does, and nothing more (it counts what is
missing without naming it: :func:`run_finalizing` runs the controller as that
account on one Foo and shows each 403 it meets, which is how the learner finds
out); check 4 asks for a prediction (a foreground delete of a Foo held by a
finalizer) and carries it out.

Verdicts name the exercise as its notebook numbers it (checks 5 and 6 are 08's
exercises 1 and 2, checks 1 and 2 are 08a's, checks 3 and 4 are 08b's). Checks
2 to 6 bring the chapter's namespace back first: after "Run All" its last cell
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
from ..clock import FakeClock, StopEvent
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
from ..informer import SharedInformer, wait_for_cache_sync
from ..leaderelection import LeaderCallbacks, LeaderElector, LeaseLock
from ..listwatch import ListWatch
from ..program import ControllerProcess, parse_args
from ..startup_checks import CONTROLLER_PERMISSIONS, Permission
from ..throttle import Throttle
from ..waiting import wait_for
from . import CannotCheck, Verdict, correct, not_attempted, wrong

GUARD_SECONDS = 60.0
"""How long a check waits for what takes a few seconds on a quiet machine."""

# --- 08a, exercise 1: Events and Foo-status writes on one bucket -----------------------------

QPS, BURST = 5, 10


def syncs_paced(workers: int, tokens_per_sync: int, seconds: float, after: float) -> int:
    """Syncs that ``workers`` threads finish in ``seconds``, once ``after`` seconds have spent
    the burst, when each sync takes ``tokens_per_sync`` tokens from one fresh bucket
    (5 a second, burst 10)."""
    bucket, stop, done, lock = Throttle(QPS, BURST), StopEvent(), [], threading.Lock()
    began = time.monotonic()

    def sync() -> None:
        while not stop.is_set():
            for _ in range(tokens_per_sync):
                bucket.wait()
            with lock:
                done.append(time.monotonic() - began)

    threads = [threading.Thread(target=sync, name=f"syncs-{n}") for n in range(workers)]
    for thread in threads:
        thread.start()
    stop.wait(after + seconds)  # the measurement's length, not a way of synchronising
    stop.set()
    for thread in threads:
        thread.join()
    return sum(1 for at in done if after <= at < after + seconds)


def _number(answer: object) -> float | None:
    try:
        return float(str(answer).strip().removesuffix("/s").strip())
    except ValueError:
        return None


def check_1(answer: float | str | None) -> Verdict:
    """One bucket for Events and Foo-status writes, at 5 a second: status writes a second?"""
    if answer is None:
        return not_attempted("1", "set answer_1 to a number of Foo-status writes a second")
    rate = _number(answer)
    if rate is None:
        return wrong("1", f"{answer!r} is not a number of writes a second (7 or 7.5, say)")
    if 2.0 <= rate <= 3.0:
        syncs = syncs_paced(2, 2, 2.0, 2.5)
        return correct(
            "1",
            f"two workers whose syncs each take two tokens (a status write and an Event) from "
            f"one bucket of 5 a second finished {syncs} syncs in 2 s once the burst was spent: "
            f"≈{syncs / 2:.1f} a second, half the plateau the chapter measured. Whatever shares "
            "a bucket shares its rate. (With the Events on a thread of their own, as the "
            "program sends them, the workers would take a larger share of the tokens, and the "
            "Events would queue up instead.)",
        )
    if 4.0 <= rate <= 6.0:
        return wrong("1", "5 a second is everything the bucket gives; count how many tokens "
                          "one sync takes from it now")  # fmt: skip
    if 6.0 < rate <= 12.0:
        return wrong("1", "the burst of 10 is spent in the first second or two; on the "
                          "plateau a bucket gives only its rate, to all that share it")  # fmt: skip
    if rate > 12.0:
        return wrong("1", "the bucket still gives 5 tokens a second, and more workers do not "
                          "make tokens: no write can go faster than that")  # fmt: skip
    if rate < 2.0:
        return wrong("1", "too few: the bucket still gives 5 tokens a second; count the "
                          "tokens one sync takes")  # fmt: skip
    return wrong("1", "too many for a bucket of 5 tokens a second: count the tokens one sync "
                      "takes")  # fmt: skip


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


class _TooSlow(Exception):
    """Something the check needs (not the learner's function) did not happen in time."""


def _wait(what: Callable[[float], bool], description: str) -> None:
    """``what(timeout)`` until it returns True: silently for 2 s, then saying so."""
    if what(2.0):
        return
    print(f"exercise 2: still waiting for {description} (up to {GUARD_SECONDS:g} s)")
    if not what(GUARD_SECONDS - 2.0):
        raise _TooSlow(f"{description} did not happen within {GUARD_SECONDS:g} s")


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
        self.raised: Exception | None = None  # what the learner's check raised, if it did

        def judged() -> str | None:
            try:
                return leading(self.process)
            except Exception as err:
                self.raised = err
                raise  # the probe answers "[-]leading failed: ..."

        self.process.readiness["leading"] = judged
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
        """Until ``what()`` holds for this process (it leads, it saw a leader)."""

        def holds(timeout: float) -> bool:
            with self.changed:
                return self.changed.wait_for(what, timeout)

        _wait(holds, f"{self.identity}: {description}")

    def wait_for_caches(self) -> None:
        """Until its informers have synced, so that /readyz judges only the learner's check."""
        informers = self.process.controller.informers
        _wait(lambda timeout: wait_for_cache_sync(*informers, timeout=timeout),
              f"{self.identity}: its caches to sync")  # fmt: skip

    def ready(self) -> tuple[int, str]:
        return _ask(self.process.endpoints[0].url + "/readyz")

    def stop(self) -> None:
        self.process.shut_down("exercise 2 is done")
        self.thread.join(GUARD_SECONDS)


def check_2(
    leading: Callable[[Any], str | None] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """A readiness check that passes only on the leader (or without leader election).

    Both processes' caches have synced before their ``/readyz`` is asked, so that the
    answer depends on the learner's check alone (the informers' check passes).
    """
    if leading is None:
        return not_attempted("2", "set leading to your function (process) -> None or a sentence")
    namespaces.ensure_namespace(api, namespace)
    coordination = kubernetes.client.CoordinationV1Api(api)
    try:
        coordination.delete_namespaced_lease(LEASE_2, namespace)  # from an earlier attempt
    except ApiException as err:
        if err.status != 404:
            raise
    first = _Running(api, namespace, "first", leading)
    started = [first]
    try:
        first.wait(lambda: first.leads, "leadership")
        first.wait_for_caches()
        second = _Running(api, namespace, "second", leading)
        started.append(second)
        second.wait(lambda: "first" in second.seen, "sight of the leader")
        second.wait_for_caches()
        verdict = _judge_pair(first, second)
        if verdict is not None:
            return verdict
        first.stop()
        second.wait(lambda: second.leads, "leadership after the leader stopped")
        status, body = second.ready()
        if status != 200:
            return wrong("2", "after the leader stopped, the other process led, but its "
                              f"/readyz answered {status}: {body}")  # fmt: skip
        verdict = _judge_alone(api, namespace, leading)
        if verdict is not None:
            return verdict
    except _TooSlow as slow:
        why = f"the cluster is too slow to check this now: {slow}; run the check again"
        return CannotCheck("2", "not attempted yet", why)
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


def _judge_alone(
    api: kubernetes.client.ApiClient, namespace: str, leading: Callable[[Any], str | None]
) -> Verdict | None:
    """None if the check passes a process without leader election; else why not."""
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
    return None


def _judge_pair(leader: _Running, standby: _Running) -> Verdict | None:
    """None if the leader is ready and the standby is not, with a sentence; else why not."""
    status, body = leader.ready()
    if leader.raised is not None:
        return wrong("2", f"your check raised {leader.raised!r} in the leader")
    if status != 200:
        return wrong("2", f"the leader's /readyz answered {status}: {body}")
    status, body = standby.ready()
    if standby.raised is not None:
        return wrong("2", f"your check raised {standby.raised!r} in the standby")
    if status == 200:
        return wrong("2", "the standby (it does not lead: first does) answered /readyz with "
                          "200; its readiness should fail while another process leads")  # fmt: skip
    line = next((x for x in body.splitlines() if x.startswith("[-]leading")), "")
    if "failed: " not in line or len(line.split("failed: ", 1)[1].split()) < 3:
        return wrong("2", f"the standby's /readyz failed, but says no sentence why: {body!r}")
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
        return CannotCheck("2", "not attempted yet",
                           f"the cluster did not get there: {slow.problem} Run the check "
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


# --- 08, exercise 1 (check 5): a leader paused for less than its lease --------------------------

LEASE_5 = "exercise-5"
PAUSE_5 = 8.0
ANSWERS_5 = {
    "a": "a candidate takes over only after the record has not changed for a whole lease on "
    "its own clock, and 8 s is less than the 15 s lease",
    "c": "RenewDeadline bounds one round of renewals, and a round that begins after the pause "
    "has its whole 10 s; what does the leader's first try of that round find?",
    "d": "a candidate takes over only after the record has not changed for a whole lease on "
    "its own clock, and 8 s is less than the 15 s lease: there is nothing to notice",
}


def pause_replayed(api: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    """A leader paused for 8 s right after a renewal, on the chapter's elector at the usual
    durations: real Lease requests, and a fake clock each, the leader's stopped for the pause."""
    coordination = kubernetes.client.CoordinationV1Api(api)
    try:
        coordination.delete_namespaced_lease(LEASE_5, namespace)  # from an earlier attempt
    except ApiException as err:
        if err.status != 404:
            raise
    clocks = {"leader": FakeClock(), "standby": FakeClock()}
    ignored = LeaderCallbacks(lambda leading: None, lambda: None)
    leader, standby = (
        LeaderElector(LeaseLock.on_cluster(api, namespace, LEASE_5, who), ignored,
                      clock=clocks[who])
        for who in ("leader", "standby")
    )  # fmt: skip
    took = leader.try_acquire_or_renew(10.0)  # the free Lease, then a renewal: its last one
    renewed_before = leader.try_acquire_or_renew(10.0)
    tries = [standby.try_acquire_or_renew(10.0)]  # it sees the leader's record
    for _ in range(int(PAUSE_5 / 2)):  # the pause: the standby tries every 2 s
        clocks["standby"].step(2.0)
        tries.append(standby.try_acquire_or_renew(10.0))
    clocks["leader"].step(PAUSE_5)  # the leader runs again: its clock jumped on at once
    renewed_after = leader.try_acquire_or_renew(10.0)
    clocks["standby"].step(2.0)
    tries.append(standby.try_acquire_or_renew(10.0))
    return {
        "took": took and renewed_before,
        "standby took": any(tries),
        "renewed after": renewed_after,
        "standby waits again from": standby.observed_time,
        "standby now": clocks["standby"].now(),
        "holder": coordination.read_namespaced_lease(LEASE_5, namespace).spec.holder_identity,
    }


def check_5(answer: str | None, api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    """The usual 15/10/2 s; the leader paused 8 s right after a renewal: what happens?"""
    if answer is None:
        return not_attempted("1", 'set answer_5 to "a", "b", "c" or "d"')
    answer = str(answer).strip().lower()
    if answer in ANSWERS_5:
        return wrong("1", ANSWERS_5[answer])
    if answer != "b":
        return wrong("1", f'{answer!r} is not one of "a", "b", "c", "d"')
    namespaces.ensure_namespace(api, namespace)
    seen = pause_replayed(api, namespace)
    if not seen["took"] or seen["standby took"] or not seen["renewed after"]:
        return CannotCheck("1", "not attempted yet", f"the replay went otherwise: {seen}")
    return correct(
        "1",
        "replayed on this chapter's elector (a real Lease, a fake clock each): the standby's "
        "tries during the pause all found a valid lease (8 s < 15 s); the leader's first try "
        "after it renewed at once, on its fast path (its own clock said its lease still held, "
        f"and nobody had written); the Lease names {seen['holder']}, and the standby, having seen "
        "the record change, waits a whole lease again. A pause shorter than the lease (minus "
        "the standby's retries) costs nothing; one longer than it is the demonstration above.",
    )


# --- 08, exercise 2 (check 6): a fenced write --------------------------------------------------

MAP_6 = "exercise-6"
TOKEN = "fencing-token"


class _RacingCore:
    """A CoreV1Api whose first read of ConfigMap ``name`` is followed, before it returns, by
    a write of a newer leader (``token``): the worst moment for the learner's write."""

    def __init__(self, core: kubernetes.client.CoreV1Api, name: str, token: int) -> None:
        self._core, self._name, self._token, self.raced = core, name, token, False

    def __getattr__(self, attribute: str) -> Any:
        real = getattr(self._core, attribute)
        if not attribute.startswith(("read_namespaced_config_map", "list_namespaced_config_map")):
            return real

        def read(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            if not self.raced:
                self.raced = True
                namespace = kwargs.get("namespace") or args[-1]
                _write_as(self._core, namespace, self._name, self._token, {"writer": "three"})
            return result

        return read


def _write_as(core: kubernetes.client.CoreV1Api, namespace: str, name: str, token: int,
              data: dict[str, str]) -> None:  # fmt: skip
    """A newer leader's write (by the check itself): token and data, unconditionally."""
    body = {"metadata": {"annotations": {TOKEN: str(token)}}, "data": data}
    core.patch_namespaced_config_map(name, namespace, body)


def _stored(core: kubernetes.client.CoreV1Api, namespace: str) -> tuple[str | None, dict]:
    found = core.read_namespaced_config_map(MAP_6, namespace)
    return (found.metadata.annotations or {}).get(TOKEN), dict(found.data or {})


def _attempt(fenced_write: Callable[..., Any], core: Any, namespace: str, token: int,
             data: dict[str, str]) -> bool | str:  # fmt: skip
    """What the learner's function said: True/False, "409" for a conflict it let out, or why
    it failed."""
    try:
        return bool(fenced_write(core, namespace, MAP_6, token, dict(data)))
    except ApiException as err:
        return "409" if err.status == 409 else f"it raised {explain(err)}"
    except Exception as err:
        return f"it raised {err!r}"


def check_6(
    fenced_write: Callable[..., Any] | None, api: kubernetes.client.ApiClient, namespace: str
) -> Verdict:
    """A write into a ConfigMap that a leader with a lower token cannot make."""
    if fenced_write is None:
        return not_attempted("2", "set fenced_write to your function "
                                  "(core, namespace, name, token, data) -> bool")  # fmt: skip
    namespaces.ensure_namespace(api, namespace)
    core = kubernetes.client.CoreV1Api(api)
    try:
        core.delete_namespaced_config_map(MAP_6, namespace)  # from an earlier attempt
    except ApiException as err:
        if err.status != 404:
            raise
    core.create_namespaced_config_map(namespace, {"metadata": {"name": MAP_6}})
    steps = [  # (token, data, should land, what it stands for)
        (1, {"writer": "one", "n": "1"}, True, "the first leader (token 1), on a fresh ConfigMap"),
        (1, {"writer": "one", "n": "2"}, True, "the same leader writing again (token 1)"),
        (2, {"writer": "two", "n": "1"}, True, "a new leader (token 2)"),
        (1, {"writer": "one", "n": "3"}, False, "the old leader, resumed (token 1 after 2)"),
        (9, {"writer": "nine", "n": "1"}, True, "a leader with token 9"),
        (10, {"writer": "ten", "n": "1"}, True, "a leader with token 10 (after 9)"),
    ]
    for token, data, lands, who in steps:
        before = _stored(core, namespace)
        said = _attempt(fenced_write, core, namespace, token, data)
        if isinstance(said, str) and said != "409":
            return wrong("2", f"for {who}, {said}")
        after = _stored(core, namespace)
        landed = after[0] == str(token) and all(after[1].get(k) == v for k, v in data.items())
        if lands and not landed:
            return wrong("2", f"{who} should have written, and did not: the ConfigMap holds "
                              f"token {after[0]} and {after[1]}")  # fmt: skip
        if not lands and after != before:
            return wrong("2", f"{who} wrote over a newer leader's write: the ConfigMap went from "
                              f"token {before[0]} to {after[0]}, data {after[1]}")  # fmt: skip
        if said is not lands and said != "409":
            return wrong("2", f"for {who} your function returned {said!r}, but its write "
                              f"{'landed' if landed else 'did not land'}")  # fmt: skip
    racing = _RacingCore(core, MAP_6, 12)
    said = _attempt(fenced_write, racing, namespace, 11, {"writer": "eleven", "n": "1"})
    stored_token, stored_data = _stored(core, namespace)
    if not racing.raced:
        return wrong("2", "your function never read the ConfigMap: it cannot know whether a "
                          "newer leader wrote")  # fmt: skip
    if stored_token != "12" or stored_data.get("writer") != "three":
        return wrong(
            "2",
            "a leader with token 12 wrote between your read and your write, and "
            "your write (token 11) landed over it: a check, then a write, is a "
            "race; make the write fail if the object changed since your read",
        )
    if isinstance(said, str) and said != "409":
        return wrong("2", f"when a newer leader wrote between your read and your write, {said}")
    if said is True:
        return wrong("2", "your write did not land (good), but your function returned True")
    return correct(
        "2",
        "a fencing token: each leader's writes carry its number, and the object refuses a "
        "lower one, read and write tied together by the resourceVersion. This one guards a "
        "single ConfigMap; each object (or outside system) a controller writes would need its "
        "own, which is why Kubernetes controllers rely on the margin and on idempotent work.",
    )
