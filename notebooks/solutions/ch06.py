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


# 2. Wake only when the Foo asks for something new: its generation moved. That drops the
# controller's own status writes (and label or annotation changes), and keeps spec changes and
# the deletion of a Foo a finalizer holds (setting deletionTimestamp raises the generation too).
# controller-runtime's GenerationChangedPredicate is this function.
def wakes(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return old["metadata"].get("generation") != new["metadata"].get("generation")


# 3. Twelve failures: the per-item delay is 5 ms * 2**11 = 10.24 s; the bucket (50/s, burst 300)
# has hardly been touched, so the larger of the two is the per-item delay.
answer_3 = "b"


# 4. b read 10 after a's write had made 12; e read 12 after c's had made 15. d's 409 is someone
# else's doing: it read 15, the controller's own last write, and 16 came from elsewhere. e never
# met a 409 only because it failed before its status write.
answer_4 = {"b", "e"}
