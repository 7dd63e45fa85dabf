"""A tiny etcd client, to look underneath the API server.

Everything the API server stores lives in etcd under ``/registry/...``, and an
object's ``resourceVersion`` is the etcd revision at which it last changed.
etcd serves a JSON gateway to its gRPC API over HTTP, so a few lines of
``urllib`` are enough to read a key, learn the current revision, or compact
old revisions away (which is how chapter 01 makes a watch's resourceVersion
expire for real, and the API server answer 410 Gone).

Only the local control plane exposes etcd on 127.0.0.1; kind keeps it inside
the node container.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EtcdValue:
    key: str
    value: bytes
    mod_revision: int
    create_revision: int


@dataclass(frozen=True)
class EtcdClient:
    """Talks to one etcd endpoint, e.g. ``http://127.0.0.1:2379``."""

    url: str
    timeout: float = 5.0

    def _call(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.url}/v3/{method}", data=json.dumps(body).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            return json.load(response)

    def get(self, key: str) -> EtcdValue | None:
        """The value stored at ``key``, or None."""
        reply = self._call("kv/range", {"key": _b64(key)})
        for kv in reply.get("kvs", []):
            return EtcdValue(
                key=key,
                value=base64.b64decode(kv.get("value", "")),
                mod_revision=int(kv["mod_revision"]),
                create_revision=int(kv["create_revision"]),
            )
        return None

    def revision(self) -> int:
        """etcd's current revision: the newest resourceVersion anywhere in the cluster."""
        reply = self._call("kv/range", {"key": _b64("/registry/"), "limit": 1})
        return int(reply["header"]["revision"])

    def compact(self, revision: int) -> None:
        """Forget every revision older than ``revision``; watches from before it get 410."""
        self._call("kv/compaction", {"revision": revision, "physical": True})


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()
