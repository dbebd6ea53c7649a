"""Source accessors: each reads one thing from the host (through ``ctx.fact``, so once per
run), parses it with a pure parser, and turns any failure into SourceError naming the input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..commands import CommandResult
from ..outcome import Source
from ..parsers import ParseError, kernel_log, nvlink, rdma, smi_xml, sysfs
from ..parsers.misc import ClockState
from . import CheckContext, SourceError

SMI_XML = ("nvidia-smi", "-q", "-x")
NVLINK_STATUS = ("nvidia-smi", "nvlink", "-s")
NVLINK_ERRORS = ("nvidia-smi", "nvlink", "-e")
DMESG = ("dmesg",)

#: Per-command timeouts (seconds). nvidia-smi on 8 GPUs answers in about a second; a GPU in
#: a bad state makes it hang, which is exactly what the timeout is for.
TIMEOUTS = {SMI_XML: 30.0, NVLINK_STATUS: 20.0, NVLINK_ERRORS: 20.0, DMESG: 10.0}


def command_source(result: CommandResult) -> Source:
    return Source(
        result.command,
        result.path,
        result.rc,
        result.duration_s,
        "" if result.ok else result.describe_failure(),
    )


def run(ctx: CheckContext, argv: tuple[str, ...], timeout_s: float | None = None) -> CommandResult:
    """Run a command (cached per run) and record it as a source, whatever its outcome."""
    result = ctx.host.run(argv, timeout_s or TIMEOUTS.get(argv, 10.0))
    source = command_source(result)
    if source not in ctx.sources:
        ctx.sources.append(source)
    return result


def _output(ctx: CheckContext, argv: tuple[str, ...]) -> tuple[str, Source]:
    result = ctx.host.run(argv, TIMEOUTS[argv])
    if not result.ok:
        raise SourceError(result.describe_failure())
    return result.stdout, command_source(result)


def smi_raw(ctx: CheckContext) -> CommandResult:
    """``nvidia-smi -q -x`` whatever its exit code (the nvidia_smi check reads the code)."""
    return run(ctx, SMI_XML)


def _parsed(ctx: CheckContext, key: str, argv: tuple[str, ...], parse: Callable[[str], Any]):
    """A command's output through its parser, once per run; any failure names the command."""

    def compute():
        text, source = _output(ctx, argv)
        try:
            return parse(text), source
        except ParseError as exc:
            raise SourceError(f"cannot parse `{' '.join(argv)}` output: {exc}") from None

    return ctx.fact(key, compute)


def smi(ctx: CheckContext) -> smi_xml.SmiLog:
    return _parsed(ctx, "smi", SMI_XML, smi_xml.parse)


def nvlink_status(ctx: CheckContext) -> dict[int, list[nvlink.Link]]:
    return _parsed(ctx, "nvlink_status", NVLINK_STATUS, nvlink.parse_status)


def nvlink_errors(ctx: CheckContext) -> dict[int, dict[int, dict[str, int]]]:
    return _parsed(ctx, "nvlink_errors", NVLINK_ERRORS, nvlink.parse_errors)


def kernel_log_lines(ctx: CheckContext) -> list[kernel_log.Line]:
    """The kernel log, limited to the profile's window (``kernel_log.window_s``) if any."""

    def compute():
        text, source = _output(ctx, DMESG)
        lines = kernel_log.parse(text)
        if not lines:
            raise SourceError("`dmesg` printed nothing: cannot show the kernel log is clean")
        return lines, source

    lines = ctx.fact("dmesg", compute)
    window = ctx.profile.get("kernel_log.window_s")
    if window is None:
        return lines
    return kernel_log.since(lines, uptime(ctx), float(window))


def uptime(ctx: CheckContext) -> float:
    def compute():
        path = ctx.host.proc("uptime")
        try:
            return float(ctx.host.read(path).split()[0]), Source(str(path), str(path))
        except (OSError, ValueError, IndexError) as exc:
            raise SourceError(f"cannot read {path}: {exc}") from None

    return ctx.fact("uptime", compute)


