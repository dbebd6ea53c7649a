"""The LAB STAND-IN repository on a real Debian 12 lab host: apt installs every stand-in from the
signed repositories the lab serves, at exactly the versions of their records; the DCGM 4 host
engine and NVIDIA's exporter unit (nvidia-dcgm-exporter.service) start and answer; and every
line the programs print says LAB STAND-IN."""

from __future__ import annotations

import pytest

from racksmith.lab import hosts
from racksmith.lab.debs import control, packages
from racksmith.lab.debs import serve as debs_serve

pytestmark = pytest.mark.lab

SETUP = """set -e
R={url}
sudo install -d -m 0755 /etc/apt/keyrings
for repo in {cuda} {toolkit}; do
  name=lab-$(echo $repo | tr / -)
  curl -fsS $R/$repo/racksmith-lab.asc | sudo tee /etc/apt/keyrings/$name.asc >/dev/null
  echo "deb [signed-by=/etc/apt/keyrings/$name.asc] $R/$repo/ /" \\
    | sudo tee /etc/apt/sources.list.d/$name.list
done
echo 'Acquire::http::Proxy::{controller} "DIRECT";' | sudo tee /etc/apt/apt.conf.d/90lab-direct
sudo apt-get -q update >/dev/null
"""


@pytest.fixture(scope="module")
def host(it_rack, it_lab):
    server = it_rack.servers[0]
    hosts.boot(it_rack, server, lab_dir=it_lab.root)
    _, url = debs_serve.ensure_running(it_lab, bind=it_rack.controller_ip)
    yield server, url
    hosts.shutdown(it_rack, server, lab_dir=it_lab.root)
    debs_serve.stop_serving(it_lab)


def test_stand_ins_install_at_their_recorded_versions_and_the_dcgm_services_answer(
    host, it_lab, it_rack, ssh
):
    server, url = host
    ssh(it_lab, server.ip, SETUP.format(url=url, cuda=packages.CUDA_REPO,
                                        toolkit=packages.TOOLKIT_REPO,
                                        controller=it_rack.controller_ip))  # fmt: skip
    wanted = [
        "datacenter-gpu-manager-4-cuda12",
        "datacenter-gpu-manager-exporter",
        "nvidia-container-toolkit",
        "nvidia-fabricmanager-535",
    ]
    ssh(it_lab, server.ip, "sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q "
        f"--no-install-recommends {' '.join(wanted)} >/dev/null")  # fmt: skip
    records = {
        **control.load_index("cuda-debian12"),
        **control.load_index("nvidia-container-toolkit"),
    }
    installed = dict(
        line.split(" ", 1)
        for line in ssh(
            it_lab, server.ip, "dpkg-query -W -f='${Package} ${Version}\\n'"
        ).splitlines()
    )
    pulled = [n for n in records if n in installed]
    # the dependencies came along as their records say (-4-core, -base, libnvidia-container*)
    assert {"datacenter-gpu-manager-4-core", "nvidia-container-toolkit-base",
            "libnvidia-container1", "libnvidia-container-tools"} <= set(pulled)  # fmt: skip
    assert {n: installed[n] for n in pulled} == {n: records[n]["Version"] for n in pulled}

    ssh(it_lab, server.ip, "sudo systemctl start nvidia-dcgm nvidia-dcgm-exporter")
    active = ssh(it_lab, server.ip, "for i in $(seq 50); do systemctl is-active -q "
                 "nvidia-dcgm nvidia-dcgm-exporter && curl -fsS localhost:9400/metrics "
                 "&& exit 0; sleep 0.2; done; exit 1")  # fmt: skip
    assert 'racksmith_lab_standin{component="dcgm-exporter",version="4.8.1"} 1' in active
    assert "# TYPE DCGM_FI_DEV_GPU_TEMP gauge" in active
    for command in ("dcgmi discovery -l", "nvidia-ctk --version", "nv-fabricmanager --version"):
        lines = ssh(it_lab, server.ip, command).splitlines()
        assert lines and all(line.startswith("LAB STAND-IN") for line in lines), (command, lines)
