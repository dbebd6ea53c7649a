"""Lab secrets: the SSH key for test hosts, the lab CA, and BMC/MAAS credentials.

Generated on first ``lab up`` and reused afterwards (a running BMC emulator or MAAS simulator
keeps working across ``lab up`` calls). Every secret file is created with mode 0600 from the
start (never written world-readable and chmod-ed later), and no function here prints or logs
a secret value: callers get paths, not contents.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import secrets
import string
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from racksmith.lab.errors import LabError
from racksmith.lab.paths import LabPaths
from racksmith.lab.proc import run
from racksmith.secrets import SecretError, read_env_file, write_secret

BMC_USERNAME = "root"  # what an iDRAC ships with; the password is random per lab
_ALNUM = string.ascii_letters + string.digits


def read_env(path: Path) -> dict[str, str]:
    """Parse a ``KEY=value`` file that ``lab up`` wrote; say how to get one if it is missing."""
    try:
        return read_env_file(path)
    except SecretError as exc:
        raise LabError(f"{exc}; run `racksmith lab up`") from None


def render_env(values: dict[str, str]) -> str:
    for key, value in values.items():
        if not set(value) <= set(_ALNUM + ":/._-"):
            raise LabError(f"value for {key} has characters unsafe for a sourced env file")
    return "".join(f"{k}={v}\n" for k, v in values.items())


def _token(length: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(length))


def maas_url(listen: str) -> str:
    return f"http://{listen}/MAAS/"


def ensure_credentials(lab: LabPaths, *, maas_listen: str) -> None:
    """bmc.env and maas.env (see docs/lab.md). Existing secrets are kept; MAAS_URL follows
    the rack file so a changed listen address does not need a new key."""
    bmc = lab.secrets / "bmc.env"
    if not bmc.exists():
        write_secret(
            bmc,
            render_env(
                {"RACKSMITH_BMC_USERNAME": BMC_USERNAME, "RACKSMITH_BMC_PASSWORD": _token(20)}
            ),
        )
    maas = lab.secrets / "maas.env"
    current = read_env(maas) if maas.exists() else {}
    key = current.get("MAAS_API_KEY") or f"{_token(18)}:{_token(18)}:{_token(32)}"
    wanted = {"MAAS_URL": maas_url(maas_listen), "MAAS_API_KEY": key}
    if current != wanted:
        write_secret(maas, render_env(wanted))


def ensure_ssh_key(lab: LabPaths) -> Path:
    """ed25519 key pair for user ``ubuntu`` on test hosts; returns the private key path."""
    key = lab.ssh_key
    if key.exists() and key.with_suffix(".pub").exists():
        return key
    key.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key.unlink(missing_ok=True)
    key.with_suffix(".pub").unlink(missing_ok=True)
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "racksmith-lab", "-f", str(key)])
    return key


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "racksmith lab"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def ensure_ca(lab: LabPaths) -> Path:
    """A lab-only CA (ca.pem, ca-key.pem). Clients verify BMC TLS against it, so the lab
    exercises verification exactly as a site with its own CA would (TLS stays on)."""
    cert_path, key_path = lab.ca / "ca.pem", lab.ca / "ca-key.pem"
    if cert_path.exists() and key_path.exists():
        return cert_path
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    # CN is limited to 64 characters: name the lab by a short hash of its directory.
    lab_id = hashlib.sha256(str(lab.root).encode()).hexdigest()[:8]
    name = _name(f"racksmith lab CA {lab_id}")
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    lab.ca.mkdir(mode=0o755, parents=True, exist_ok=True)  # ca.pem is public; the key is 0600
    write_secret(key_path, _key_pem(key))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def issue_server_cert(
    lab: LabPaths,
    *,
    names: list[str],
    ips: list[str],
    cert_out: Path,
    key_out: Path,
    days: int = 825,
) -> None:
    """Sign a TLS server certificate with the lab CA (for the emulated iDRACs)."""
    ca_cert = x509.load_pem_x509_certificate((lab.ca / "ca.pem").read_bytes())
    ca_key = serialization.load_pem_private_key((lab.ca / "ca-key.pem").read_bytes(), None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise LabError(f"{lab.ca / 'ca-key.pem'} is not the EC key `lab up` generates")
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in names]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(names[0] if names else ips[0]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    write_secret(key_out, _key_pem(key))
    cert_out.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
