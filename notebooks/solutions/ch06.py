"""Solutions to chapter 06's exercises (06a and 06b). Try them yourself first!"""

from __future__ import annotations

from typing import Any

from helpers.controller import new_deployment


# 06a, exercise 1. Compare what the Foo asks for (new_deployment) with what the cache holds,
# field by field: replicas as before, and the first container's image. Comparing whole specs
# would not work: the API server adds defaults (strategy, imagePullPolicy, ...) the Foo never
# asks for.
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


# 06a, exercise 2. 300 of the 400 first failures find a token in the burst and come back after
# the per-item 5 ms; the other 100 wait for tokens that come every 20 ms: the last one
# 100 / 50 = 2 s. Each Foo holds at most one place in the bucket's line (its one pending retry),
# so the bucket can make a Foo wait at most 400 / 50 = 8 s; after Foo #1's 12th failure the
# per-item delay is 5 ms * 2**11 = 10.24 s, longer: the per-item limiter decides (after its
# 11th, 5.12 s against 8 s, the bucket did).
prediction = (2.0, "per-item")


# 06b, exercise 1. Wake when something other than this controller's own stamp changed: the
# generation (a spec change, or a deletion a finalizer holds: setting deletionTimestamp raises
# it too), or the status in anything but lastSyncTime. The controller's own writes change
# lastSyncTime on every sync, and the rest of the status only once after a real change, so the
# loop stops after one more sync. A status someone else wrote by hand still wakes it, and the
# sync puts it right. controller-runtime's GenerationChangedPredicate (generation alone) would
# stop the loop too, but would leave a hand-written status wrong until the Deployment changed.
def wakes(old: dict[str, Any], new: dict[str, Any]) -> bool:
    def asked(foo: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        status = dict(foo.get("status") or {})
        status.pop("lastSyncTime", None)
        return foo["metadata"].get("generation"), status

    return asked(old) != asked(new)


# 06b, exercise 2. b read 10 after a's write had made 12; d read 12 after c's had made 15. e's
# 409 is someone else's doing: it read 15, the controller's own last write, and 16 came from
# elsewhere. d never met a 409 only because it failed before its status write.
stale_letters = {"b", "d"}
