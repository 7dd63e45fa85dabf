"""A large room on Kubernetes (deploy/zero-to-jupyterhub/): what can be checked without Helm,
a container engine or a kubelet.

* The values file loads into KubeSpawner's own configuration: ``hub.config`` (which the chart
  hands to traitlets as it is), ``hub.extraConfig`` (run with ``c``, as the chart runs it), and
  the ``singleuser`` settings it uses, translated here as the chart's ``jupyterhub_config.py``
  translates them (``kubespawner_config`` below; the course does not copy the chart's files,
  so this translation is ours, written from the chart's documentation and source at 4.4.0:
  https://github.com/jupyterhub/zero-to-jupyterhub-k8s/blob/4.4.0/jupyterhub/files/hub/jupyterhub_config.py).
  ``helm template`` with the chart checks the values against the chart's schema; the guide
  says to run it.
* The Pod KubeSpawner then renders for an attendee is created with a server-side dry run on the
  course's API server, in a namespace enforcing Pod Security ``restricted``.
* The pre_spawn_hook, run with the hub's ServiceAccount and exactly the rights ``prepare``
  gives it, makes that attendee's objects and nothing else; ``remove`` takes them away.
* The images' Containerfiles install the pinned packages and no cluster tooling.

Not run here: ``helm install`` and ``helm template`` (the chart's schema), building the
images, a kubelet running the Pods (kwok has none), a network plugin enforcing the
NetworkPolicies. docs/facilitator.md says how to check those.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
import types
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from helpers import kube, workshop_mode
from helpers.cluster import kubespawner_hook as hook
from helpers.cluster import workshop
from helpers.foo_crd import STATUS_FIELDS, foo_crd_additions, restore_foo_crd, restore_foo_status
from helpers.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy" / "zero-to-jupyterhub"


def helm_merge(base: Any, override: Any) -> Any:
    """Helm's merge of a values file over another: maps key by key, anything else replaced,
    and a null removes the key."""
    if not (isinstance(base, dict) and isinstance(override, dict)):
        return override
    merged = dict(base)
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = helm_merge(base.get(key), value) if key in base else value
    return merged


def course_values(*overrides: dict[str, Any]) -> dict[str, Any]:
    """values.yaml, then ``overrides`` (later ``-f`` files), merged as Helm merges them."""
    values = yaml.safe_load((DEPLOY / "values.yaml").read_text())
    for override in overrides:
        values = helm_merge(values, override)
    return values


HOME = "/home/jovyan"
"""The chart's default ``singleuser.storage.homeMountPath``."""


def kubespawner_config(values: dict[str, Any], namespace: str = "jhub") -> Any:
    """The traitlets configuration the hub gets from ``values``, for the keys values.yaml uses:
    ``hub.config`` as it is, the ``singleuser`` settings as the chart's jupyterhub_config.py
    turns them into ``c.KubeSpawner`` traits (image, command, URL, user and group, memory and
    CPU, a dynamic home volume, lifecycle hooks, and the privileged iptables init container
    ``cloudMetadata.blockWithIptables`` adds), then each ``hub.extraConfig`` snippet run with
    ``c``. A key values.yaml does not use is not translated: the test fails on an unknown one.
    The servers run in the hub's own namespace, the release's, as the chart sets it."""
    from traitlets.config import Config

    c = Config(json.loads(json.dumps(values.get("hub", {}).get("config", {}))))
    c.JupyterHub.spawner_class = "kubespawner.KubeSpawner"  # the chart's, always
    single = values.get("singleuser", {})
    known = {"image", "cmd", "defaultUrl", "uid", "fsGid", "memory", "cpu", "storage",
             "lifecycleHooks", "cloudMetadata", "networkPolicy"}  # fmt: skip
    assert set(single) <= known, f"translate these too: {sorted(set(single) - known)}"
    spawner = c.KubeSpawner
    spawner.namespace = namespace
    spawner.image = f"{single['image']['name']}:{single['image']['tag']}"
    spawner.cmd = single["cmd"]
    spawner.default_url = single["defaultUrl"]
    spawner.uid, spawner.fs_gid = single["uid"], single["fsGid"]
    spawner.mem_guarantee = single["memory"]["guarantee"]
    spawner.mem_limit = single["memory"]["limit"]
    spawner.cpu_guarantee, spawner.cpu_limit = single["cpu"]["guarantee"], single["cpu"]["limit"]
    if single["storage"]["type"] == "dynamic":
        spawner.pvc_name_template = "claim-{username}{servername}"
        spawner.storage_pvc_ensure = True
        spawner.storage_capacity = single["storage"]["capacity"]
        spawner.volumes = {"home": {"name": "home", "persistentVolumeClaim":
                                    {"claimName": "{pvc_name}"}}}  # fmt: skip
        spawner.volume_mounts = {"home": {"name": "home", "mountPath": HOME}}
    spawner.lifecycle_hooks = single.get("lifecycleHooks", {})
    if single.get("cloudMetadata", {}).get("blockWithIptables", True):  # the chart's default
        spawner.init_containers = [{
            "name": "block-cloud-metadata",
            "image": "quay.io/jupyterhub/k8s-network-tools:4.4.0",
            "command": ["iptables", "--append", "OUTPUT", "--protocol", "tcp",
                        "--destination", "169.254.169.254", "--destination-port", "80",
                        "--jump", "DROP"],
            "securityContext": {"runAsUser": 0, "privileged": True,
                                "capabilities": {"add": ["NET_ADMIN"]}},
        }]  # fmt: skip
    spawner.automount_service_account_token = False  # the chart's default for servers
    for snippet in values.get("hub", {}).get("extraConfig", {}).values():
        exec(compile(snippet, "hub.extraConfig", "exec"), {"c": c})
    return c


