"""Lab secrets: created private, kept across runs, and a CA that TLS clients can verify."""

import socket
import ssl
import stat
import threading

import pytest

from racksmith.lab import creds
from racksmith.lab.errors import LabError
from racksmith.lab.paths import LabPaths


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_credentials_are_private_and_reused(tmp_path):
    lab = LabPaths(tmp_path)
    creds.ensure_credentials(lab, maas_listen="127.0.0.1:5240")
    bmc, maas = lab.secrets / "bmc.env", lab.secrets / "maas.env"
    assert _mode(bmc) == 0o600 and _mode(maas) == 0o600 and _mode(lab.secrets) == 0o700
    first_bmc, first_maas = creds.read_env(bmc), creds.read_env(maas)
    assert first_bmc["RACKSMITH_BMC_USERNAME"] == "root"
    assert len(first_bmc["RACKSMITH_BMC_PASSWORD"]) == 20
    assert first_maas["MAAS_URL"] == "http://127.0.0.1:5240/MAAS/"
    assert [len(p) for p in first_maas["MAAS_API_KEY"].split(":")] == [18, 18, 32]
    creds.ensure_credentials(lab, maas_listen="127.0.0.1:5241")
    assert creds.read_env(bmc) == first_bmc
    again = creds.read_env(maas)
    assert again["MAAS_API_KEY"] == first_maas["MAAS_API_KEY"]  # key kept ...
    assert again["MAAS_URL"] == "http://127.0.0.1:5241/MAAS/"  # ... URL follows the rack


def test_env_files_round_trip_and_refuse_unsafe_values(tmp_path):
    path = tmp_path / "x.env"
    path.write_text(creds.render_env({"A": "b:c/d", "B": "e"}) + "# comment\n\n")
    assert creds.read_env(path) == {"A": "b:c/d", "B": "e"}
    with pytest.raises(LabError, match="unsafe"):
        creds.render_env({"A": "x; rm -rf /"})
    path.write_text("not an assignment\n")
    with pytest.raises(LabError, match=r"x.env:1: expected KEY=VALUE"):
        creds.read_env(path)
    with pytest.raises(LabError, match="racksmith lab up"):
        creds.read_env(tmp_path / "missing.env")


def test_a_server_cert_from_the_lab_ca_passes_verified_tls(tmp_path):
    lab = LabPaths(tmp_path)
    ca = creds.ensure_ca(lab)
    assert _mode(lab.ca / "ca-key.pem") == 0o600
    assert creds.ensure_ca(lab) == ca and ca.read_bytes() == (lab.ca / "ca.pem").read_bytes()
    cert, key = tmp_path / "srv.pem", tmp_path / "srv-key.pem"
    creds.issue_server_cert(lab, names=["localhost"], ips=["127.0.0.1"], cert_out=cert, key_out=key)
    assert _mode(key) == 0o600

    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve():
        conn, _ = listener.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            tls.sendall(b"ok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client_ctx = ssl.create_default_context(cafile=str(ca))  # verification on, as in production
    with socket.create_connection(("127.0.0.1", port)) as raw:
        with client_ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.recv(2) == b"ok"
    thread.join(5)
    listener.close()


def test_a_client_without_the_lab_ca_rejects_the_cert(tmp_path):
    lab = LabPaths(tmp_path)
    creds.ensure_ca(lab)
    cert, key = tmp_path / "srv.pem", tmp_path / "srv-key.pem"
    creds.issue_server_cert(lab, names=["localhost"], ips=[], cert_out=cert, key_out=key)
    other = LabPaths(tmp_path / "other")
    ctx = ssl.create_default_context(cafile=str(creds.ensure_ca(other)))
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = listener.accept()
        try:
            server_ctx.wrap_socket(conn, server_side=True).close()
        except ssl.SSLError:
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    with socket.create_connection(listener.getsockname()) as raw:
        with pytest.raises(ssl.SSLCertVerificationError):
            ctx.wrap_socket(raw, server_hostname="localhost")
    listener.close()
