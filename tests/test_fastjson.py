"""helpers.fastjson (orjson) gives the informer the same objects as the standard library.

The swap is only worth having if nothing downstream can tell: every LIST and
watch event must decode to equal dicts, transforms must see the same items,
and what orjson refuses must still decode (or fail) as the standard library
does. The last test reads a real LIST and watch from the cluster both ways.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from helpers import decode, fastjson, listwatch
from helpers.informer import strip_managed_fields
from helpers.listwatch import ListWatch


def config_map(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"cm-{i}", "namespace": "ns", "resourceVersion": str(1000 + i),
            "labels": {"app": "bench", "ünïcode": "✓"},
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:data": {}}}],
        },
        "data": {"text": 'quotes " and \\ backslashes\n', "emoji": "🦀", "empty": ""},
        "binaryData": None,
        "numbers": [0, -1, 2**63 - 1, 1.5, 1e-7, True, False],
    }  # fmt: skip


def list_body(items: list[dict[str, Any]], indent: int | None = None) -> bytes:
    metadata = {"resourceVersion": "42", "continue": "abc"}
    document = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": metadata, "items": items}
    return json.dumps(document, indent=indent, ensure_ascii=False).encode()


@pytest.fixture
def swapped() -> Iterator[None]:
    fastjson.install()
    try:
        yield
    finally:
        fastjson.uninstall()


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("transform", [None, strip_managed_fields])
def test_a_list_decodes_to_the_same_objects(indent: int | None, transform: Any) -> None:
    body = list_body([config_map(i) for i in range(50)], indent)
    standard = decode.decode_list(body, transform)
    fast = fastjson.decode_list(body, transform)
    assert fast == standard
    assert len(fast["items"]) == 50
    assert ("managedFields" in fast["items"][0]["metadata"]) is (transform is None)


def test_an_empty_list_and_a_list_without_items_decode_alike() -> None:
    for body in (list_body([]), b'{"kind": "Status", "code": 410}', b"[1, 2]"):
        assert fastjson.decode_list(body) == decode.decode_list(body)


def test_what_orjson_refuses_is_decoded_by_the_standard_library() -> None:
    surrogate = b'{"s": "\\ud800"}'  # a lone surrogate: orjson refuses it
    assert fastjson.loads(surrogate) == json.loads(surrogate)
    with pytest.raises(json.JSONDecodeError) as raised:
        fastjson.loads(b'{"broken": ')
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(b'{"broken": ')
    assert str(raised.value) == str(expected.value)


def test_integers_agree_across_the_64_bit_range_and_differ_only_beyond_it() -> None:
    body = json.dumps({"n": [-(2**63), 2**63 - 1, 2**64 - 1, 0, -0.0, 1e308]}).encode()
    assert fastjson.loads(body) == json.loads(body)
    # The documented limit: beyond 64 bits orjson gives a float. The API server
    # never sends such an integer (it holds numbers as int64 or float64 itself).
    beyond = b'{"n": 123456789012345678901234567890}'
    assert json.loads(beyond)["n"] == 123456789012345678901234567890
    assert isinstance(fastjson.loads(beyond)["n"], float)


def test_install_swaps_listwatch_and_uninstall_restores_it() -> None:
    standard = listwatch.decode_list
    assert standard is decode.decode_list  # the list and watch decodes with the decoder's own
    fastjson.install()
    try:
        assert fastjson.installed()
        assert listwatch.decode_list is fastjson.decode_list
        assert listwatch.json.loads is fastjson.loads
        assert listwatch.json.dumps is json.dumps  # only decoding changes
    finally:
        fastjson.uninstall()
    assert not fastjson.installed()
    assert listwatch.decode_list is standard and listwatch.json is json


def read_list_and_events(
    api: kubernetes.client.ApiClient, namespace: str, since: str
) -> tuple[list[Any], list[Any]]:
    """Our ConfigMaps (managedFields stripped) as listed, and the 5 events that made them.

    kube-root-ca.crt is left out: the controller manager adds it to a new
    namespace whenever it gets there, so one read may see it and the next not.
    """
    lister = ListWatch(api, f"/api/v1/namespaces/{namespace}/configmaps")
    listed = lister.list(transform=strip_managed_fields)["items"]
    ours = [item for item in listed if item["metadata"]["name"].startswith("cm-")]
    events = []
    stream = lister.watch(resource_version=since, timeout_seconds=5, allow_bookmarks=False)
    try:
        for event in stream:
            if event["object"]["metadata"]["name"].startswith("cm-"):
                events.append(event)
            if len(events) == 5:
                break
    finally:
        stream.close()
    return ours, events


def test_a_real_list_and_watch_decode_alike(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    since = ListWatch(api, f"/api/v1/namespaces/{namespace}/configmaps").list()["metadata"][
        "resourceVersion"
    ]
    core = kubernetes.client.CoreV1Api(api)
    for i in range(5):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"cm-{i}"},
                                                      "data": {"k": "✓" * i}})  # fmt: skip
    standard = read_list_and_events(api, namespace, since)
    fastjson.install()
    try:
        fast = read_list_and_events(api, namespace, since)
    finally:
        fastjson.uninstall()
    assert fast == standard
    assert len(fast[0]) == 5 and len(fast[1]) == 5