def pci_links(ctx: CheckContext) -> list[sysfs.PciLink]:
    """GPUs, HCAs and NVMe drives from sysfs (other PCI functions are ignored)."""

    def compute():
        root = ctx.host.sys("bus/pci/devices")
        try:
            devices = sorted(root.iterdir())
        except OSError as exc:
            raise SourceError(f"cannot list {root}: {exc}") from None
        links = []
        for device in devices:
            try:
                attrs = ctx.host.read_attrs(device, sysfs.PCI_LINK_ATTRS)
                link = sysfs.pci_link(device.name, attrs)
            except ParseError as exc:
                raise SourceError(f"{root}: {exc}") from None
            if link.kind:
                links.append(link)
        return links, Source(str(root), str(root))

    return ctx.fact("pci", compute)


_IB_ATTRS = ("state", "phys_state", "rate", "link_layer")


def ib_ports(ctx: CheckContext) -> tuple[list[sysfs.IbPort], dict[str, str]]:
    """(ports with their error counters, firmware version per HCA). No InfiniBand class
    directory means no HCAs: the check compares that with the expected count."""

    def compute():
        root = ctx.host.sys("class/infiniband")
        source = Source(str(root), str(root))
        if not root.is_dir():
            return ([], {}), source
        ports, firmware = [], {}
        try:
            for device in sorted(root.iterdir()):
                firmware[device.name] = ctx.host.read_attrs(device, ("fw_ver",)).get("fw_ver", "")
                for port_dir in sorted((device / "ports").iterdir()):
                    counter_dir = port_dir / "counters"
                    names = (
                        sorted(p.name for p in counter_dir.iterdir())
                        if counter_dir.is_dir()
                        else []
                    )
                    ports.append(
                        sysfs.ib_port(
                            device.name,
                            int(port_dir.name),
                            ctx.host.read_attrs(port_dir, _IB_ATTRS),
                            ctx.host.read_attrs(counter_dir, names),
                        )
                    )
        except (OSError, ValueError) as exc:
            raise SourceError(f"cannot read {root}: {exc}") from None
        return (ports, firmware), source

    return ctx.fact("ib", compute)


def proc_modules(ctx: CheckContext) -> frozenset[str]:
    def compute():
        path = ctx.host.proc("modules")
        try:
            return sysfs.module_names(ctx.host.read(path)), Source(str(path), str(path))
        except OSError as exc:
            raise SourceError(f"cannot read {path}: {exc}") from None

    return ctx.fact("modules", compute)


def clock_state(ctx: CheckContext) -> ClockState:
    def compute():
        try:
            return ctx.host.clock_state(), Source("adjtimex(2)")
        except OSError as exc:
            raise SourceError(f"adjtimex(2) failed: {exc}") from None

    return ctx.fact("clock", compute)


OFED_INFO = ("ofed_info", "-s")
TIMEOUTS[OFED_INFO] = 10.0


def ofed(ctx: CheckContext):
    """The OFED/DOCA-OFED release (``ofed_info -s``), or None when ``ofed_info`` is not
    installed (inbox rdma-core). Any other failure is a SourceError."""

    def compute():
        result = ctx.host.run(OFED_INFO, TIMEOUTS[OFED_INFO])
        source = command_source(result)
        if result.missing:
            return None, source
        if not result.ok:
            raise SourceError(result.describe_failure())
        try:
            return rdma.ofed_info(result.stdout), source
        except ParseError as exc:
            raise SourceError(f"cannot parse `ofed_info -s` output: {exc}") from None

    return ctx.fact("ofed", compute)


def driver_flavour(ctx: CheckContext) -> str:
    """``open`` or ``proprietary`` NVIDIA kernel modules."""

    def compute():
        path = ctx.host.proc("driver/nvidia/version")
        try:
            return rdma.kernel_module_flavour(ctx.host.read(path)), Source(str(path), str(path))
        except (OSError, ParseError) as exc:
            raise SourceError(f"cannot read the NVIDIA driver flavour from {path}: {exc}") from None

    return ctx.fact("driver_flavour", compute)


def kernel_release(ctx: CheckContext) -> str:
    def compute():
        path = ctx.host.proc("sys/kernel/osrelease")
        try:
            return ctx.host.read(path).strip(), Source(str(path), str(path))
        except OSError as exc:
            raise SourceError(f"cannot read {path}: {exc}") from None

    return ctx.fact("kernel_release", compute)
