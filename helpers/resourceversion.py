"""Which of two resourceVersions is newer: apimachinery's ``resourceversion`` package.

Since Kubernetes 1.35 (KEP-5504) the resourceVersions of one resource may be
compared: :func:`compare_resource_versions` says whether a cache's copy is older
than what a write returned (chapter 06b's consistency check), instead of only
"the same or not".
"""

from __future__ import annotations


def compare_resource_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as resourceVersion ``a`` is older than, the same as, or newer than ``b``.

    apimachinery ``resourceversion.CompareResourceVersion``
    (https://github.com/kubernetes/apimachinery/blob/v0.36.3/pkg/util/resourceversion/resourceversion.go#L45-L66):
    since Kubernetes 1.35 (KEP-5504) the versions of objects of one resource
    are decimal integers without leading zeros, so the shorter is older and
    equal lengths compare digit by digit. Anything else raises ``ValueError``,
    as upstream returns an error (zero is not well formed either).
    """
    for version in (a, b):
        if not version.isdigit() or version.startswith("0"):
            raise ValueError(f"resource version is not well formed: {version!r}")
    if len(a) != len(b):
        return -1 if len(a) < len(b) else 1
    return (a > b) - (a < b)
