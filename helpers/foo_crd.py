"""The Foo CRD as the course changes it, and taking each change out again.

sample-controller's CRD (``manifests/foo-crd.yaml``) is what ``make up``
installs. Two chapters add to it:

* chapter 06b: :func:`extend_foo_status` adds ``observedGeneration`` (and
  ``lastSyncTime``, for the runaway loop the chapter shows) to a Foo's status,
  which sample-controller's CRD lacks; :func:`restore_foo_status` takes them out.
* chapter 10: :func:`extend_foo_crd` adds chapter 10's fields and CEL rule, and
  :func:`restore_foo_crd` takes out exactly what it added.

A CRD is cluster-wide: a change reaches the Foos of every namespace. :func:`extend_foo_crd`
adds ``spec.configMapRef``, ``status.observedGeneration``, ``status.conditions`` (a list
keyed by ``type``, the schema of apimachinery's ``metav1.Condition``) and, if asked,
:data:`NAME_RULE`; it notes in an annotation what it added, and :func:`restore_foo_crd`
takes out exactly that, so that it leaves alone what chapter 06b or a facilitator added.
Both wait until the API server serves the change (asked with dry-run creates in a
namespace): it takes up a new schema a moment after the CRD changes, and says so nowhere a
client could watch.

Not built by a chapter: written by hand; chapters 06b and 10 use it, and a workshop's
``python -m helpers.cluster.workshop up`` makes both chapters' changes with it (attendees
may not change a CRD).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from helpers.controller import FOO_GROUP, FOO_KIND, FOO_PLURAL, FOO_VERSION

FOO_CRD = f"{FOO_PLURAL}.{FOO_GROUP}"
ADDED = "controllers-from-scratch/chapter-10-added"
"""The CRD's annotation listing what :func:`extend_foo_crd` added (a JSON list)."""

CONDITION = {
    "type": "object",
    "required": ["type", "status", "lastTransitionTime", "reason", "message"],
    "properties": {
        "type": {"type": "string", "maxLength": 316},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "reason": {"type": "string", "minLength": 1, "maxLength": 1024},
        "message": {"type": "string", "maxLength": 32768},
    },
}
"""One condition, as metav1.Condition's markers describe it (required fields, enum, lengths)."""

FIELDS = {
    "spec.configMapRef": {"type": "object", "properties": {"name": {"type": "string"}}},
    "status.observedGeneration": {"type": "integer", "format": "int64"},
    "status.conditions": {
        "type": "array",
        # A map keyed by type: server-side apply gives each condition its own owner.
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": CONDITION,
    },
}
# Chapter 10's CEL rule; at the schema's root, ``self`` is the Foo.
NAME_RULE = {
    "rule": "self.metadata.name.size() <= 63",
    "message": "a Foo's name goes into a label value of its Deployment: at most 63 characters",
}


def extend_foo_crd(
    api: kubernetes.client.ApiClient, namespace: str = "default", *, name_rule: bool = False
) -> None:
    """Add chapter 10's fields (and, with ``name_rule``, :data:`NAME_RULE`); idempotent."""

    def add(crd: dict[str, Any], added: list[str]) -> None:
        for version in crd["spec"]["versions"]:
            root = version["schema"]["openAPIV3Schema"]
            for path, schema in FIELDS.items():
                part, field = path.split(".")
                properties = root["properties"][part].setdefault("properties", {})
                if field not in properties:
                    properties[field] = copy.deepcopy(schema)
                    added.append(path)
            rules = root.setdefault("x-kubernetes-validations", [])
            if name_rule and NAME_RULE not in rules:
                rules.append(dict(NAME_RULE))
                added.append("rule")
            if not rules:
                del root["x-kubernetes-validations"]
        added[:] = sorted(set(added))

    _change(api, add, namespace)


