"""Checks for chapter 08's exercises, in its two parts.

08a, the controller as a program: check 1 asks for a prediction (more workers
against the client's token bucket) and shows the answer on the course's real
bucket; check 2 runs the learner's readiness check in two real controller
processes (in this kernel) that share one Lease, asks their ``/readyz``, stops
the leader and asks the other again. 08b, shipping it: check 3 binds the
learner's Role rules to a ServiceAccount and asks the API server, one
SelfSubjectAccessReview per permission, whether that account may do what the
finalizing controller does, and nothing more; check 4 asks for a prediction
(a foreground delete of a Foo held by a finalizer) and carries it out.

Verdicts name the exercise as its notebook numbers it (checks 1 and 2 are 08a's
exercises 1 and 2, checks 3 and 4 are 08b's exercises 1 and 2). Checks 2, 3
and 4 bring the chapter's namespace back first: after "Run All" its last cell
has deleted it.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from .. import namespaces, rbac
from ..apierrors import explain
from ..clock import StopEvent
from ..controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from ..finalizers import FINALIZER, is_being_deleted, set_foo_finalizers
from ..program import ControllerProcess, parse_args
from ..startup_checks import CONTROLLER_PERMISSIONS, Permission
from ..throttle import Throttle
from ..waiting import wait_for
from . import Verdict, correct, not_attempted, wrong

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
FINALIZING_PERMISSIONS = (
    *CONTROLLER_PERMISSIONS,
    Permission("patch", "foos", "samplecontroller.k8s.io"),  # the finalizer's merge patch
)


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


def check_3(rules: list[dict[str, Any]] | None, api: kubernetes.client.ApiClient,
            namespace: str) -> Verdict:  # fmt: skip
    """The least a FinalizingFooController needs in one namespace, as Role rules."""
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
    missing = []
    for need in FINALIZING_PERMISSIONS:
        attributes = {"namespace": namespace, "verb": need.verb, "group": need.group,
                      "resource": need.resource, "subresource": need.subresource}  # fmt: skip
        answer = authz.create_self_subject_access_review(
            {"spec": {"resourceAttributes": attributes}}
        )
        if not answer.status.allowed:
            missing.append(need)
    if missing:
        first = missing[0]
        resource = f"{first.resource}/{first.subresource}" if first.subresource else first.resource
        group = f' in API group "{first.group}"' if first.group else ""
        return wrong(
            "1",
            f"the controller would get 403 Forbidden: it may not {'; '.join(map(str, missing))}. "
            f'The API server would say: User "system:serviceaccount:{namespace}:{ROLE_3}" cannot '
            f'{first.verb} resource "{resource}"{group} in the namespace "{namespace}".',
        )
    keys = ("apiGroups", "resources", "verbs")
    wild = next((r for r in rules if any("*" in (r.get(key) or []) for key in keys)), None)
    if wild is not None:
        return wrong("1", f"a wildcard grants far more than the controller uses: {dict(wild)}")
    extra = granted_by(list(rules)) - set(FINALIZING_PERMISSIONS)
    if extra:
        shown = "; ".join(sorted(str(p) for p in extra))
        return wrong("1", f"the controller never does: {shown}. Least privilege grants only "
                          "what it does, request by request")  # fmt: skip
    return correct(
        "1",
        f"exactly the {len(FINALIZING_PERMISSIONS)} permissions it uses: the controller's "
        "list plus patch on foos, for the finalizer. Its Role in manifests/rbac.yaml would "
        "need that rule before a finalizing controller could run as its ServiceAccount.",
    )


# --- 08b, exercise 2 (check 4): a foreground delete of a finalized Foo ------------------------

NAME_4 = "exercise-4"
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
    controller would do).
    """
    if answer is None:
        return not_attempted("2", 'set answer_4 to "a", "b", "c" or "d"')
    namespaces.ensure_namespace(api, namespace)
    custom = kubernetes.client.CustomObjectsApi(api)
    apps = kubernetes.client.AppsV1Api(api)
    foos = dict(group=FOO_GROUP, version=FOO_VERSION, namespace=namespace, plural=FOO_PLURAL)
    body = foo_body(NAME_4, NAME_4, 1)
    body["metadata"]["finalizers"] = [FINALIZER]
    foo = custom.create_namespaced_custom_object(**foos, body=body)
    apps.create_namespaced_deployment(namespace, _owned_deployment(foo))
    custom.delete_namespaced_custom_object(**foos, name=NAME_4,
                                           body={"propagationPolicy": "Foreground"})  # fmt: skip
    wait_for(apps.list_namespaced_deployment, lambda deployments: NAME_4 not in deployments,
             what=f"Deployment {NAME_4} to be deleted by the garbage collector",
             timeout=GUARD_SECONDS, namespace=namespace)  # fmt: skip
    held = wait_for(custom.list_namespaced_custom_object,
                    lambda listed: (listed.get(NAME_4, {}).get("metadata", {}).get("finalizers")
                                    == [FINALIZER]),
                    what=f"Foo {NAME_4} to wait for our finalizer alone",
                    timeout=GUARD_SECONDS, **foos)[NAME_4]  # fmt: skip
    seen = "b" if is_being_deleted(held) else "?"
    set_foo_finalizers(api, held, [])  # what the controller would do after its cleanup
    wait_for(custom.list_namespaced_custom_object, lambda listed: NAME_4 not in listed,
             what=f"Foo {NAME_4} to go once our finalizer is removed",
             timeout=GUARD_SECONDS, **foos)  # fmt: skip
    answer = str(answer).strip().lower()
    if answer == seen == "b":
        return correct(
            "2",
            "the API server added foregroundDeletion beside our finalizer; the garbage "
            "collector deleted the Deployment, then removed foregroundDeletion, and the Foo "
            "still waited (Terminating) for ours. Only when that went did the Foo go.",
        )
    if answer in ANSWERS_4:
        return wrong("2", ANSWERS_4[answer])
    if answer == "b":
        return wrong("2", "that is what the mechanism says, but this cluster did otherwise: "
                          f"the Foo was {held}")  # fmt: skip
    return wrong("2", f'{answer!r} is not one of "a", "b", "c", "d"')
