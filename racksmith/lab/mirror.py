"""Which Debian mirror the lab uses: the machine's own, never one written into the repository.

The lab's image build (debootstrap) and its apt cache (apt-cacher-ng's backend) fetch from the
Debian archive. Which host serves it is a property of the site, so it is read from the
controller's apt sources (deb822 ``*.sources`` and one-line ``*.list``), or from
``RACKSMITH_DEBIAN_MIRROR`` / ``RACKSMITH_DEBIAN_SECURITY_MIRROR`` where a site wants another.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from racksmith.lab.errors import LabError

ENV_MIRROR = "RACKSMITH_DEBIAN_MIRROR"
ENV_SECURITY = "RACKSMITH_DEBIAN_SECURITY_MIRROR"


@dataclass(frozen=True)
class Source:
    """One ``deb`` entry of apt's configuration."""

    uri: str
    suites: tuple[str, ...]
    components: tuple[str, ...]


def parse_deb822(text: str) -> list[Source]:
    """Entries of a ``*.sources`` file (stanzas of ``Key: value`` lines)."""
    out = []
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes") == "no":
            continue
        suites = tuple(fields.get("suites", "").split())
        components = tuple(fields.get("components", "").split())
        out += [Source(uri, suites, components) for uri in fields.get("uris", "").split()]
    return out


def parse_one_line(text: str) -> list[Source]:
    """Entries of a one-line ``*.list`` file: ``deb [options] URI SUITE COMPONENT...``."""
    out = []
    for raw in text.splitlines():
        words = raw.split("#", 1)[0].split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                words = words[1:]
            words = words[1:]
        if len(words) >= 2:
            out.append(Source(words[0], (words[1],), tuple(words[2:])))
    return out


def apt_sources(apt_dir: Path = Path("/etc/apt")) -> Iterator[Source]:
    """Every enabled ``deb`` entry, in apt's order (sources.list first, then sources.list.d)."""
    files = [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*"))]
    for path in files:
        if not path.is_file():
            continue
        if path.suffix == ".sources":
            yield from parse_deb822(path.read_text(errors="replace"))
        elif path.suffix == ".list" or path.name == "sources.list":
            yield from parse_one_line(path.read_text(errors="replace"))


def _pick(sources: list[Source], security: bool) -> str | None:
    for src in sources:
        is_security = any(s.endswith("-security") for s in src.suites)
        if is_security == security and src.uri.startswith("http") and "main" in src.components:
            return src.uri.rstrip("/")
    return None


def debian_mirror(
    env: Mapping[str, str] | None = None, apt_dir: Path = Path("/etc/apt")
) -> str:
    """The Debian archive URL (no trailing slash) the lab fetches from."""
    env = os.environ if env is None else env
    if env.get(ENV_MIRROR):
        return env[ENV_MIRROR].rstrip("/")
    found = _pick(list(apt_sources(apt_dir)), security=False)
    if found is None:
        raise LabError(
            f"no Debian archive found in {apt_dir}/sources.list*; set {ENV_MIRROR} to your "
            "mirror (for example http://<your-mirror>/debian)"
        )
    return found


def security_mirror(
    env: Mapping[str, str] | None = None, apt_dir: Path = Path("/etc/apt")
) -> str:
    """The Debian security archive URL: the configured one, else the archive's sibling."""
    env = os.environ if env is None else env
    if env.get(ENV_SECURITY):
        return env[ENV_SECURITY].rstrip("/")
    return _pick(list(apt_sources(apt_dir)), security=True) or (
        debian_mirror(env, apt_dir) + "-security"
    )
