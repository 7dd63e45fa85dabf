"""Chapter 10's Foo CRD: the fields and the CEL rule it adds, and taking them out again.

A CRD is cluster-wide: a change reaches the Foos of every namespace. :func:`extend_foo_crd`
adds ``spec.configMapRef``, ``status.observedGeneration``, ``status.conditions`` (a list
keyed by ``type``, the schema of apimachinery's ``metav1.Condition``) and, if asked,
:data:`NAME_RULE`; it notes in an annotation what it added, and :func:`restore_foo_crd`
takes out exactly that, so that it leaves alone what chapter 06b or a facilitator added.
Both wait until the API server serves the change (asked with dry-run creates in a
namespace): it takes up a new schema a moment after the CRD changes, and says so nowhere a
client could watch.

Not built by a chapter: written by hand, as chapter 06b's ``helpers.reconcile.extend_foo_status``
is; chapter 10 uses it, and a workshop's ``python -m helpers.cluster.workshop up`` installs
chapter 10's CRD with it (attendees may not change a CRD).
"""

from __future__ import annotations

import copy
import json
import time
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
    custom = kubernetes.client.CustomObjectsApi(api)
    condition = {"type": "Ready", "status": "True", "reason": "Probe", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
    probes = {
        "spec.configMapRef": {"spec": {"configMapRef": {"name": "probe"}}},
        "status.observedGeneration": {"status": {"observedGeneration": 1}},
        "status.conditions": {"status": {"conditions": [condition]}},
        "rule": {"metadata": {"name": "p" * 64}},
    }
    served = set()
    for what, probe in probes.items():
        body = {"apiVersion": f"{FOO_GROUP}/{FOO_VERSION}", "kind": FOO_KIND,
                "metadata": {"generateName": "schema-probe-"}} | probe  # fmt: skip
        try:
            custom.create_namespaced_custom_object(
                FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, body,
                dry_run="All", field_validation="Strict",
            )  # fmt: skip
            served |= {what} if what != "rule" else set()
        except ApiException as err:
            if err.status not in (400, 422):
                raise
            served |= {what} if what == "rule" and err.status == 422 else set()
    return served