def restore_foo_crd(api: kubernetes.client.ApiClient, namespace: str = "default") -> None:
    """Take out what :func:`extend_foo_crd` added, and nothing else (idempotent)."""

    def remove(crd: dict[str, Any], added: list[str]) -> None:
        for version in crd["spec"]["versions"]:
            root = version["schema"]["openAPIV3Schema"]
            for path in [p for p in added if p in FIELDS]:
                part, field = path.split(".")
                (root["properties"][part].get("properties") or {}).pop(field, None)
            if "rule" in added and NAME_RULE in (root.get("x-kubernetes-validations") or []):
                root["x-kubernetes-validations"].remove(NAME_RULE)
            if root.get("x-kubernetes-validations") == []:
                del root["x-kubernetes-validations"]
        added.clear()

    _change(api, remove, namespace)


def foo_crd_additions(api: kubernetes.client.ApiClient) -> list[str]:
    """Which of chapter 10's fields and rule the Foo CRD has now, as "spec.configMapRef" ..."""
    root = _read(api)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    found = [path for path in FIELDS if path.split(".")[1] in
             (root["properties"][path.split(".")[0]].get("properties") or {})]  # fmt: skip
    return found + (["rule"] if NAME_RULE in (root.get("x-kubernetes-validations") or []) else [])


def _read(api: kubernetes.client.ApiClient) -> dict[str, Any]:
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    return api.sanitize_for_serialization(extensions.read_custom_resource_definition(FOO_CRD))


def _change(api: kubernetes.client.ApiClient, change: Any, namespace: str) -> None:
    """Read, change, replace (again on a 409: a CRD is everyone's), then wait until served."""
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    for _ in range(5):
        crd = _read(api)
        before = copy.deepcopy(crd)
        annotations = crd["metadata"].setdefault("annotations", {})
        added = json.loads(annotations.get(ADDED, "[]"))
        change(crd, added)
        if added:
            annotations[ADDED] = json.dumps(added)
        else:
            annotations.pop(ADDED, None)
        if crd == before:
            break
        try:
            extensions.replace_custom_resource_definition(FOO_CRD, crd)
            break
        except ApiException as err:
            if err.status != 409:
                raise
    _wait_until_served(api, set(foo_crd_additions(api)), namespace)


def strict_dry_run(
    api: kubernetes.client.ApiClient, namespace: str, body: dict[str, Any]
) -> int | None:
    """Would the API server create Foo ``body`` in ``namespace``? None if so; else its refusal,
    400 (a field the schema does not know: strict field validation) or 422 (a rule failed).

    A dry run (``dryRun=All``) is checked and admitted like a create, and stores nothing: how
    to ask which schema the API server serves now, which it says nowhere a client could watch.
    """
    custom = kubernetes.client.CustomObjectsApi(api)
    try:
        custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, body,
            dry_run="All", field_validation="Strict",
        )  # fmt: skip
    except ApiException as err:
        if err.status not in (400, 422):
            raise
        return int(err.status)
    return None


def _wait_until_served(api: kubernetes.client.ApiClient, wanted: set[str], namespace: str) -> None:
    deadline = time.monotonic() + 30
    while _served(api, namespace) != wanted or not _listable(api, namespace):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the API server did not serve the Foo CRD with {sorted(wanted)}")
        time.sleep(0.1)  # polling a change nobody announces


def _listable(api: kubernetes.client.ApiClient, namespace: str) -> bool:
    """Can Foos be listed (and watched) yet? After a CRD changes, the API server builds its Foo
    storage and watch cache anew, and answers a LIST or WATCH with 429 until the cache is
    ready (apiserver's ``ResilientWatchCacheInitialization``)."""
    custom = kubernetes.client.CustomObjectsApi(api)
    try:
        custom.list_namespaced_custom_object(FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, limit=1)
    except ApiException as err:
        if err.status != 429:
            raise
        return False
    return True


