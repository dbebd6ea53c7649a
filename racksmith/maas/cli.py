"""``racksmith maas ...``: operator commands over the same library calls the playbooks use.

Credentials come from ``MAAS_URL`` / ``MAAS_API_KEY`` or ``--credentials-file FILE`` (a
``KEY=VALUE`` file such as the lab's ``secrets/maas.env``, mode 0600); the key is never printed.
Every API call ends within ``--deadline`` seconds (default 55), each request within
``--connect-timeout`` + ``--read-timeout``; a MAAS that never answers fails in under a minute.
Bad input exits 2, a failed operation 1, and a malformed answer from MAAS is an error message,
never a traceback. Destructive commands (deploy, release, mark-broken) say what they will do
and need ``--yes``. Every command takes ``--json`` (stdout: JSON only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from racksmith.errors import UsageError
from racksmith.maas import lifecycle, machines, options, triage
from racksmith.maas.auth import resolve_credentials
from racksmith.maas.client import MaasClient
from racksmith.maas.errors import MaasConfigError, MaasError, MaasNotFound, MachineFailed
from racksmith.maas.model import Machine, parse_events, parse_machines
from racksmith.optionspec import add_arguments, add_deprecated, set_examples


def _connect(args: argparse.Namespace) -> MaasClient:
    try:
        creds = resolve_credentials(credentials_file=args.credentials_file)
        verify: bool | str = str(args.ca_bundle) if args.ca_bundle else args.validate_certs
        return options.client_for(creds, verify, args)
    except MaasConfigError as exc:  # bad settings or credentials: a usage error, exit 2
        raise UsageError(f"maas: {exc}") from None


def _machine(client: MaasClient, ref: str) -> Machine:
    """A machine by MAC address, hostname or system id."""
    try:
        found = machines.find(client, mac=machines.normalise_mac(ref))
    except MaasConfigError:  # not a MAC
        found = machines.find(client, hostname=ref)
        if found is None:
            try:
                found = machines.read(client, ref)
            except MaasNotFound:
                found = None
    if found is None:
        raise MaasError(f"no machine with MAC, hostname or system id {ref!r}")
    return found


def _progress(machine: Machine) -> None:
    print(f"  {machine.hostname}: {machine.status.display}", file=sys.stderr, flush=True)


def _policy(args: argparse.Namespace) -> lifecycle.WaitPolicy:
    return lifecycle.WaitPolicy.build(
        poll_interval=args.poll_interval,
        progress=_progress,
        power_actions_per_minute=args.power_actions_per_minute,
    )


def cmd_machines(args: argparse.Namespace, client: MaasClient) -> int:
    params = {"status": args.status} if args.status else None
    found = parse_machines(client.get("machines/", params))
    if args.json:
        print(json.dumps([m.summary() for m in found], indent=2))
        return 0
    print(f"{'HOSTNAME':<16} {'SYSTEM_ID':<9} {'STATUS':<20} {'PXE MAC':<18} {'IP':<16} BOOT DISK")
    for m in sorted(found, key=lambda m: m.hostname):
        disk = f"{m.boot_disk.name} {m.boot_disk.model}" if m.boot_disk else "-"
        ips = ",".join(m.ip_addresses) or "-"
        status = m.status.display
        print(f"{m.hostname:<16} {m.system_id:<9} {status:<20} {m.boot_mac:<18} {ips:<16} {disk}")
    return 0


def cmd_show(args: argparse.Namespace, client: MaasClient) -> int:
    m = _machine(client, args.machine)
    data = client.get(
        "events/", {"id": m.system_id, "level": args.level, "limit": args.events}, op="query"
    )
    events = list(reversed(parse_events(data)))
    if args.json:
        lines = [event.line() for event in events]
        print(json.dumps({"machine": m.summary(), "events": lines}, indent=2))
        return 0
    print(json.dumps(m.summary(), indent=2))
    for event in events:
        print(event.line())
    return 0


def cmd_triage(args: argparse.Namespace, client: MaasClient) -> int:
    m = _machine(client, args.machine)
    phase = "deploy" if m.status.name.endswith("DEPLOYMENT") or m.distro_series else "commissioning"
    found = triage.collect(client, m, phase)
    print(json.dumps(found.as_dict(), indent=2))
    if found.unread:  # a cause named without the events is a guess: fail closed
        print(f"error: MAAS gave no usable {'; '.join(found.unread)}", file=sys.stderr)
        return 1
    return 0


def cmd_deploy(args: argparse.Namespace, client: MaasClient) -> int:
    m = _machine(client, args.machine)
    try:
        user_data = Path(args.user_data).read_bytes() if args.user_data else None
    except OSError as exc:
        raise UsageError(f"maas deploy: --user-data {args.user_data}: {exc.strerror}") from None
    options = lifecycle.DeployOptions(
        distro_series=args.distro, hwe_kernel=args.kernel, user_data=user_data
    )
    if not args.yes:  # deploying writes the machine's disks: say what, then stop
        plan = lifecycle.deploy(
            client,
            m,
            _policy(args),
            options,
            redeploy_failed=args.redeploy_failed,
            check_mode=True,
        )
        _say_plan(args, plan, f"{m.label} is {m.status.display}: nothing to deploy")
        return 2 if plan.changed else 0
    outcome = lifecycle.deploy(
        client, m, _policy(args), options, redeploy_failed=args.redeploy_failed
    )
    print(json.dumps(outcome.as_dict(), indent=2))
    return 0


def _say_plan(args: argparse.Namespace, plan, nothing: str) -> None:
    """What a destructive command would do without ``--yes``: its actions (as JSON with
    ``--json``), and how to go ahead on stderr."""
    if args.json:
        print(json.dumps({"would": plan.actions, "changed": plan.changed}, indent=2))
    else:
        for action in plan.actions or [nothing]:
            print(action)
    if plan.changed:
        print("re-run with --yes to do it", file=sys.stderr)


def cmd_release(args: argparse.Namespace, client: MaasClient) -> int:
    m = _machine(client, args.machine)
    options = lifecycle.ReleaseOptions(
        erase=args.erase, secure_erase=args.secure, quick_erase=args.quick, comment=args.comment
    )
    plan = lifecycle.release(client, m, _policy(args), options, check_mode=True)
    if not plan.changed or not args.yes:
        _say_plan(args, plan, f"{m.label} is {m.status.display}: nothing to release")
        return 0 if not plan.changed else 2
    outcome = lifecycle.release(client, m, _policy(args), options)
    print(json.dumps(outcome.as_dict(), indent=2))
    return 0


def cmd_mark_broken(args: argparse.Namespace, client: MaasClient) -> int:
    m = _machine(client, args.machine)
    if not args.yes:
        would = f"would mark {m.label} ({m.status.display}) broken: {args.reason}"
        print(json.dumps({"would": [would], "changed": True}) if args.json else would)
        print("re-run with --yes to do it", file=sys.stderr)
        return 2
    print(json.dumps(machines.mark_broken(client, m, args.reason).as_dict(), indent=2))
    return 0


def _run(handler):
    def run(args: argparse.Namespace) -> int:
        try:
            with _connect(args) as client:
                return handler(args, client)
        except MachineFailed as exc:
            print(json.dumps(exc.triage.as_dict(), indent=2))
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except MaasError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1

    return run


_JSON_HELP = "stdout carries JSON only (the notices go to stderr)"


def register(subparsers: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    add_arguments(common, (*options.CONNECTION, *options.WAIT))

    def add(name: str, handler, help_text: str, *examples: str) -> argparse.ArgumentParser:
        parser = subparsers.add_parser(
            name, parents=[common], help=help_text, description=help_text
        )
        parser.set_defaults(func=_run(handler))
        set_examples(parser, *examples)
        return parser

    def yes(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--yes", action="store_true", help="do it (default: only say what would happen)"
        )
        parser.add_argument("--json", action="store_true", help=_JSON_HELP)

    p = add(
        "machines",
        cmd_machines,
        "list machines with status, PXE MAC, IP and boot disk",
        "racksmith maas machines --credentials-file secrets/maas.env",
        "racksmith maas machines --status failed_deployment --json",
    )
    p.add_argument("--status", help="filter by status name (ready, deployed, failed_deployment...)")
    p.add_argument("--json", action="store_true", help="a JSON list of machines on stdout")
    p = add(
        "show",
        cmd_show,
        "one machine (by hostname, system id or MAC) and its recent events",
        "racksmith maas show gpu01",
        "racksmith maas show 52:54:00:12:34:56 --level DEBUG --events 100 --json",
    )
    p.add_argument("machine")
    p.add_argument("--level", default="INFO", help="lowest event level shown (default INFO)")
    events = p.add_argument(
        "--events", type=int, default=30, metavar="N", help="newest N events (default 30)"
    )
    add_deprecated(p, events, "--limit")
    p.add_argument("--json", action="store_true", help="one JSON object: machine and events")
    p = add(
        "triage",
        cmd_triage,
        "collect events and logs of a failed machine and name the cause",
        "racksmith maas triage gpu03 --json",
        "racksmith maas triage 4y3h8a --deadline 30",
    )
    p.add_argument("machine")
    p.add_argument("--json", action="store_true", help=_JSON_HELP + " (the default output)")
    p = add(
        "deploy",
        cmd_deploy,
        "deploy a Ready machine and wait for Deployed; needs --yes",
        "racksmith maas deploy gpu01           # says what it would do, changes nothing",
        "racksmith maas deploy gpu01 --kernel hwe-22.04 --user-data user-data.yml --yes",
        "racksmith maas deploy gpu02 --redeploy-failed --yes --json",
    )
    p.add_argument("machine")
    p.add_argument("--distro", default="jammy", help="Ubuntu series (default jammy)")
    p.add_argument("--kernel", help="HWE kernel, e.g. hwe-22.04 (default: MAAS's)")
    p.add_argument("--user-data", metavar="FILE", help="cloud-init user data")
    p.add_argument(
        "--redeploy-failed",
        action="store_true",
        help="release and redeploy a machine in Failed deployment",
    )
    yes(p)
    p = add(
        "release",
        cmd_release,
        "release a machine (optionally erasing disks); needs --yes",
        "racksmith maas release gpu01 --erase --quick   # says what it would do",
        "racksmith maas release gpu01 --erase --secure --comment 'RMA 4411' --yes --json",
    )
    p.add_argument("machine")
    p.add_argument("--erase", action="store_true", help="erase the disks on release")
    p.add_argument("--secure", action="store_true", help="secure erase (with --erase)")
    p.add_argument("--quick", action="store_true", help="quick erase (with --erase)")
    p.add_argument("--comment", help="the release comment MAAS records")
    yes(p)
    p = add(
        "mark-broken",
        cmd_mark_broken,
        "quarantine a machine in MAAS with a reason; needs --yes",
        "racksmith maas mark-broken gpu03 --reason 'GPU 5 fell off the bus'",
        "racksmith maas mark-broken gpu03 --reason 'xid 79' --yes --json",
    )
    p.add_argument("machine")
    p.add_argument("--reason", required=True, help="why (MAAS keeps it with the machine)")
    yes(p)
