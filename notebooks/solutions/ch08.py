"""Solutions to chapter 08's exercises. Try them yourself first!"""

from __future__ import annotations

from collections.abc import Mapping

# After a crash nothing tells the standby; it takes over once the record has not changed for
# LeaseDuration (15 s) by its own clock, at its next jittered try: about 15 to 20 s. A clean
# stop releases the Lease (empty holder), which the standby takes at its next try: 2 to 4.4 s.
answer_1 = "b"

VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def rbac_verb(method: str, path: str, query: Mapping[str, str]) -> tuple[str, str]:
    parts = path.strip("/").split("/")
    # /api/v1/... is the core group (no suffix); /apis/GROUP/VERSION/... the others.
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    resource, name, subresource = [*rest, "", ""][:3]
    verb = VERBS.get(method)
    if verb is None:  # GET: one object, or a collection (listed or watched)
        watching = query.get("watch") in ("true", "1")
        verb = "get" if name else ("watch" if watching else "list")
    if subresource:
        resource = f"{resource}/{subresource}"
    return verb, f"{resource}.{group}" if group else resource


# A finalizer turns DELETE into "mark for deletion": deletionTimestamp is set, the Foo stays
# (kubectl shows it Terminating) until every finalizer is removed, then it is deleted.
answer_3 = "c"
