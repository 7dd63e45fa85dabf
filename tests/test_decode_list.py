"""helpers.decode.decode_list: a LIST decoded item by item, sharing what repeats.

``json.loads`` of a whole LIST shares one string per distinct key across the
document; decoding item by item must keep that sharing, or a cache of 10,000
objects holds 10,000 copies of every key. Values that repeat across objects
(the namespace, the creation time, labels, annotations) are shared too.
"""

from __future__ import annotations

import json
from typing import Any

import kubernetes
import pytest

from helpers.decode import MAX_SHARED_VALUE, decode_list
from helpers.listwatch import ListWatch


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


class Trickle:
    """A response that hands out a few bytes per read, whatever size is asked for.

    Reads end in the middle of keys, numbers and multi-byte characters, which is
    where decoding while the response arrives can go wrong.
    """

    def __init__(self, body: bytes, step: int) -> None:
        self.body, self.step, self.at, self.reads = body, step, 0, 0

    def read(self, amt: int) -> bytes:
        self.reads += 1
        chunk = self.body[self.at : self.at + min(self.step, amt)]
        self.at += len(chunk)
        return chunk


@pytest.mark.parametrize("step", [1, 3, 7, 64, 100_000])
def test_a_response_read_in_pieces_decodes_to_what_json_loads_gives(step: int) -> None:
    items = [config_map(f"cm-{i}", app="shop", note="café ☕ 日本") for i in range(4)]
    items[1]["data"] = {"count": 1234567, "ratio": -0.125e3, "big": 12345678901234567890}
    body = (json.dumps({"kind": "ConfigMapList", "metadata": {"continue": "x"}, "items": items},
                       ensure_ascii=False, indent=1) + "\n").encode()  # fmt: skip
    response = Trickle(body, step)
    assert decode_list(response) == json.loads(body)
    assert response.at == len(body), "the response is read to its end"


def test_an_item_larger_than_a_chunk_is_not_decoded_again_for_every_chunk() -> None:
    big = config_map("big", app="shop")
    big["data"] = {f"key{i}": "v" * 100 for i in range(10_000)}  # about 1.2 MB
    body = listed(config_map("small"), big)
    response = Trickle(body, 1 << 30)  # gives what is asked for: 64 kB, then more
    assert decode_list(response)["items"][1] == big
    assert response.reads < 10  # doubling: not len(body) / 64 kB (about 18) reads


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"kind": "ConfigMapList", "items": [{"a": 1}, {"b"', "Expecting ':' delimiter"),
        (b'{"kind": "ConfigMapList", "items": [{"a": 1}', "the response ended before the list did"),
        (b'{"items": []} {"items": []}', "Extra data"),
        (b"", "the response ended before the list did"),
    ],
)
def test_a_cut_or_malformed_response_raises_json_decode_error(body: bytes, message: str) -> None:
    for source in (body, Trickle(body, 5)):
        with pytest.raises(json.JSONDecodeError, match=message):
            decode_list(source)


def test_a_list_that_fails_while_arriving_closes_its_connection(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """Stopping halfway leaves bytes unread: that connection is closed, not given back.

    Given back to the pool, the next request on it could read the rest of the
    old body as its status line. urllib3 closes a pooled connection whose
    socket has data waiting when it hands it out again, but bytes still on
    their way arrive after that check.
    """
    core = kubernetes.client.CoreV1Api(api)
    for i in range(40):  # about 400 kB: the list arrives in many chunks
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": f"cm-{i:02d}"}, "data": {"blob": "x" * 10_000}}
        )
    opened = []

    class Recording(ListWatch):
        def _get(self, *args: Any, **kwargs: Any) -> Any:
            response = super()._get(*args, **kwargs)
            opened.append(response.connection)
            return response

    def fail_on_the_second(item: dict[str, Any], seen: list[int] = []) -> dict[str, Any]:  # noqa: B006
        seen.append(1)
        if len(seen) == 2:
            raise RuntimeError("a transform that fails")
        return item

    lister = Recording(api, f"/api/v1/namespaces/{namespace}/configmaps")
    with pytest.raises(RuntimeError, match="a transform that fails"):
        lister.list(transform=fail_on_the_second)
    pool = api.rest_client.pool_manager.connection_from_url(api.configuration.host)
    assert opened[0].sock is None, "the half-read connection is still open"
    assert opened[0] not in list(pool.pool.queue), "the half-read connection went back to the pool"
    names = [item["metadata"]["name"] for item in lister.list()["items"]]
    assert len([name for name in names if name.startswith("cm-")]) == 40
    assert opened[1] in list(pool.pool.queue), "a list read to its end gives its connection back"
