"""``describe()`` takes the backend from what ``up`` recorded, not from a context's name.

Anyone may call a context ``kwok-something`` (say, a colleague's kwok cluster
that a learner points the course at with ``--backend existing``), and a course
cluster's context may be renamed. ``up`` writes ``state.json`` beside the
kubeconfig it writes; that record decides, and with it whether the chapters may
reach etcd directly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers.cluster.info import describe
from helpers.etcd import EtcdClient


def course_files(root: Path, name: str, context: str, state: dict[str, str] | None) -> Path:
    """``<root>/clusters/<name>/kubeconfig`` (and state.json) as ``up`` writes them."""
    folder = root / "clusters" / name
    folder.mkdir(parents=True)
    kubeconfig = folder / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "current-context": context,
                "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    if state is not None:
        (folder / "state.json").write_text(json.dumps(state))
    return kubeconfig


def kwokctl_saved(root: Path, name: str, etcd_port: int) -> None:
    """The part of kwokctl's kwok.yaml that says where etcd listens."""
    folder = root / "kwok" / "clusters" / name
    folder.mkdir(parents=True)
    document = {"kind": "KwokctlConfiguration", "options": {"etcdPort": etcd_port}}
    (folder / "kwok.yaml").write_text(yaml.safe_dump(document))


def test_a_renamed_context_of_a_local_cluster_is_still_local(tmp_path: Path) -> None:
    kubeconfig = course_files(
        tmp_path, "mine", "my-laptop", {"backend": "local", "context": "my-laptop"}
    )
    kwokctl_saved(tmp_path, "mine", 40123)

    info = describe(kubeconfig)

    assert info.backend == "local"
    assert info.etcd_url == "http://127.0.0.1:40123"


def test_a_secured_etcd_is_described_with_the_certificate_the_api_server_shows_it(
    tmp_path: Path,
) -> None:
    """etcd on HTTPS, as `up` starts it now: the URL says https, and ``EtcdClient(url)`` finds
    the CA, certificate and key kube-apiserver is given for it (the chapters pass only the URL)."""
    from helpers import etcd

    kubeconfig = course_files(tmp_path, "mine", "kwok-mine", {"backend": "local"})
    folder = tmp_path / "kwok" / "clusters" / "mine"
    folder.mkdir(parents=True)
    pki = folder / "pki"
    document = {"kind": "KwokctlConfiguration", "options": {"etcdPort": 40123}, "components": [
        {"name": "etcd", "args": ["--advertise-client-urls=http://127.0.0.1:40123",
                                  "--advertise-client-urls=https://127.0.0.1:40123",
                                  "--client-cert-auth=true"]},
        {"name": "kube-apiserver", "args": [f"--etcd-cafile={pki}/ca.crt",
                                            f"--etcd-certfile={pki}/admin.crt",
                                            f"--etcd-keyfile={pki}/admin.key"]}]}  # fmt: skip
    (folder / "kwok.yaml").write_text(yaml.safe_dump(document))

    info = describe(kubeconfig)

    assert info.etcd_url == "https://127.0.0.1:40123"  # the last flag wins, as in etcd
    tls = etcd._KNOWN_TLS[info.etcd_url]
    assert (tls.ca, tls.cert, tls.key) == (pki / "ca.crt", pki / "admin.crt", pki / "admin.key")
    with pytest.raises(ValueError, match="answers only a client with a certificate"):
        EtcdClient("https://127.0.0.1:1").revision()  # a URL nobody described


def test_an_existing_cluster_named_like_kwok_gets_no_etcd(tmp_path: Path) -> None:
    kubeconfig = course_files(
        tmp_path, "controllers-from-scratch", "kwok-colleague",
        {"backend": "existing", "context": "kwok-colleague"},
    )  # fmt: skip
    kwokctl_saved(tmp_path, "colleague", 40124)  # even with a kwok folder of that name

    info = describe(kubeconfig)

    assert info.backend == "existing"
    assert info.etcd_url is None


@pytest.mark.parametrize(
    ("context", "backend"), [("kind-course", "kind"), ("kwok-x", "local"), ("prod", "existing")]
)
def test_without_a_record_the_context_name_decides(
    tmp_path: Path, context: str, backend: str
) -> None:
    kubeconfig = course_files(tmp_path / "elsewhere", "x", context, state=None)
    assert describe(kubeconfig).backend == backend


def test_a_record_about_another_context_is_not_used(tmp_path: Path) -> None:
    kubeconfig = course_files(tmp_path, "x", "kind-x", {"backend": "local", "context": "kwok-x"})
    assert describe(kubeconfig).backend == "kind"


@pytest.mark.cluster
def test_the_course_cluster_is_described_from_its_record() -> None:
    info = describe()
    assert info.backend == "local", f"the tests run on the local control plane; got {info}"
    assert info.etcd_url is not None
    assert EtcdClient(info.etcd_url).revision() > 0
