"""Checks for chapter 10's exercises (the Foo controller as controllers are written today).

``check_1`` runs :func:`helpers.conditions.set_status_condition` on the exercise's table with
a clock that ticks; ``check_2`` makes the exercise's five writes to a ConfigMap of its own in
the chapter's namespace (brought back if Run All deleted it) and reads ``managedFields``;
``check_3`` calls the learner's function on conditions made up here; ``check_4`` puts the
learner's rule on the Foo CRD's ``spec`` for a few seconds (cluster-wide) and tries the
changes the exercise names, then takes it out again. A wrong verdict says what went wrong,
never what the right answer is.
"""

from __future__ import annotations

import copy
import itertools
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from .. import namespaces, workshop_mode
from ..apierrors import status_of
from ..conditions import condition, set_status_condition
from ..controller import FOO_GROUP, FOO_KIND, FOO_PLURAL, FOO_VERSION, foo_body
from ..foo_crd import FOO_CRD, _listable, strict_dry_run
from . import CannotCheck, Verdict, correct, not_attempted, wrong

# --- exercise 1: when lastTransitionTime moves ------------------------------------------------

SYNCS = [
    ("False", "ReplicasUnavailable", "0 of 2 replicas available", 1),
    ("False", "ReplicasUnavailable", "1 of 2 replicas available", 1),
    ("True", "Available", "2 of 2 replicas available", 1),
    ("True", "Available", "2 of 2 replicas available", 2),
    ("True", "Available", "2 of 2 replicas available", 2),
    ("Unknown", "NoDeployment", "", 2),
]
"""The table of exercise 1: status, reason, message and observedGeneration, sync by sync."""


def _syncs_1() -> tuple[set[int], set[int]]:
    """After which syncs the time differs, and which calls return True (a clock that ticks)."""
    ticks = itertools.count()
    conditions: list[dict[str, Any]] = []
    moved, changed, before = set(), set(), None
    for number, (status, reason, message, generation) in enumerate(SYNCS, start=1):
        judged = condition("Ready", status, reason, message, generation)
        if set_status_condition(conditions, judged, now=lambda: f"t{next(ticks)}"):
            changed.add(number)
        if conditions[0]["lastTransitionTime"] != before:
            moved.add(number)
        before = conditions[0]["lastTransitionTime"]
    return moved, changed


def check_1(answer: Any) -> Verdict:
    exercise = "1"
    if answer is None:
        return not_attempted(exercise, "set answer_1 to two sets of sync numbers")
    if not (isinstance(answer, tuple | list) and len(answer) == 2):
        return wrong(exercise, "answer with two sets: ({syncs after which ...}, {calls ...})")
    try:
        moved, changed = ({int(number) for number in part} for part in answer)
    except (TypeError, ValueError):
        return wrong(exercise, "each of the two must be a set of sync numbers, 1 to 6")
    want_moved, want_changed = _syncs_1()
    problems = []
    if moved != want_moved:
        problems.append(
            "the syncs after which lastTransitionTime differs are not those (it is the time "
            "the status last changed, and the first call sets it)"
        )
    if changed != want_changed:
        problems.append(
            "the calls that return True are not those (set_status_condition returns True when "
            "it changed anything of the condition)"
        )
    if problems:
        return wrong(exercise, "; and ".join(problems))
    return correct(exercise, f"lastTransitionTime moved after {sorted(moved)}; True from "
                             f"{sorted(changed)}")  # fmt: skip


# --- exercise 2: who owns which key of a ConfigMap ---------------------------------------------

APPLY = "application/apply-patch+yaml"


