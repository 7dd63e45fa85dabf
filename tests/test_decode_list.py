"""helpers.listwatch.decode_list: a LIST decoded item by item, sharing what repeats.

``json.loads`` of a whole LIST shares one string per distinct key across the
document; decoding item by item must keep that sharing, or a cache of 10,000
objects holds 10,000 copies of every key. Values that repeat across objects
(the namespace, the creation time, labels, annotations) are shared too.
"""

from __future__ import annotations

import json
from typing import Any

from helpers.listwatch import MAX_SHARED_VALUE, decode_list


def config_map(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "shop", "labels": labels,
                     "creationTimestamp": "2026-12-03T12:00:00Z",
                     "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:data": {}}}]},
        "data": {"colour": "red", "config.yaml": "a: 1"},
    }  # fmt: skip


def listed(*items: dict[str, Any]) -> bytes:
    # Built by string concatenation, so that no two items share a string before decoding.
    return (
        '{"kind": "ConfigMapList", "items": [' + ", ".join(map(json.dumps, items)) + "]}"
    ).encode()


def test_items_are_the_objects_json_loads_gives() -> None:
    items = [config_map(f"cm-{i}", app="shop", tier=f"t{i}") for i in range(3)]
    assert decode_list(listed(*items)) == {"kind": "ConfigMapList", "items": items}


def test_keys_at_every_depth_and_repeated_metadata_values_are_one_string() -> None:
    first, second = decode_list(listed(config_map("a", app="shop"), config_map("b", app="shop")))[
        "items"
    ]
    for path in ([], ["metadata"], ["data"], ["metadata", "labels"]):
        one, two = first, second
        for step in path:
            one, two = one[step], two[step]
        for key_one, key_two in zip(sorted(one), sorted(two), strict=True):
            assert key_one is key_two, (path, key_one)
    assert first["metadata"]["namespace"] is second["metadata"]["namespace"]
    assert first["metadata"]["creationTimestamp"] is second["metadata"]["creationTimestamp"]
    assert first["metadata"]["labels"]["app"] is second["metadata"]["labels"]["app"]
    assert first["data"]["colour"] is not second["data"]["colour"]  # data values are not shared


def test_long_label_values_are_not_interned_and_transform_comes_first() -> None:
    long = "x" * (MAX_SHARED_VALUE + 1)
    seen: list[dict[str, Any]] = []

    def strip(item: dict[str, Any]) -> dict[str, Any]:
        item["metadata"].pop("managedFields")
        seen.append(item)
        return item

    first, second = decode_list(
        listed(config_map("a", big=long), config_map("b", big=long)), strip
    )["items"]
    assert first["metadata"]["labels"]["big"] == second["metadata"]["labels"]["big"] == long
    assert first["metadata"]["labels"]["big"] is not second["metadata"]["labels"]["big"]
    assert "managedFields" not in first["metadata"] and len(seen) == 2