def _served(api: kubernetes.client.ApiClient, namespace: str) -> set[str]:
    """What the API server serves now, by dry-run creates: a strict create fails on a field
    it does not know (400), and a 64-character name fails the rule (422)."""
    condition = {"type": "Ready", "status": "True", "reason": "Probe", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
    probes: dict[str, dict[str, Any]] = {
        "spec.configMapRef": {"spec": {"configMapRef": {"name": "probe"}}},
        "status.observedGeneration": {"status": {"observedGeneration": 1}},
        "status.conditions": {"status": {"conditions": [condition]}},
        "rule": {"metadata": {"name": "p" * 64}},
    }
    served = set()
    for what, probe in probes.items():
        body = {"apiVersion": f"{FOO_GROUP}/{FOO_VERSION}", "kind": FOO_KIND,
                "metadata": {"generateName": "schema-probe-"}} | probe  # fmt: skip
        refused = strict_dry_run(api, namespace, body)
        if (refused == 422) if what == "rule" else (refused is None):
            served.add(what)
    return served


# --- chapter 06b: the two status fields sample-controller's CRD lacks ------------------------

STATUS_FIELDS = {
    "observedGeneration": {"type": "integer", "format": "int64"},
    "lastSyncTime": {"type": "string", "format": "date-time"},
}


def extend_foo_status(api: kubernetes.client.ApiClient, namespace: str = "default") -> None:
    """Let a Foo's status hold ``observedGeneration`` and ``lastSyncTime`` (idempotent).

    ``namespace`` is where the API server is asked (dry run) whether it serves them yet; a
    workshop attendee passes their own, and needs no right to change the CRD once the
    facilitator's ``python -m helpers.cluster.workshop up`` has extended it for everyone.
    """
    _change_status_schema(api, lambda properties: properties.update(STATUS_FIELDS), namespace)


def restore_foo_status(api: kubernetes.client.ApiClient, namespace: str = "default") -> None:
    """Take the fields :func:`extend_foo_status` added out again (idempotent)."""

    def remove(properties: dict[str, Any]) -> None:
        for name in STATUS_FIELDS:
            properties.pop(name, None)

    _change_status_schema(api, remove, namespace)


def foo_status_fields(api: kubernetes.client.ApiClient) -> list[str]:
    """The fields the Foo CRD's schema allows in a Foo's status, sorted."""
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    crd = api.sanitize_for_serialization(extensions.read_custom_resource_definition(FOO_CRD))
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    return sorted(status.get("properties") or {})


def status_is_extended(api: kubernetes.client.ApiClient) -> bool:
    """Does the Foo CRD's schema have the fields :func:`extend_foo_status` adds?"""
    return set(STATUS_FIELDS) <= set(foo_status_fields(api))


def _change_status_schema(
    api: kubernetes.client.ApiClient,
    change: Callable[[dict[str, Any]], None],
    namespace: str,
) -> None:
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    crd = api.sanitize_for_serialization(extensions.read_custom_resource_definition(FOO_CRD))
    before = copy.deepcopy(crd)
    for version in crd["spec"]["versions"]:
        status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
        change(status.setdefault("properties", {}))
    if crd != before:
        extensions.replace_custom_resource_definition(FOO_CRD, crd)
    wanted = set(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
                 .get("properties", {}))  # fmt: skip
    _wait_until_status_served(api, wanted, namespace)


def _wait_until_status_served(
    api: kubernetes.client.ApiClient, fields: set[str], namespace: str
) -> None:
    """Wait until the API server decodes Foos with the new schema (it updates its handler for
    Foos a moment after the CRD changes, and says so nowhere we could watch: so we ask)."""
    deadline = time.monotonic() + 30
    while not _status_schema_knows(api, fields, namespace):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the API server did not serve Foo status fields {sorted(fields)}")
        time.sleep(0.1)  # polling a condition nobody announces


def _status_schema_knows(
    api: kubernetes.client.ApiClient, fields: set[str], namespace: str
) -> bool:
    """Does a strict, dry-run create accept exactly these status fields (and no others)?"""
    every = set(STATUS_FIELDS) | {"availableReplicas"}
    for name in every:
        probe = {
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "metadata": {"generateName": "schema-probe-"},
            "status": {name: "2026-01-01T00:00:00Z" if name == "lastSyncTime" else 1},
        }
        accepted = strict_dry_run(api, namespace, probe) != 400  # the schema knows the field
        if accepted != (name in fields):
            return False
    return True
