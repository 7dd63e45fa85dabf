"""Solutions to chapter 06's exercises. Try them yourself first!"""

from __future__ import annotations

from typing import Any

from helpers.controller import new_deployment


# 1. Compare what the Foo asks for (new_deployment) with what the cache holds, field by field:
# replicas as before, and the first container's image. Comparing whole specs would not work:
# the API server adds defaults (strategy, imagePullPolicy, ...) the Foo never asks for.
def needs_update(foo: dict[str, Any], deployment: dict[str, Any]) -> bool:
    wanted = new_deployment(foo)["spec"]
    have = deployment.get("spec") or {}

    def image(spec: dict[str, Any]) -> str | None:
        containers = (spec.get("template") or {}).get("spec", {}).get("containers") or [{}]
        return containers[0].get("image")

    replicas_differ = wanted.get("replicas") is not None and wanted["replicas"] != have.get(
        "replicas"
    )
    return replicas_differ or image(wanted) != image(have)


# 2. Only the two fields, each from its source; None when the Foo says exactly that already
# (a write would change nothing but still cost a request).
def careful_status(foo: dict[str, Any], deployment: dict[str, Any]) -> dict[str, Any] | None:
    wanted = {
        "availableReplicas": (deployment.get("status") or {}).get("availableReplicas", 0),
        "observedGeneration": foo["metadata"]["generation"],
    }
    return None if (foo.get("status") or {}) == wanted else wanted


# 3. Twelve failures: the per-item delay is 5 ms * 2**11 = 10.24 s; the bucket (50/s, burst 300)
# has hardly been touched, so the larger of the two is the per-item delay.
answer_3 = "b"
