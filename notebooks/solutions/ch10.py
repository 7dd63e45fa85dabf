"""Solutions to chapter 10's exercises. Try them yourself first!"""

from __future__ import annotations

from typing import Any

# Exercise 1. The first call appends the condition with a time (1). A new message (2) or a new
# observedGeneration (4) changes the condition and keeps its time; a new status moves the time
# (3: False -> True; 6: True -> Unknown, which is a status like the others). Sync 5 changes
# nothing, so the call returns False: a controller that writes only when it returns True
# makes no write there.
answer_1 = ({1, 3, 6}, {1, 2, 3, 4, 6})

# Exercise 2. (b) is refused: alice owns b, and bob does not force. (c) forces: bob takes b
# (alice no longer owns it). (d) is a merge patch, not an apply: it never conflicts, and carol
# takes a from alice, who now owns nothing. (e) conflicts with bob on b and with carol on a,
# and does not force: refused, and nothing changes.
answer_2 = {
    "refused": {"b", "e"},
    "data": {"a": "9", "b": "3"},
    "owners": {"a": "carol", "b": "bob"},
}


# Exercise 3. Walk the types in normal's order: the first condition that has the other of
# True and False decides; Unknown and absent only matter when nothing is abnormal.
def summary_ready(conditions: list[dict[str, Any]], normal: dict[str, str]) -> tuple[str, str, str]:
    by_type = {found["type"]: found for found in conditions}
    unknown = None
    for type_, good in normal.items():
        found = by_type.get(type_)
        status = found["status"] if found else "Unknown"
        if status in ("True", "False") and status != good:
            return "False", found["reason"], found["message"]
        if status not in ("True", "False") and unknown is None:
            unknown = type_
    if unknown is not None:
        return "Unknown", "Unknown", f"{unknown} unknown"
    return "True", "AllNormal", ""


# Exercise 4. On spec, oldSelf is the stored spec. A Foo stored without deploymentName may get
# one (the first disjunct); otherwise the new spec must have it, unchanged. has() first: reading
# a field that is absent is an error in CEL, and an error refuses the request (so a rule
# without the first has() would refuse a first name, and one without the second would refuse a
# removal with an error instead of its message).
rule_4 = {
    "rule": "!has(oldSelf.deploymentName) || "
    "(has(self.deploymentName) && self.deploymentName == oldSelf.deploymentName)",
    "message": "deploymentName may not change or go once it is set",
}