def _writes_2(core: kubernetes.client.CoreV1Api, namespace: str, name: str) -> set[str]:
    """The exercise's five writes to ConfigMap ``name``; the letters of those refused."""

    def apply(manager: str, data: dict[str, str], force: bool | None = None) -> None:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                "data": data}  # fmt: skip
        core.patch_namespaced_config_map(
            name, namespace, body, field_manager=manager, force=force, _content_type=APPLY
        )

    writes: dict[str, Callable[[], Any]] = {
        "a": lambda: apply("alice", {"a": "1", "b": "2"}),
        "b": lambda: apply("bob", {"b": "3"}),
        "c": lambda: apply("bob", {"b": "3"}, force=True),
        "d": lambda: core.patch_namespaced_config_map(
            name, namespace, {"data": {"a": "9"}}, field_manager="carol",
            _content_type="application/merge-patch+json"),
        "e": lambda: apply("alice", {"a": "1", "b": "2"}),
    }  # fmt: skip
    refused = set()
    for letter, write in writes.items():
        try:
            write()
        except ApiException as err:
            if err.status != 409:
                raise
            refused.add(letter)
    return refused


def _owners(config_map: Mapping[str, Any]) -> dict[str, str]:
    owners: dict[str, list[str]] = {}
    for entry in config_map["metadata"].get("managedFields") or []:
        for key in (entry.get("fieldsV1") or {}).get("f:data") or {}:
            if key.startswith("f:"):
                owners.setdefault(key[2:], []).append(entry["manager"])
    return {key: ", ".join(sorted(managers)) for key, managers in owners.items()}


