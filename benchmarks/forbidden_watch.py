"""Watch attempts per second when a service account may list but not watch.

Ours and the official client's SharedInformer, side by side, on the same
cluster with the same service account. Not a test: the result is recorded in
benchmarks/RESULTS.md. Needs the course's cluster (``make up``).

Run: .venv/bin/python -m benchmarks.forbidden_watch [--seconds 20]
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import time

import kubernetes
from kubernetes.informer import SharedInformer as OfficialInformer

from benchmarks.guard import refuse_clusters_not_the_courses
from helpers import kube, namespaces
from helpers.informer import SharedInformer, wait_for_cache_sync
from helpers.listwatch import ListWatch
from helpers.rbac import service_account_client

NAMESPACE = "bench-forbidden"
LIST_ONLY = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]


def ours(client: kubernetes.client.ApiClient, seconds: float) -> dict[str, object]:
    informer = SharedInformer(
        ListWatch(client, f"/api/v1/namespaces/{NAMESPACE}/configmaps"), name="forbidden"
    )
    informer.start()
    assert wait_for_cache_sync(informer, timeout=30)
    started = time.monotonic()
    threading.Event().wait(seconds)
    attempts = informer.reflector.watches
    elapsed = time.monotonic() - started
    message = informer.reflector.last_error_message
    informer.stop()
    informer.join(10)
    return {"impl": "ours", "watch_attempts": attempts, "seconds": round(elapsed, 1),
            "per_second": round(attempts / elapsed, 2), "message": message}  # fmt: skip


def official(client: kubernetes.client.ApiClient, seconds: float) -> dict[str, object]:
    errors: list[str] = []
    informer = OfficialInformer(
        kubernetes.client.CoreV1Api(client).list_namespaced_config_map, namespace=NAMESPACE
    )
    informer.add_event_handler("ERROR", lambda exc: errors.append(str(exc).splitlines()[0]))
    logging.getLogger("kubernetes.informer").setLevel(logging.CRITICAL)  # it logs every attempt
    started = time.monotonic()
    informer.start()
    threading.Event().wait(seconds)
    informer.stop()
    elapsed = time.monotonic() - started
    return {"impl": "official", "watch_attempts": len(errors), "seconds": round(elapsed, 1),
            "per_second": round(len(errors) / elapsed, 2),
            "message": errors[-1] if errors else None}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--official-seconds", type=float, default=5.0,
                        help="shorter: the official informer retries without pause")  # fmt: skip
    args = parser.parse_args()
    refuse_clusters_not_the_courses()  # before the first request
    api = kube.connect()
    namespaces.fresh_namespace(api, NAMESPACE)
    client = service_account_client(api, NAMESPACE, "list-only", LIST_ONLY)
    results = [ours(client, args.seconds), official(client, args.official_seconds)]
    namespaces.delete_namespace(api, NAMESPACE)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
