"""Canonical's python-libmaas (PyPI, 0.6.8) drives the simulator: a simulator only our own
client understood would prove nothing about MAAS. libmaas builds its whole client from
describe/, signs with oauthlib, and sends multipart bodies with base64 parts."""

from __future__ import annotations

import base64

import pytest

maas_client = pytest.importorskip("maas.client")
from maas.client.enum import NodeStatus  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def libmaas_sim(start_maas_sim):
    return start_maas_sim("--machines", "3")


def test_libmaas_connects_lists_and_deploys(libmaas_sim):
    client = maas_client.connect(libmaas_sim.url, apikey=libmaas_sim.key)
    assert client.users.whoami().username == "admin"
    machines = client.machines.list()
    assert sorted(m.hostname for m in machines) == ["sim-0001", "sim-0002", "sim-0003"]
    assert {m.status for m in machines} == {NodeStatus.READY}

    user_data = b"#cloud-config\nruncmd: [[touch, /tmp/from-libmaas]]\n"
    target = client.machines.get(system_id=machines[0].system_id)
    deployed = target.deploy(
        distro_series="jammy",
        hwe_kernel="hwe-22.04",
        user_data=user_data,
        wait=True,
        wait_interval=0.2,
    )
    assert deployed.status == NodeStatus.DEPLOYED
    assert deployed.hwe_kernel == "hwe-22.04"
    assert deployed.boot_disk is not None

    # The user data arrived intact (libmaas base64-encodes it with line breaks).
    raw = client.machines.get(system_id=target.system_id)
    assert raw.status_name == "Deployed"
    events = client.events.query(system_ids=[target.system_id], level="DEBUG")
    assert any("Deploying" in (e.description or "") for e in events)


def test_libmaas_sees_maas_errors(libmaas_sim):
    from maas.client.bones import CallError

    client = maas_client.connect(libmaas_sim.url, apikey=libmaas_sim.key)
    machine = client.machines.list()[0]
    machine.deploy(wait=True, wait_interval=0.2)
    with pytest.raises(CallError) as exc:
        machine.deploy()
    assert exc.value.status == 409
    assert "Can't deploy a machine that is in the 'Deployed' state" in exc.value.content.decode()
    with pytest.raises(Exception, match=r"401|Unauthorized|Expired|Invalid"):
        maas_client.connect(libmaas_sim.url, apikey="a:b:c").machines.list()


def test_user_data_roundtrip_is_what_the_metadata_server_would_serve():
    """libmaas sends base64 with newlines (encodebytes); MAAS decodes leniently."""
    from racksmith.lab.maassim.state import SimMachine, Store

    data = b"#cloud-config\n" + b"x" * 200
    machine = SimMachine(system_id="a", hostname="a", user_data=base64.encodebytes(data).decode())
    assert Store.decoded_user_data(machine) == data
