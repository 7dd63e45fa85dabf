"""Solutions to chapter 00's exercises. Try them yourself first!"""

from __future__ import annotations

# A PATCH that changes nothing is not written to etcd, so the version stays; a label is part
# of the stored object, so a label-only PATCH is a write like any other and gets a new one.
answer_1 = (False, True)

# (a) A subresource is one more segment after the object's path; (b) a CRD is cluster-scoped
# (no /namespaces/...), in the named group apiextensions.k8s.io at version v1.
answer_2 = (
    "/apis/apps/v1/namespaces/shop/deployments/web/scale",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/foos.samplecontroller.k8s.io",
)


def path_for(
    api_version: str, resource: str, namespace: str | None = None, name: str | None = None
) -> str:
    """The REST path of a collection or an object, as the client builds it."""
    root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    path = root + (f"/namespaces/{namespace}" if namespace else "") + f"/{resource}"
    return path + (f"/{name}" if name else "")
