"""helpers.foo_crd: chapter 10's additions to the Foo CRD go in and come out again, leaving
alone what somebody else added (chapter 06b's status fields, say). Changes the CRD, which is
cluster-wide: as it was afterwards."""

from __future__ import annotations

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from helpers.controller import foo_body
from helpers.foo_crd import FIELDS, extend_foo_crd, foo_crd_additions, restore_foo_crd
from helpers.reconcile import extend_foo_status, restore_foo_status, status_is_extended

pytestmark = pytest.mark.cluster


def test_extend_and_restore_touch_only_chapter_10s_own(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    had_10, had_06 = foo_crd_additions(api), status_is_extended(api)
    try:
        restore_foo_crd(api, namespace)
        extend_foo_status(api, namespace)  # chapter 06b's observedGeneration comes first
        extend_foo_crd(api, namespace, name_rule=True)
        extend_foo_crd(api, namespace, name_rule=True)  # again: nothing more
        assert foo_crd_additions(api) == [*FIELDS, "rule"]
        custom = kubernetes.client.CustomObjectsApi(api)
        with pytest.raises(ApiException) as refused:
            custom.create_namespaced_custom_object(
                "samplecontroller.k8s.io", "v1alpha1", namespace, "foos",
                foo_body("n" * 64, "x"), dry_run="All")  # fmt: skip
        assert refused.value.status == 422 and "at most 63 characters" in refused.value.body
        restore_foo_crd(api, namespace)
        assert foo_crd_additions(api) == ["status.observedGeneration"]  # chapter 06b's stays
        assert status_is_extended(api)
        custom.create_namespaced_custom_object(
            "samplecontroller.k8s.io", "v1alpha1", namespace, "foos",
            foo_body("n" * 64, "x"), dry_run="All")  # fmt: skip
    finally:
        restore_foo_crd(api, namespace)
        if not had_06:
            restore_foo_status(api, namespace)
        if {"spec.configMapRef", "status.conditions"} <= set(had_10):
            extend_foo_crd(api, namespace, name_rule="rule" in had_10)