def check_2(answer: Any, api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    exercise = "2"
    if answer is None:
        return not_attempted(
            exercise, 'set answer_2 to {"refused": ..., "data": ..., "owners": ...}'
        )
    if not (isinstance(answer, Mapping) and {"refused", "data", "owners"} <= set(answer)):
        return wrong(exercise, 'answer with a dict with the keys "refused", "data" and "owners"')
    try:
        refused = {str(letter).strip().lower() for letter in answer["refused"]}
        data = {str(k): str(v) for k, v in dict(answer["data"]).items()}
        owners = {str(k): str(v) for k, v in dict(answer["owners"]).items()}
    except (TypeError, ValueError):
        return wrong(exercise, '"refused" is a set of letters; "data" and "owners" are dicts')
    namespace = namespaces.ensure_namespace(api, namespace)
    core = kubernetes.client.CoreV1Api(api)
    name = f"shared-{uuid.uuid4().hex[:6]}"
    try:
        was_refused = _writes_2(core, namespace, name)
        found = api.sanitize_for_serialization(core.read_namespaced_config_map(name, namespace))
    finally:
        try:
            core.delete_namespaced_config_map(name, namespace)
        except ApiException as err:
            if err.status != 404:
                raise
    problems = []
    if refused != was_refused:
        problems.append("the refused writes are not those")
    if data != (found.get("data") or {}):
        problems.append("the data at the end is not that")
    if owners != _owners(found):
        problems.append("the owners at the end are not those")
    if problems:
        hint = " (the API server made the writes: what does an update take, what does force do?)"
        return wrong(exercise, "; ".join(problems) + hint)
    return correct(exercise, f"refused {sorted(was_refused)}; data {found['data']}; "
                             f"owners {_owners(found)}")  # fmt: skip


# --- exercise 3: a summary condition -----------------------------------------------------------


def _cond(type_: str, status: str, reason: str = "Why", message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}  # fmt: skip


NORMAL = {"Available": "True", "ReplicaFailure": "False"}
CASES_3: list[tuple[str, list[dict[str, Any]], dict[str, str], tuple[str, str, str]]] = [
    ("both normal",
     [_cond("Available", "True"), _cond("ReplicaFailure", "False")], NORMAL,
     ("True", "AllNormal", "")),
    ("Available False",
     [_cond("Available", "False", "MinimumReplicasUnavailable", "no minimum"),
      _cond("ReplicaFailure", "False")], NORMAL,
     ("False", "MinimumReplicasUnavailable", "no minimum")),
    ("ReplicaFailure True (its normal status is False)",
     [_cond("Available", "True"), _cond("ReplicaFailure", "True", "FailedCreate", "quota")],
     NORMAL, ("False", "FailedCreate", "quota")),
    ("Available missing",
     [_cond("ReplicaFailure", "False")], NORMAL, ("Unknown", "Unknown", "Available unknown")),
    ("Available Unknown, ReplicaFailure True",
     [_cond("Available", "Unknown"), _cond("ReplicaFailure", "True", "FailedCreate", "quota")],
     NORMAL, ("False", "FailedCreate", "quota")),
    ("both abnormal, in the order of normal",
     [_cond("Available", "False", "MinimumReplicasUnavailable", "no minimum"),
      _cond("ReplicaFailure", "True", "FailedCreate", "quota")],
     {"ReplicaFailure": "False", "Available": "True"}, ("False", "FailedCreate", "quota")),
    ("a type that normal does not name",
     [_cond("Available", "True"), _cond("Progressing", "False", "Stuck", "deadline"),
      _cond("ReplicaFailure", "False")], NORMAL, ("True", "AllNormal", "")),
    ("nothing at all", [], NORMAL, ("Unknown", "Unknown", "Available unknown")),
]  # fmt: skip


def check_3(summary_ready: Any) -> Verdict:
    exercise = "3"
    if summary_ready is None:
        return not_attempted(exercise, "set summary_ready to your function")
    if not callable(summary_ready):
        return wrong(exercise, "summary_ready must be a function (conditions, normal) -> tuple")
    for what, conditions, normal, expected in CASES_3:
        given = copy.deepcopy(conditions)
        try:
            got = summary_ready(given, dict(normal))
        except Exception as err:  # the learner's code: say what it raised
            return wrong(exercise, f"for {what}, it raised {type(err).__name__}: {err}")
        if given != conditions:
            return wrong(exercise, f"for {what}, it changed the conditions it was given")
        if not (isinstance(got, tuple | list) and len(got) == 3):
            return wrong(
                exercise, f"for {what}, it returned {got!r}, not (status, reason, message)"
            )
        if tuple(got) != expected:
            return wrong(exercise, f"for {what} (normal: {normal}), it returned {tuple(got)}")
    return correct(exercise, f"{len(CASES_3)} cases")


# --- exercise 4: a CEL transition rule ----------------------------------------------------------

PROBE = "exerciseProbe"
"""A field added to ``spec`` with the rule: when the API server serves it, it serves the rule."""


def check_4(rule: Any, api: kubernetes.client.ApiClient, namespace: str) -> Verdict:
    exercise = "4"
    if rule is None:
        return not_attempted(exercise, 'set rule_4 to {"rule": "...", "message": "..."}')
    if not (isinstance(rule, Mapping) and isinstance(rule.get("rule"), str)
            and isinstance(rule.get("message"), str) and rule["message"].strip()):  # fmt: skip
        return wrong(exercise, 'answer with a dict {"rule": "<CEL>", "message": "<a sentence>"}')
    if workshop_mode.attendee() is not None:
        return CannotCheck(
            exercise, "not attempted yet",
            "cannot check in a workshop: it needs to change the Foo CRD, which an "
            "attendee may not; compare your rule with solutions/ch10.py"
        )  # fmt: skip
    namespace = namespaces.ensure_namespace(api, namespace)
    custom = kubernetes.client.CustomObjectsApi(api)
    where = {"group": FOO_GROUP, "version": FOO_VERSION, "namespace": namespace,
             "plural": FOO_PLURAL}  # fmt: skip
    suffix = uuid.uuid4().hex[:5]
    named, nameless = f"rule-named-{suffix}", f"rule-nameless-{suffix}"
    try:
        with _rule_on_spec(api, dict(rule), namespace) as refused_rule:
            if refused_rule:
                return wrong(exercise, f"the API server did not take the rule: {refused_rule}")
            return _try_changes(custom, where, named, nameless, rule["message"])
    finally:
        for name in (named, nameless):
            try:
                custom.delete_namespaced_custom_object(name=name, **where)
            except ApiException as err:
                if err.status != 404:
                    raise


def _try_changes(
    custom: kubernetes.client.CustomObjectsApi,
    where: dict[str, str],
    named: str,
    nameless: str,
    message: str,
) -> Verdict:
    exercise = "4"

    def change(name: str, spec: dict[str, Any]) -> str | None:
        """None if accepted, else the API server's message."""
        try:
            custom.patch_namespaced_custom_object(name=name, body={"spec": spec}, **where)
            return None
        except ApiException as err:
            if err.status not in (400, 422):
                raise
            return str(status_of(err)["message"])

    try:
        custom.create_namespaced_custom_object(body=foo_body(named, "first", 1), **where)
        custom.create_namespaced_custom_object(body=foo_body(nameless, None, 1), **where)
    except ApiException as err:
        return wrong(exercise, f"a new Foo was refused: {status_of(err)['message']}")
    if (said := change(named, {"replicas": 2})) is not None:
        return wrong(exercise, f"scaling a Foo was refused: {said}")
    renamed = change(named, {"deploymentName": "second"})
    if renamed is None:
        return wrong(exercise, "changing deploymentName was accepted")
    if message not in renamed:
        return wrong(exercise, f"changing deploymentName was refused, but not by your rule: "
                               f"{renamed}")  # fmt: skip
    if change(named, {"deploymentName": None}) is None:
        return wrong(exercise, "taking deploymentName away was accepted")
    if (said := change(nameless, {"deploymentName": "late"})) is not None:
        return wrong(exercise, f"a Foo created without deploymentName could not get one: {said}")
    return correct(exercise, "a rename and a removal refused; a scale and a first name accepted")


@contextmanager
def _rule_on_spec(
    api: kubernetes.client.ApiClient, rule: dict[str, Any], namespace: str
) -> Iterator[str | None]:
    """The Foo CRD with ``rule`` on ``spec`` (and the probe field) while the block runs.

    Yields None, or the API server's refusal of the rule (a CEL that does not compile, say).
    """
    extensions = kubernetes.client.ApiextensionsV1Api(api)

    def change(add: bool) -> None:
        for _ in range(5):
            crd = api.sanitize_for_serialization(
                extensions.read_custom_resource_definition(FOO_CRD)
            )
            for version in crd["spec"]["versions"]:
                spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
                rules = [r for r in spec.get("x-kubernetes-validations") or [] if r != rule]
                spec.setdefault("properties", {}).pop(PROBE, None)
                if add:
                    rules.append(rule)
                    spec["properties"][PROBE] = {"type": "string"}
                spec["x-kubernetes-validations"] = rules
                if not rules:
                    del spec["x-kubernetes-validations"]
            try:
                extensions.replace_custom_resource_definition(FOO_CRD, crd)
                return
            except ApiException as err:
                if err.status != 409:  # 409: somebody changed the CRD meanwhile; read again
                    raise

    try:
        try:
            change(add=True)
        except ApiException as err:
            if err.status != 422:
                raise
            yield str(status_of(err)["message"])
            return
        _wait_for_probe(api, namespace, served=True)
        yield None
    finally:
        change(add=False)
        _wait_for_probe(api, namespace, served=False)


def _wait_for_probe(api: kubernetes.client.ApiClient, namespace: str, *, served: bool) -> None:
    """Wait until a strict dry-run create with the probe field is accepted (or refused)."""
    body = {"apiVersion": f"{FOO_GROUP}/{FOO_VERSION}", "kind": FOO_KIND,
            "metadata": {"generateName": "rule-probe-"}, "spec": {PROBE: "x"}}  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        accepted = strict_dry_run(api, namespace, body) != 400  # 422: served, a rule said no
        if accepted == served and _listable(api, namespace):
            return
        if time.monotonic() > deadline:
            raise TimeoutError("the API server did not take up the Foo CRD's change in 30 s")
        time.sleep(0.1)  # polling a change nobody announces