@dataclass
class User:
    """The part of JupyterHub's User that KubeSpawner reads to name and label the Pod."""

    name: str
    id: int = 7
    url: str = "/user/x/"
    server: Any = None
    orm_user: Any = None


@dataclass
class Hub:
    """The part of JupyterHub's Hub that KubeSpawner and Spawner.get_env read."""

    public_host: str = ""
    url: str = "http://hub:8081/hub/"
    base_url: str = "/hub/"
    api_url: str = "http://hub:8081/hub/api"


async def rendered_pod(config: Any, user: str, run_hook: Any = None) -> dict[str, Any]:
    """The Pod manifest KubeSpawner makes for ``user`` with ``config`` (its own
    get_pod_manifest), after ``run_hook(spawner)``; as the API server receives it."""
    from kubespawner import KubeSpawner

    spawner = KubeSpawner(config=config, user=User(user), hub=Hub(), _mock=True)
    if run_hook is not None:
        await run_hook(spawner)
    pod = await spawner.get_pod_manifest()
    return kubernetes.client.ApiClient().sanitize_for_serialization(pod)


def fake_kubeconfig(path: Path) -> Path:
    """For KubeSpawner's constructor, which loads a kubeconfig (and asks nothing with it)."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": {"server": "https://192.0.2.1:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }))  # fmt: skip
    return path


def test_the_values_load_into_kubespawner_s_own_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(fake_kubeconfig(tmp_path / "kubeconfig")))
    config = kubespawner_config(course_values())
    values = yaml.safe_load((DEPLOY / "values.yaml").read_text())
    assert config.KubeSpawner.pre_spawn_hook is hook.pre_spawn_hook  # from hub.extraConfig
    assert config.JupyterHub.spawner_class == "kubespawner.KubeSpawner"
    assert config.Authenticator.allow_all is False

    async def render() -> dict[str, Any]:
        return await rendered_pod(config, "alice")

    pod = asyncio.run(render())
    (container,) = pod["spec"]["containers"]
    image = values["singleuser"]["image"]
    assert container["image"] == f"{image['name']}:{image['tag']}"
    assert container["args"][0] == "jupyterhub-singleuser"
    assert container["securityContext"] == {
        "runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 100,
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }  # fmt: skip
    assert pod["spec"]["securityContext"]["fsGroup"] == 100
    assert "initContainers" not in pod["spec"]  # no iptables container (cloudMetadata)
    assert container["resources"]["limits"]["memory"] == 2 * 1024**3  # JupyterHub: G is GiB
    assert pod["spec"]["automountServiceAccountToken"] is False
    claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"]]
    assert claims == ["claim-alice"]  # the attendee's home


def test_the_hook_mounts_the_kubeconfig_without_changing_the_shared_configuration() -> None:
    shared_volumes = {"home": {"name": "home"}}
    shared_mounts = [{"name": "home", "mountPath": "/home/jovyan"}]
    spawner = types.SimpleNamespace(volumes=shared_volumes, volume_mounts=shared_mounts,
                                    environment={"A": "1"})  # fmt: skip
    for _ in range(2):  # a second start of the same server adds nothing
        hook.mount(spawner, "alice")
    assert shared_volumes == {"home": {"name": "home"}} and len(shared_mounts) == 1
    assert spawner.volumes[hook.VOLUME]["secret"]["secretName"] == "cfs-kubeconfig-alice"
    assert [m["name"] for m in spawner.volume_mounts] == ["home", hook.VOLUME]
    assert spawner.environment == {"A": "1", "KUBECONFIG": "/etc/cfs-workshop/config"}
    for bad in ("Alice", "a.b@example.org", "x" * 41):
        with pytest.raises(workshop.CourseError, match="cannot be an attendee's name"):
            hook.attendee_name(bad)
    assert hook.attendee_name("x" * 40) == "x" * 40


def instructions(path: Path) -> list[tuple[str, str]]:
    """A Containerfile's instructions, continuation lines joined, comments left out."""
    text = re.sub(r"\\\n", " ", path.read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def copied(steps: list[tuple[str, str]]) -> list[str]:
    return [source for kind, rest in steps if kind == "COPY" for source in rest.split()[:-1]]


def requirement_pins() -> dict[str, str]:
    from tests.pins import pip_pins

    return pip_pins()


def installed_by(steps: list[tuple[str, str]]) -> dict[str, str]:
    """The pins the image installs: requirements.txt as copied in, through its own grep if any."""
    (copy,) = [rest.split() for kind, rest in steps if kind == "COPY" and "requirements" in rest]
    assert copy[0] == "requirements.txt", copy
    (command,) = [rest for kind, rest in steps if kind == "RUN" and "pip install" in rest]
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    if match := re.search(r"grep -E '([^']+)' " + re.escape(copy[1]) + r" > (\S+)", command):
        lines, installed_from = [line for line in lines if re.search(match[1], line)], match[2]
    else:
        installed_from = copy[1]
    assert f"pip install --requirement {installed_from}" in command, command
    return {n.lower(): v for n, v in (line.split("==") for line in lines if "==" in line)}


def test_the_servers_image_has_the_course_and_its_pins_and_no_cluster_tooling() -> None:
    steps = instructions(DEPLOY / "Containerfile")
    assert steps[0][0] == "FROM" and re.fullmatch(r"\S+:3\.11-slim-trixie", steps[0][1])
    assert installed_by(steps) == requirement_pins()  # every pin, as `make setup` installs them
    for source in copied(steps):
        assert (ROOT / source).exists(), source
    assert {"helpers/", "notebooks/", "manifests/"} <= set(copied(steps))
    assert not {"cluster/", "benchmarks/", "tests/", "."} & set(copied(steps))
    text = " ".join(rest for kind, rest in steps if kind != "FROM").lower()
    for tool in ("kubectl", "kind", "golang", "go install", "helm", "docker", "kwok", "curl"):
        assert not re.search(rf"\b{tool}\b", text), f"the server image installs {tool}"
    apt = [rest for kind, rest in steps if kind == "RUN" and "apt-get install" in rest]
    assert len(apt) == 1 and "--no-install-recommends tini " in apt[0]  # tini, nothing else
    assert ("USER", "1000:100") in steps and steps[-1] == ("CMD", '["jupyterhub-singleuser"]')


def test_the_hubs_image_is_the_charts_with_the_course_client() -> None:
    steps = instructions(DEPLOY / "hub.Containerfile")
    assert steps[0] == ("FROM", f"quay.io/jupyterhub/k8s-hub:{hook.CHART_VERSION}")
    assert installed_by(steps) == {"kubernetes": requirement_pins()["kubernetes"]}
    for source in copied(steps):
        assert (ROOT / source).exists(), source
    assert steps[-1] == ("USER", "1000")  # the chart's hub user again
    # The hub image runs the KubeSpawner and JupyterHub these tests load.
    assert requirement_pins()["jupyterhub-kubespawner"] == "7.0.0"
    assert requirement_pins()["jupyterhub"] == "5.5.0"


# ---- on the course's API server ----------------------------------------------------------


@dataclass
class HubOnCluster:
    """A stand-in for the hub on the course's cluster: its namespace (Pod Security
    ``restricted``), its ServiceAccount's client with what ``prepare`` grants, the admin."""

    namespace: str
    admin: kubernetes.client.ApiClient
    client: kubernetes.client.ApiClient
    egress: dict[str, Any] = field(default_factory=dict)
    """The values `prepare` returned (api-server-egress.yaml)."""
    attendees: list[str] = field(default_factory=list)

    def hook(self) -> hook.Hook:
        # The course's API server is at 127.0.0.1: written into the kubeconfig for the test.
        return hook.Hook(server=self.admin.configuration.host, allow_loopback=True,
                         token_hours=1, connect=lambda: self.client)  # fmt: skip

    def new_attendee(self) -> str:
        name = f"tz-{uuid.uuid4().hex[:5]}"
        self.attendees.append(name)
        return name


def token_client(admin: kubernetes.client.ApiClient, token: str) -> kubernetes.client.ApiClient:
    configuration = kubernetes.client.Configuration()
    configuration.host = admin.configuration.host
    configuration.ssl_ca_cert = admin.configuration.ssl_ca_cert
    configuration.verify_ssl = admin.configuration.verify_ssl
    configuration.api_key = {"authorization": f"Bearer {token}"}
    return kubernetes.client.ApiClient(configuration)


def foo_status_extended(api: kubernetes.client.ApiClient) -> bool:
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    crd = extensions.read_custom_resource_definition("foos.samplecontroller.k8s.io")
    status = crd.spec.versions[0].schema.open_apiv3_schema.properties["status"]
    return set(STATUS_FIELDS) <= set(status.properties or {})


@pytest.fixture(scope="module")
def hub_on_cluster() -> Iterator[HubOnCluster]:
    admin = kube.connect()
    core = kubernetes.client.CoreV1Api(admin)
    namespace = f"cfs-test-hub-{uuid.uuid4().hex[:5]}"
    restricted = {f"pod-security.kubernetes.io/{mode}": "restricted"
                  for mode in ("enforce", "warn", "audit")}  # fmt: skip
    core.create_namespace(
        {"metadata": {"name": namespace, "labels": {"course-test": "true", **restricted}}}
    )
    was_extended, had_10 = foo_status_extended(admin), foo_crd_additions(admin)
    made = HubOnCluster(namespace, admin, admin)
    try:
        # What the facilitator runs once: `python -m helpers.cluster.kubespawner_hook prepare`.
        values = Path(tempfile.mkdtemp(prefix=f"{namespace}-")) / "api-server-egress.yaml"
        assert hook.main(["--namespace", namespace, "prepare", "--egress-out", str(values)]) == 0
        egress = yaml.safe_load(values.read_text())
        core.create_namespaced_service_account(namespace, {"metadata": {"name": "hub"}})
        token = core.create_namespaced_service_account_token(
            "hub", namespace, {"spec": {"expirationSeconds": 3600}}
        ).status.token
        made.client = token_client(admin, token)
        made.egress = egress
        yield made
    finally:
        for name in made.attendees:
            hook.remove(admin, namespace, name)
        hook.remove_hub(admin, namespace)
        core.delete_namespace(namespace)
        if not was_extended:
            restore_foo_status(admin)  # as the cluster was: the chapters' outputs show the schema
        if not had_10:
            restore_foo_crd(admin)  # `prepare` installs chapter 10's fields and rule too


KINDS_THE_HUB_WRITES = [
    ("v1", "Namespace"), ("v1", "ResourceQuota"), ("v1", "LimitRange"), ("v1", "ServiceAccount"),
    ("v1", "Secret"), ("networking.k8s.io/v1", "NetworkPolicy"),
    ("rbac.authorization.k8s.io/v1", "Role"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
]  # fmt: skip


def written_by_the_workshop(api: kubernetes.client.ApiClient, attendee: str) -> set[tuple]:
    """Every object of a kind the hub may write that the workshop's field manager wrote,
    unless it belongs to another attendee or is a hub's rights (other test runs share the
    cluster)."""
    dynamic = kubernetes.dynamic.DynamicClient(api)
    found = set()
    for api_version, kind in KINDS_THE_HUB_WRITES:
        for item in dynamic.resources.get(api_version=api_version, kind=kind).get().items:
            labels = item.metadata.labels or {}
            owner = labels.get(workshop_mode.ATTENDEE_LABEL)
            managers = {entry.manager for entry in item.metadata.managedFields or []}
            # A hub's own rights are the facilitator's (`prepare`), never the hook's.
            hubs = hook.HUB_LABEL in labels
            if hook.FIELD_MANAGER in managers and owner in (None, attendee) and not hubs:
                found.add((kind, item.metadata.namespace or "", item.metadata.name))
    return found


def labelled(api: kubernetes.client.ApiClient, attendee: str) -> set[tuple]:
    dynamic = kubernetes.dynamic.DynamicClient(api)
    selector = f"{workshop_mode.ATTENDEE_LABEL}={attendee}"
    return {
        (kind, item.metadata.namespace or "", item.metadata.name)
        for api_version, kind in KINDS_THE_HUB_WRITES
        for item in dynamic.resources.get(api_version=api_version, kind=kind)
        .get(label_selector=selector)
        .items
    }


def expected_objects(attendee: str, servers: str) -> set[tuple]:
    (person,) = workshop.attendees_for([attendee])
    binding = f"cfs-workshop-{attendee}"
    made = {
        ("ServiceAccount", workshop_mode.FACILITATOR_NAMESPACE, f"attendee-{attendee}"),
        ("ClusterRoleBinding", "", binding),
        ("RoleBinding", "kube-system", binding),
        ("Secret", servers, hook.secret_name(attendee)),
    }
    for namespace in person.namespaces:
        made |= {("Namespace", "", namespace), ("ResourceQuota", namespace, workshop.QUOTA_NAME),
                 ("LimitRange", namespace, workshop.QUOTA_NAME),
                 ("NetworkPolicy", namespace, workshop.NETWORK_POLICY),
                 ("Role", namespace, workshop.ROLE),
                 ("RoleBinding", namespace, workshop.ROLE)}  # fmt: skip
    return made


@pytest.mark.cluster
def test_the_hook_makes_exactly_that_attendees_objects_and_remove_takes_them_away(
    hub_on_cluster: HubOnCluster,
) -> None:
    hub = hub_on_cluster
    name = hub.new_attendee()
    before = written_by_the_workshop(hub.admin, name)
    spawner = types.SimpleNamespace(user=User(name), namespace=hub.namespace, volumes={},
                                    volume_mounts={}, environment={})  # fmt: skip
    asyncio.run(hub.hook()(spawner))  # as the hub's ServiceAccount, with only its rights
    made = written_by_the_workshop(hub.admin, name) - before
    expected = expected_objects(name, hub.namespace)
    assert made == expected, (sorted(made - expected), sorted(expected - made))
    assert labelled(hub.admin, name) == expected  # each carries the attendee's label
    assert len(expected) == 4 + 6 * len(workshop.chapter_namespaces())
    asyncio.run(hub.hook()(spawner))  # the server started again: the same objects, a new token
    assert labelled(hub.admin, name) == expected
    assert spawner.environment == {"KUBECONFIG": hook.KUBECONFIG_PATH}
    assert list(spawner.volumes) == [hook.VOLUME]

    # The mounted kubeconfig is the attendee's: the API server says who it is, attendee mode
    # takes it, and it reaches their namespaces only.
    secret = kubernetes.client.CoreV1Api(hub.admin).read_namespaced_secret(
        hook.secret_name(name), hub.namespace
    )
    import base64

    kubeconfig = yaml.safe_load(base64.b64decode(secret.data["config"]))
    assert kubeconfig["contexts"][0]["context"]["namespace"] == f"{name}-ch00-api-tour"
    mine = kube.connect(kubeconfig_file(kubeconfig, hub.namespace))
    workshop_mode.verify(mine, name, f"{name}-ch00-api-tour")  # SelfSubjectReview + label
    with pytest.raises(ApiException) as refused:
        kubernetes.client.CoreV1Api(mine).list_namespaced_secret(hub.namespace)
    assert refused.value.status == 403  # not the other attendees' kubeconfigs

    removed = hook.remove(hub.client, hub.namespace, name)  # the hub's rights suffice
    assert f"Secret {hub.namespace}/{hook.secret_name(name)}" in removed
    left = labelled(hub.admin, name)
    assert {kind for kind, _, _ in left} <= {"Namespace", "ResourceQuota", "LimitRange",
                                             "NetworkPolicy", "Role", "RoleBinding"}  # fmt: skip
    core = kubernetes.client.CoreV1Api(hub.admin)
    for kind, namespace, object_name in left:  # what is left goes with its namespace
        namespace = object_name if kind == "Namespace" else namespace
        try:
            assert core.read_namespace(namespace).metadata.deletion_timestamp, namespace
        except ApiException as exc:
            assert exc.status == 404


def kubeconfig_file(kubeconfig: dict[str, Any], tag: str) -> Path:
    from helpers.private_files import write_private

    path = Path(tempfile.mkdtemp(prefix=f"{tag}-")) / "kubeconfig"
    write_private(path, yaml.safe_dump(kubeconfig))
    return path


@pytest.mark.cluster
def test_the_hubs_rights_make_attendees_and_nothing_else(hub_on_cluster: HubOnCluster) -> None:
    """What `escalate` and `bind` would allow and the fence refuses; what RBAC refuses."""
    hub = hub_on_cluster
    rbac = kubernetes.client.RbacAuthorizationV1Api(hub.client)
    core = kubernetes.client.CoreV1Api(hub.client)
    rules = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    hub_subject = [{"kind": "ServiceAccount", "name": "hub", "namespace": hub.namespace}]
    attempts = {
        "a Role in kube-system": lambda: rbac.create_namespaced_role("kube-system", {
            "metadata": {"name": workshop.ROLE}, "rules": rules}, dry_run="All"),
        "a namespace of no attendee": lambda: core.create_namespace({
            "metadata": {"name": f"x-{hub.namespace}"}}, dry_run="All"),
        "a namespace labelled for another name": lambda: core.create_namespace({
            "metadata": {"name": f"x-{hub.namespace}",
                         "labels": {workshop_mode.ATTENDEE_LABEL: "alice"}}}, dry_run="All"),
        "bind itself in kube-system": lambda: rbac.create_namespaced_role_binding("kube-system", {
            "metadata": {"name": "x"}, "subjects": hub_subject,
            "roleRef": workshop._ref("Role", workshop.LEASE_ROLE)}, dry_run="All"),
        "bind itself cluster-wide": lambda: rbac.create_cluster_role_binding({
            "metadata": {"name": f"x-{hub.namespace}"}, "subjects": hub_subject,
            "roleRef": workshop._ref("ClusterRole", workshop.CLUSTER_ROLE)}, dry_run="All"),
    }  # fmt: skip
    for what, attempt in attempts.items():
        with pytest.raises(ApiException) as refused:
            attempt()
        assert refused.value.status in (403, 422), what
        assert hook.hub_name(hub.namespace) in json.loads(refused.value.body)["message"], what
    # What its RBAC never granted (a SubjectAccessReview for the hub's user, asked as admin).
    authorization = kubernetes.client.AuthorizationV1Api(hub.admin)
    user = f"system:serviceaccount:{hub.namespace}:hub"
    for verb, resource, group, namespace in [
        ("get", "secrets", "", "kube-system"), ("create", "pods", "", "kube-system"),
        ("create", "clusterroles", "rbac.authorization.k8s.io", ""),
        ("create", "configmaps", "", "default"), ("update", "customresourcedefinitions",
                                                  "apiextensions.k8s.io", ""),
        ("create", "serviceaccounts/token", "", "kube-system"),
    ]:  # fmt: skip
        review = authorization.create_subject_access_review({"spec": {"user": user,
            "resourceAttributes": {"verb": verb, "resource": resource.split("/")[0],
                                   "subresource": [*resource.split("/"), ""][1],
                                   "group": group, "namespace": namespace}}})  # fmt: skip
        assert not review.status.allowed, (verb, resource, namespace)


def default_service_account(core: kubernetes.client.CoreV1Api, namespace: str) -> None:
    """Wait for it: a Pod (even a dry run's) is admitted only once it exists."""
    wait_for(core.list_namespaced_service_account, lambda found: "default" in found,
             what=f"the ServiceAccount default in {namespace}", timeout=30,
             namespace=namespace)  # fmt: skip


def dry_run(api: kubernetes.client.ApiClient, namespace: str, pod: dict) -> tuple[int, str]:
    pod = {**pod, "metadata": {**pod["metadata"], "namespace": namespace}}
    try:
        kubernetes.client.CoreV1Api(api).create_namespaced_pod(namespace, pod, dry_run="All")
    except ApiException as exc:
        return exc.status, json.loads(exc.body)["message"]
    return 201, ""


@pytest.mark.cluster
def test_the_pod_kubespawner_renders_passes_pod_security_restricted(
    hub_on_cluster: HubOnCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The servers' namespace (the hub's) enforces ``restricted``; the chart's defaults would
    not pass even ``baseline`` (an iptables init container, privileged). An attendee's own
    namespace (``baseline``, for the chapters' Pods) refuses a server by its LimitRange."""
    hub = hub_on_cluster
    name = hub.new_attendee()
    config = kubespawner_config(course_values(), hub.namespace)

    async def render(config: Any, run_hook: Any = None) -> dict[str, Any]:
        return await rendered_pod(config, name, run_hook)

    pod = asyncio.run(render(config, hub.hook()))  # the hook's mount included
    assert {"name": hook.VOLUME, "mountPath": hook.KUBECONFIG_DIR, "readOnly": True} in (
        pod["spec"]["containers"][0]["volumeMounts"]
    )
    assert {"name": "KUBECONFIG", "value": hook.KUBECONFIG_PATH} in pod["spec"]["containers"][0][
        "env"
    ]
    core = kubernetes.client.CoreV1Api(hub.admin)
    labels = core.read_namespace(hub.namespace).metadata.labels
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    default_service_account(core, hub.namespace)
    assert dry_run(hub.admin, hub.namespace, pod) == (201, "")
    # Not in the attendee's own namespaces: sized for the chapters' Pods, not for JupyterLab.
    status, message = dry_run(hub.admin, f"{name}-ch00-api-tour", pod)
    assert status == 403 and "maximum memory usage per Container is 512Mi" in message, message

    # The chart's defaults for what values.yaml changes (its iptables init container, and no
    # security context of ours): refused, by baseline already.
    chart_defaults = {"singleuser": {"cloudMetadata": {"blockWithIptables": True}},
                      "hub": {"config": {"KubeSpawner": None}}}  # fmt: skip
    config = kubespawner_config(course_values(chart_defaults), hub.namespace)
    status, message = dry_run(hub.admin, hub.namespace, asyncio.run(render(config)))
    assert status == 403 and 'violates PodSecurity "restricted:' in message, message
    assert "privileged" in message and "block-cloud-metadata" in message
    baseline = f"{hub.namespace}-baseline"
    labels = {"course-test": "true", "pod-security.kubernetes.io/enforce": "baseline"}
    core.create_namespace({"metadata": {"name": baseline, "labels": labels}})
    try:
        default_service_account(core, baseline)
        status, message = dry_run(hub.admin, baseline, asyncio.run(render(config)))
        assert status == 403 and 'violates PodSecurity "baseline:' in message, message
        assert dry_run(hub.admin, baseline, pod) == (201, "")  # ours passes baseline too
    finally:
        core.delete_namespace(baseline)


@pytest.mark.cluster
def test_the_egress_values_let_the_servers_reach_this_api_server(
    hub_on_cluster: HubOnCluster,
) -> None:
    hub = hub_on_cluster
    egress = hub.egress
    rules = egress["singleuser"]["networkPolicy"]["egress"]
    core = kubernetes.client.CoreV1Api(hub.admin)
    service = core.read_namespaced_service("kubernetes", "default")
    allowed = {(rule["to"][0]["ipBlock"]["cidr"], rule["ports"][0]["port"]) for rule in rules}
    assert (f"{service.spec.cluster_ip}/32", 443) in allowed
    for ip, port in workshop.facts_of(hub.admin).api_server:
        assert (f"{ip}/32", port) in allowed
    assert course_values(egress)["singleuser"]["networkPolicy"]["egress"] == rules
    # As the chart's template puts them into the servers' NetworkPolicy: the API server takes it.
    policy = {"metadata": {"name": "singleuser"}, "spec": {
        "podSelector": {"matchLabels": {"component": "singleuser-server"}},
        "policyTypes": ["Ingress", "Egress"], "egress": rules}}  # fmt: skip
    networking = kubernetes.client.NetworkingV1Api(hub.admin)
    networking.create_namespaced_network_policy(hub.namespace, policy, dry_run="All")
