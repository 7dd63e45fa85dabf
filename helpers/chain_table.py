"""The chain's changes as a table whose text is the same from run to run: chapter 07's tables.

:func:`summary` folds a list of :class:`helpers.attribution.Change` into one
:class:`Row` per step, kind, field and actor (and object, except Pods): three
Pods created at once are one row, and a status reads its final values, since
the values in between depend on timing. :func:`table` lays the rows out as
aligned text, which Jupyter shows as an HTML table (:class:`Table`).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from helpers.attribution import Change, is_status

KIND_ORDER = ["Foo", "Deployment", "ReplicaSet", "Pod", "Node"]
FIELD_ORDER = [
    "created",
    "not bound yet",
    "spec.replicas",
    "image",
    "spec.nodeName",
    "status",
    "restartCount",
    "deletionTimestamp",
    "deleted",
]


@dataclass(frozen=True)
class Row:
    """Changes of one field by one actor in one step, folded into one line."""

    step: int | None
    at: float  # the first of them
    what: str  # "3 Pods", "ReplicaSet web-5d4f8c7b9"
    change: str
    actor: str
    evidence: str


NOT_IN_THE_TABLE = frozenset({"status.updatedReplicas"})
"""Reported fields the table leaves out: a Deployment's updatedReplicas is a rollout's count,
which :func:`helpers.attribution.settled` reads; its availableReplicas says what the table
needs."""


def _fold(field: str, group: Sequence[Change]) -> str:
    """A group's text: a spec's values in order; the final status; what was done."""
    first = group[0]
    if field == "created":
        return f"created, {first.after}" if first.after else "created"
    if field in ("deleted", "not bound yet"):
        return {"deleted": "deleted", "not bound yet": "not bound yet: unseen"}[field]
    if field in ("spec.nodeName", "deletionTimestamp"):
        return f"{field} set"
    if field == "status":  # in-between values depend on timing; the final ones do not
        finals = {
            change.name: ", ".join(
                f"{name.removeprefix('status.')}={value}"
                for name, value in change.state
                if is_status(name) and name not in NOT_IN_THE_TABLE
            )
            for change in group
        }
        return "status " + " / ".join(sorted(set(finals.values())))
    return f"{field} " + " → ".join([first.before, *(change.after for change in group)])


def summary(changes: Sequence[Change]) -> list[Row]:
    """One row per step, kind, field and actor (and object, except Pods), in step order."""
    first_seen: dict[tuple[str, str], int] = {}
    groups: dict[tuple[Any, ...], list[Change]] = {}
    for change in changes:
        if change.step is None or change.actor is None:
            continue
        obj = "" if change.kind == "Pod" else change.name
        first_seen.setdefault((change.kind, obj), len(first_seen))
        field = "status" if is_status(change.field) else change.field
        groups.setdefault((change.step, change.kind, obj, field, change.actor), []).append(change)

    def order(key: tuple[Any, ...]) -> tuple[Any, ...]:
        step, kind, obj, field, actor = key
        return (
            step,
            KIND_ORDER.index(kind),
            first_seen[kind, obj],
            FIELD_ORDER.index(field),
            actor,
        )

    rows = []
    for key in sorted(groups, key=order):
        step, kind, obj, field, actor = key
        group = groups[key]
        pods = sorted({change.name for change in group})
        what = (
            f"{kind} {obj}" if obj else f"{len(pods)} Pods" if len(pods) > 1 else f"Pod {pods[0]}"
        )
        rows.append(Row(step, group[0].at, what, _fold(field, group), actor, group[0].evidence))
    return rows


HEADER = ("step", "object", "change", "actor", "how we know")


class Table(str):
    """The table as aligned text, which Jupyter shows as an HTML table instead.

    No times: the picture above a table shows when each change arrived, and the rows are in
    the order of the steps. Its text stays about 110 characters wide, the width of a laptop's
    notebook column; an HTML table wraps inside its cells, at words, if it must. The text
    stays for everything else (``print``, GitHub's view of a saved notebook, nbval).
    """

    cells: list[tuple[str, ...]]

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        def row(cells: Sequence[str], tag: str) -> str:
            return "<tr>" + "".join(
                f'<{tag} style="text-align: left">{html.escape(c)}</{tag}>' for c in cells
            ) + "</tr>"  # fmt: skip

        body = "".join(row(cells, "td") for cells in self.cells)
        return f"<table><thead>{row(HEADER, 'th')}</thead><tbody>{body}</tbody></table>"


def table(rows: Sequence[Row]) -> Table:
    """The rows as aligned text, in Jupyter an HTML table (:class:`Table`)."""
    lines: list[tuple[str, ...]] = [
        (str(row.step), row.what, row.change, row.actor, row.evidence) for row in rows
    ]
    widths = [max(len(line[i]) for line in [HEADER, *lines]) for i in range(len(HEADER))]
    text = Table(
        "\n".join(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
            for line in [HEADER, *lines]
        )
    )
    text.cells = lines
    return text
