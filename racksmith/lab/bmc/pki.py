"""The lab's CA, the emulated BMCs' server certificate and the lab BMC credentials.

``racksmith lab up`` creates ``$LAB_DIR/ca/`` and ``$LAB_DIR/secrets/bmc.env`` before it starts
the BMC emulation; these helpers create them only when they are missing, so the emulator also
runs standalone (tests, benchmarks). Real iDRACs ship self-signed certificates; the lab instead
signs one with its own CA so clients can keep TLS verification on, as they must on a real site.
Private keys and secrets are written with mode 0600 in 0700 directories.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from racksmith.redfish.credentials import DEFAULT_PASSWORD_ENV, DEFAULT_USERNAME_ENV

LAB_USERNAME = "root"  # what iDRACs ship with; the password is generated per lab


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def ensure_ca(lab_dir: Path) -> tuple[Path, Path]:
    """``$LAB_DIR/ca/ca.pem`` and ``ca-key.pem``, created if missing; returns both paths."""
    cert_path, key_path = lab_dir / "ca" / "ca.pem", lab_dir / "ca" / "ca-key.pem"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "racksmith lab CA")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _write_private(key_path, _key_pem(key))
    cert_path.parent.mkdir(parents=True, exist_ok=True)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def issue_server_cert(lab_dir: Path, out_dir: Path, names: list[str]) -> tuple[Path, Path]:
    """A server certificate for ``names`` (IPs and DNS names) signed by the lab CA."""
    ca_cert_path, ca_key_path = ensure_ca(lab_dir)
    ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    alt: list[x509.GeneralName] = []
    for name in dict.fromkeys(names):
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt.append(x509.DNSName(name))
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "racksmith emulated iDRAC")])
        )
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=825))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),
            critical=False,  # type: ignore[arg-type]
        )
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    cert_path, key_path = out_dir / "server.pem", out_dir / "server-key.pem"
    _write_private(key_path, _key_pem(key))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def ensure_credentials(lab_dir: Path) -> Path:
    """``$LAB_DIR/secrets/bmc.env`` with a generated password, created if missing."""
    path = lab_dir / "secrets" / "bmc.env"
    if path.exists():
        return path  # whoever wrote it owns it; a missing variable is reported when read
    password = secrets.token_urlsafe(18)
    _write_private(
        path, f"{DEFAULT_USERNAME_ENV}={LAB_USERNAME}\n{DEFAULT_PASSWORD_ENV}={password}\n".encode()
    )
    return path
