"""racksmith.health: the host agent that says whether one GPU host is fit to train on.

It runs on the GPU hosts themselves, under the system Python of Ubuntu 22.04 (3.10), so it
uses the standard library only and imports nothing from racksmith outside this package.
Entry point: ``python3 -m racksmith.health check`` (see ``cli``).

Layout, one module per concern:

- ``outcome``: typed results (severity, reason, remediation) and the verdict rule.
- ``commands``: running a command with a timeout; never hangs, never raises.
- ``host``: everything the checks read from the machine (commands, sysfs, procfs, syscalls).
- ``parsers/``: pure parsers, text in, typed objects out, tested on real captured output.
- ``profile``: what a host type must look like, and which checks do not apply to it.
- ``checks/``: the checks; each turns parsed facts plus the profile into findings.
- ``runner``: runs the checks in parallel under one deadline.
- ``report`` / ``prom``: human text, JSON, and Prometheus textfile output.
- ``capture``: save a host's raw outputs as fixtures (``racksmith.lab.standin`` replays them).
- ``golden``: the controller side: per-host reports in, the golden set out.
"""

#: Version of the JSON report schema; bump when a field changes meaning.
REPORT_SCHEMA = "racksmith.health/v1"
