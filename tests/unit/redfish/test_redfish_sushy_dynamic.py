"""The modules' libraries against sushy-tools' *dynamic* emulator (the Flask app, fake driver,
in this process): what it serves and what it does not. Its ``Bios``, ``Bios/Settings`` and
``SimpleUpdate`` need the libvirt driver (libvirt-python is not in the project's environment);
with the fake driver the BIOS answers an error and the update service has no firmware inventory.
Both libraries must refuse before they send anything that changes the server: fail closed."""

from __future__ import annotations

import logging
import threading

import pytest

from racksmith.redfish import bios_apply, update
from racksmith.redfish.client import ClientOptions, RedfishClient
from racksmith.redfish.credentials import Credentials
from racksmith.redfish.errors import RedfishError
from racksmith.redfish.targets import Target


@pytest.fixture(scope="module")
def sushy_dynamic():
    from sushy_tools.emulator import main
    from werkzeug.serving import make_server

    app = main.app
    app.configure(config_file=None)
    app.config["SUSHY_EMULATOR_FAKE_DRIVER"] = True
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = make_server("127.0.0.1", 0, app)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Target("127.0.0.1", server.server_port)
    server.shutdown()


def _client(target: Target) -> RedfishClient:
    options = ClientOptions(scheme="http", connect_timeout=5, read_timeout=10, backoff=0.05)
    return RedfishClient(target, Credentials("admin", "password"), options)


def test_firmware_update_is_refused_without_an_inventory(sushy_dynamic):
    with _client(sushy_dynamic) as c:
        service = update.Service.parse(c.get(update.UPDATE_SERVICE))
        assert service.simple_update and not service.multipart_uri  # what sushy offers
        with pytest.raises(RedfishError) as refused:
            update.update(
                c,
                [update.UpdateStep("BIOS", "1.1.0", image_uri="http://images/bios.bin")],
                check_mode=False,
            )
        posts = c.stats.by_method.get("POST", 0)
    assert refused.value.status == 404 and "FirmwareInventory" in refused.value.reason
    assert posts <= 1  # at most the login attempt: no SimpleUpdate was posted


def test_bios_apply_sends_nothing_to_the_fake_driver(sushy_dynamic):
    """The fake system has no serial number, so the system to act on is not even identified
    (the same rule as every power action); nothing is PATCHed."""
    with _client(sushy_dynamic) as c:
        with pytest.raises(RedfishError) as refused:
            bios_apply.apply(c, {"BootMode": "Uefi"}, check_mode=False)
        patches = c.stats.by_method.get("PATCH", 0)
    assert "no service tag" in refused.value.reason and patches == 0
