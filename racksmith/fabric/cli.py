"""``racksmith fabric ...``: check cabling, triage UFM events (and
isolate through UFM), plan the burn-in. See docs/fabric.md.

Exit codes: 0 clean, 1 problems found (cabling findings, links not covered, a UFM call or
counter read that failed), 2 bad input (the message names the file and line).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from racksmith.errors import UsageError
from racksmith.fabric import (
    burnin,
    cabling,
    counters,
    events,
    hosts,
    lft,
    pathplan,
    wiring,
)
from racksmith.fabric import topology as topology_io
from racksmith.fabric import triage as triage_mod
from racksmith.fabric.errors import FabricInputError, UfmError
from racksmith.fabric.model import Topology
from racksmith.fabric.routes import RouteError
from racksmith.optionspec import add_deprecated, set_examples


def _print_json(doc) -> None:
    print(json.dumps(doc, indent=2, sort_keys=False))


# --- cabling ------------------------------------------------------------------------------


def cmd_cabling(args: argparse.Namespace) -> int:
    topo = topology_io.load(args.topology)
    plan = wiring.load(args.plan)
    owners = hosts.load(args.hosts) if args.hosts else None
    report = cabling.check(topo, plan, owners, width=args.width, speed=args.speed.upper())
    if args.json:
        _print_json(report.as_dict())
    else:
        verdict = "OK" if report.ok else "PROBLEMS"
        print(
            f"cabling {verdict}: {report.matching_links} of {report.planned_links} planned cables "
            f"as planned; {report.fabric_links} links in the fabric; "
            f"{report.fabric_networks} network(s)"
        )
        for f in report.findings:
            hosts_txt = f"  [hosts: {', '.join(f.hosts)}]" if f.hosts else ""
            print(f"  {f.severity.upper():<4} {f.kind:<9} {f.message}{hosts_txt}")
    return 0 if report.ok else 1


# --- ufm ----------------------------------------------------------------------------------


def _client(args: argparse.Namespace):
    from racksmith.fabric import ufm

    creds = ufm.resolve(args.ufm_url, args.credentials_file)
    verify: bool | str = str(args.ca_bundle) if args.ca_bundle else not args.insecure
    return ufm.UfmClient(creds, verify=verify)


def _read_events(args: argparse.Namespace, topo: Topology | None):
    if args.before or args.after:
        if not (args.before and args.after and topo):
            raise UsageError("--before and --after need each other and --topology")
        diff = counters.diff(
            counters.parse(_read(args.before), args.before),
            counters.parse(_read(args.after), args.after),
            topo,
            args.seconds,
        )
        return diff.events, diff.unreadable, True
    if args.from_ufm:
        return events.from_feed(_client(args).events()), [], False
    if not args.eventlog:
        raise UsageError("give EVENTLOG, --from-ufm, or --before/--after")
    path = Path(args.eventlog)
    try:
        fh = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise FabricInputError(str(path), 0, f"cannot read: {exc.strerror}") from None
    return events.parse_lines(fh, str(path)), [], False


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise FabricInputError(path, 0, f"cannot read: {exc.strerror}") from None


def _triage(args: argparse.Namespace) -> tuple[triage_mod.TriageResult, list[str]]:
    if args.max_ports is not None and args.max_ports < 0:
        raise UsageError(f"--max-ports must be 0 or more, not {args.max_ports}")
    topo = topology_io.load(args.topology) if args.topology else None
    stream, unreadable, from_counters = _read_events(args, topo)
    result = triage_mod.triage(
        stream,
        topo,
        cap=args.max_ports,
        burst_count=10**9 if from_counters else args.burst_count,
        burst_window=args.burst_window,
        owners=hosts.load(args.hosts) if getattr(args, "hosts", None) else None,
    )
    return result, unreadable


def _print_plan(
    result: triage_mod.TriageResult, unreadable: list[str], as_json: bool, stream=None
) -> None:
    stream = stream or sys.stdout
    if as_json:
        for action in result.actions:
            print(json.dumps(action.as_dict()), file=stream)
        return
    print(f"{'ACTION':<9} {'PORT':<24} {'UFM PORT':<22} {'PEER':<28} REASON", file=stream)
    for a in result.actions:
        peer = str(a.peer) if a.peer else "(peer unknown: give --topology)"
        print(
            f"{a.action:<9} {a.end!s:<24} {a.ufm_port or '-':<22} {peer:<28} {a.issue.reason()}",
            file=stream,
        )
    s = result.summary()
    print(
        f"{s['links']} links, {s['ports_to_isolate']} ports to isolate (cap {s['cap']}), "
        f"{s['ports_deferred']} deferred; {s['events']} events, {s['burst_events_dropped']} in "
        f"{s['bursts']} bursts dropped, {s['ignored']} ignored",
        file=stream,
    )
    if s["needs_attention"]:
        print(f"needs a person: {s['needs_attention']}", file=stream)
    if s["unknown_codes"]:
        print(f"codes not handled: {s['unknown_codes']}", file=stream)
    for line in unreadable:
        print(f"UNREADABLE {line}", file=stream)


def cmd_ufm(args: argparse.Namespace) -> int:
    from racksmith.fabric import isolate
    from racksmith.fabric.tickets import TicketStore

    if args.repaired:
        store = TicketStore(_need_tickets(args))
        ticket = store.mark_repaired(args.repaired)
        print(
            json.dumps({"ticket": ticket.id, "status": ticket.status})
            if args.json
            else f"{ticket.id} marked repaired"
        )
        return 0
    if args.restore:
        store = TicketStore(_need_tickets(args))
        try:
            outcomes = isolate.restore(_client(args), store, args.method)
        except UfmError as exc:
            print(f"racksmith: {exc}", file=sys.stderr)
            return 1
        _print_outcomes(outcomes, args.json)
        return 0 if all(o.ok for o in outcomes) else 1
    result, unreadable = _triage(args)
    if not args.apply:
        _print_plan(result, unreadable, args.json)
        if args.json:
            print(
                json.dumps({"summary": result.summary(), "unreadable": unreadable}), file=sys.stderr
            )
        return 1 if unreadable else 0
    store = TicketStore(_need_tickets(args))
    _print_plan(result, unreadable, False, stream=sys.stderr)  # say what it will do first
    try:
        outcomes = isolate.apply(result, _client(args), store, args.method)
    except UfmError as exc:
        print(f"racksmith: {exc}", file=sys.stderr)
        return 1
    _print_outcomes(outcomes, args.json)
    return 0 if all(o.ok for o in outcomes) and not unreadable else 1


def _need_tickets(args: argparse.Namespace) -> str:
    if not args.tickets:
        raise UsageError("--tickets DIR is required to apply, restore or mark a repair")
    return args.tickets


def _print_outcomes(outcomes, as_json: bool) -> None:
    for o in outcomes:
        if as_json:
            print(json.dumps(o.as_dict()))
        else:
            print(f"{o.ticket}  {o.link:<48} {o.status}")
    if not outcomes and not as_json:
        print("nothing to do")


# --- burnin -------------------------------------------------------------------------------


def cmd_burnin(args: argparse.Namespace) -> int:
    if args.before or args.after:
        args.max_ports = None
        args.from_ufm = False
        args.eventlog = None
        args.burst_count = triage_mod.BURST_COUNT
        result, unreadable = _triage(args)
        _print_plan(result, unreadable, args.json)
        loaded = _load_report(args)
        return 1 if unreadable or result.actions or not loaded else 0
    topo = topology_io.load(args.topology)
    owners = hosts.load(args.hosts) if args.hosts else None
    tables = None
    if args.routes:
        tables = lft.load(args.routes, adaptive=True if args.adaptive_routing else None)
        missing = lft.check_against(tables, topo)
        if missing:
            raise FabricInputError(args.routes, 0, "; ".join(missing[:5]))
    started = time.perf_counter()
    try:
        plan = (
            pathplan.plan(topo, tables, args.seed, max_stages=args.max_stages)
            if tables
            else burnin.plan(topo, args.seed, max_stages=args.max_stages)
        )
    except RouteError as exc:  # the fabric's tables cannot carry a pair: a finding
        print(f"ROUTE {exc.detail}", file=sys.stderr if args.json else sys.stdout)
        if args.json:
            _print_json({"ok": False, "route_error": exc.detail, "routes": args.routes})
        return 1
    seconds = time.perf_counter() - started
    ends = burnin.endpoints(topo, owners, gdr=not args.no_gdr)
    if args.out:
        _write_burnin(Path(args.out), topo, plan, ends, args)
    if args.json:
        _print_json(_plan_doc(topo, plan, ends, seconds, args, tables))
    else:
        print(
            f"burn-in: {len(plan.stages)} stages (lower bound {plan.lower_bound}), "
            f"{plan.covered_inter_switch}/{plan.inter_switch_links} inter-switch links and "
            f"{plan.covered_hca}/{plan.hca_links} HCA links covered, seed {plan.seed}, "
            f"planned in {seconds:.2f} s"
        )
        for k, pairs in enumerate(plan.stages, 1):
            print(f"  stage {k}: {len(pairs)} pairs")
        if tables is None:
            print(
                "  routes ASSUMED (minimal up/down, chosen by the planner): give --routes "
                "(dump_lfts.sh or ibdiagnet2.fdbs) to plan on the fabric's real paths"
            )
        for i in plan.uncovered:
            link = topo.links[i]
            print(f"  NOT COVERED {topo.describe(link.a)} - {topo.describe(link.b)}{_why(plan, i)}")
        for line in getattr(plan, "guarantees", []):
            print(f"  - {line}")
        if args.out:
            print(f"wrote {args.out}: burnin.yml, counters.sh, stage-NN/HOST.sh")
    return 0 if not plan.uncovered else 1


def _load_report(args: argparse.Namespace) -> bool:
    """Which link directions the burn loaded, from the data counters (False: some did not)."""
    topo = topology_io.load(args.topology)
    load = counters.load(
        counters.parse(_read(args.before), args.before),
        counters.parse(_read(args.after), args.after),
        topo,
        args.min_gbytes * 1e9,
    )
    if args.json:
        doc = {"measured": load.measured, "loaded": len(load.loaded)}
        print(json.dumps({"load": doc | {"idle": load.idle, "unmeasured": load.unmeasured}}))
    elif not load.measured:
        print("load: no data counters in the snapshots (perfquery without -x?): not measured")
    else:
        print(
            f"load: {len(load.loaded)} link directions carried >= {args.min_gbytes:g} GB, "
            f"{len(load.idle)} idle, {len(load.unmeasured)} not measured"
        )
        for line in load.idle:
            print(f"  IDLE {line}")
        for line in load.unmeasured:
            print(f"  UNMEASURED {line}")
    return not load.measured or not (load.idle or load.unmeasured)


def _why(plan, i: int) -> str:
    """Why a link is not covered, when no route uses one of its directions."""
    dead = [e for e in getattr(plan, "unusable", ()) if e // 2 == i]
    return (
        " (no route in the tables uses it" + (" one way)" if len(dead) == 1 else ")")
        if dead
        else ""
    )


def _plan_doc(topo: Topology, plan, ends, seconds: float, args, tables=None) -> dict:
    def end(guid: str) -> dict:
        e = ends.get(guid)
        return {
            "guid": guid,
            "host": e.host if e else None,
            "device": e.device if e else None,
            "gpu": e.gpu if e else None,
            "name": topo.nodes[guid].name,
        }

    stages = []
    for k, pairs in enumerate(plan.stages, 1):
        rows = [
            {
                "client": end(p.client),
                "server": end(p.server),
                "tcp_port": port,
                "route": burnin.route_text(topo, p)
                if tables is None
                else pathplan.route_text(topo, p.forward),
            }
            for p, port in zip(pairs, burnin.server_ports(pairs, ends), strict=True)
        ]
        stages.append({"stage": k, "pairs": rows})
    return {
        "seed": plan.seed,
        "stage_count": len(plan.stages),
        "lower_bound": plan.lower_bound,
        "ratio": round(plan.ratio, 3),
        "coverage": {
            "inter_switch_links": plan.inter_switch_links,
            "inter_switch_covered": plan.covered_inter_switch,
            "fraction": round(plan.coverage, 6),
            "hca_links": plan.hca_links,
            "hca_covered": plan.covered_hca,
        },
        "uncovered": [
            f"{topo.describe(topo.links[i].a)} - {topo.describe(topo.links[i].b)}{_why(plan, i)}"
            for i in plan.uncovered
        ],
        "routes": _routes_doc(tables, plan, args),
        "plan_seconds": round(seconds, 3),
        "duration_per_stage": args.duration,
        "stages": stages,
    }


def _routes_doc(tables, plan, args) -> dict:
    if tables is None:
        return {"source": "assumed", "adaptive": None, "guarantees": []}
    return {
        "source": args.routes,
        "form": tables.form,
        "adaptive": tables.adaptive,
        "notes": tables.notes,
        "unusable_directions": len(plan.unusable),
        "guarantees": plan.guarantees,
    }


def _write_burnin(out: Path, topo: Topology, plan: burnin.BurnPlan, ends, args) -> None:
    unnamed = {
        g for pairs in plan.stages for p in pairs for g in (p.client, p.server) if g not in ends
    }
    if unnamed:
        raise UsageError(
            f"{len(unnamed)} HCAs have no host name (factory node description), e.g. "
            f"{sorted(unnamed)[0]}: give --hosts FILE to write runnable commands"
        )
    out.mkdir(parents=True, exist_ok=True)
    stage_hosts = []
    for k, pairs in enumerate(plan.stages, 1):
        cmds = burnin.stage_commands(pairs, ends, k, duration=args.duration)
        folder = out / f"stage-{k:02d}"
        folder.mkdir(exist_ok=True)
        names = sorted({c.host for c in cmds})
        for host in names:
            script = folder / f"{host}.sh"
            script.write_text(
                burnin.host_script(host, cmds, k, len(plan.stages), plan.seed, args.duration)
            )
            script.chmod(0o755)
        stage_hosts.append(names)
    (out / "burnin.yml").write_text(
        burnin.play(len(plan.stages), stage_hosts, plan.seed, args.duration)
    )
    counters_sh = out / "counters.sh"
    counters_sh.write_text(burnin.counters_script(topo))
    counters_sh.chmod(0o755)


# --- wiring -------------------------------------------------------------------------------


def register(subparsers) -> None:
    c = subparsers.add_parser(
        "cabling",
        help="check the fabric against the wiring plan",
        description="Compare ibnetdiscover/iblinkinfo output with the wiring plan (CSV).",
    )
    c.add_argument(
        "--topology", required=True, metavar="FILE", help="ibnetdiscover or iblinkinfo output"
    )
    c.add_argument("--plan", required=True, metavar="FILE", help="wiring plan CSV")
    _hosts_arg(c)
    c.add_argument("--width", type=int, default=4, help="expected width where the plan has none")
    c.add_argument("--speed", default="NDR", help="expected speed where the plan has none")
    c.add_argument("--json", action="store_true", help="one JSON report on stdout")
    set_examples(
        c,
        "racksmith fabric cabling --topology ibnetdiscover.txt --plan plan.csv",
        "racksmith fabric cabling --topology iblinkinfo.txt --plan plan.csv --hosts hosts.json"
        " --json",
    )
    c.set_defaults(func=cmd_cabling)

    u = subparsers.add_parser(
        "ufm",
        help="triage UFM events into ports to isolate; --yes/--restore through UFM's REST API",
        description="Plan (dry-run by default) which links to isolate, both ends, from UFM events.",
    )
    u.add_argument("eventlog", nargs="?", metavar="EVENTLOG", help="UFM event.log")
    _triage_args(u)
    _hosts_arg(u)
    u.add_argument(
        "--from-ufm", action="store_true", help="read GET /ufmRest/app/events instead of a file"
    )
    apply = u.add_argument(
        "--yes",
        dest="apply",
        action="store_true",
        help="isolate the planned ports through UFM, a ticket per link (default: the plan only)",
    )
    add_deprecated(u, apply, "--apply")
    u.add_argument(
        "--restore", action="store_true", help="re-enable the ports of tickets marked repaired"
    )
    u.add_argument("--repaired", metavar="TICKET", help="mark a ticket repaired (then --restore)")
    u.add_argument("--tickets", metavar="DIR", help="ticket directory (one JSON per link)")
    u.add_argument(
        "--method",
        choices=("isolate", "disable"),
        default="isolate",
        help="isolate through app/unhealthy_ports (default) or disable through actions",
    )
    u.add_argument("--ufm-url", metavar="URL", help="default: $UFM_URL")
    creds = u.add_argument(
        "--credentials-file",
        metavar="FILE",
        help="KEY=VALUE file with UFM_USERNAME/UFM_PASSWORD (0600)",
    )
    add_deprecated(u, creds, "--credentials")
    u.add_argument("--insecure", action="store_true", help="do not verify UFM's TLS certificate")
    u.add_argument(
        "--ca-bundle",
        "--ca-path",
        metavar="FILE",
        help="CA bundle to verify UFM's certificate with (default the system store)",
    )
    set_examples(
        u,
        "racksmith fabric ufm event.log --topology ibnetdiscover.txt --hosts hosts.json",
        "racksmith fabric ufm --from-ufm --ufm-url https://ufm.example:443"
        " --credentials-file ufm.env --json",
        "racksmith fabric ufm event.log --topology ibnetdiscover.txt --tickets tickets/ --yes",
        "racksmith fabric ufm --repaired T-0001 --tickets tickets/",
        "racksmith fabric ufm --restore --tickets tickets/ --credentials-file ufm.env",
    )
    u.set_defaults(func=cmd_ufm)

    b = subparsers.add_parser(
        "burnin",
        help="plan ib_write_bw burn-in stages that load every link; diff counters afterwards",
        description="Plan burn-in stages from the topology, or (--before/--after) name the "
        "links whose counters grew.",
    )
    b.add_argument("--topology", required=True, metavar="FILE")
    b.add_argument(
        "--routes",
        metavar="FILE",
        help="the switches' forwarding tables (dump_lfts.sh/ibroute output or ibdiagnet2.fdbs): "
        "plan on the paths they give",
    )
    b.add_argument(
        "--adaptive-routing",
        action="store_true",
        help="adaptive routing is on (found by itself when ibdiagnet2.ar sits by the fdbs)",
    )
    b.add_argument("--seed", type=int, default=0, metavar="S")
    _hosts_arg(b)
    b.add_argument(
        "--out", metavar="DIR", help="write stage-NN/HOST.sh, burnin.yml and counters.sh"
    )
    b.add_argument("--duration", type=int, default=1800, help="seconds per stage (default 1800)")
    b.add_argument(
        "--no-gdr", action="store_true", help="host memory instead of GPUDirect (--use_cuda)"
    )
    b.add_argument("--max-stages", type=int, default=burnin.MAX_STAGES)
    b.add_argument("--before", metavar="FILE", help="counters.sh output before the burn")
    b.add_argument("--after", metavar="FILE", help="counters.sh output after the burn")
    b.add_argument(
        "--seconds", type=float, default=1800.0, help="burn time for the symbol-error limit"
    )
    b.add_argument(
        "--min-gbytes",
        type=float,
        default=1.0,
        metavar="GB",
        help="data a link direction must carry to count as loaded (default 1)",
    )
    b.add_argument(
        "--burst-window", type=float, default=triage_mod.BURST_WINDOW, help=argparse.SUPPRESS
    )
    b.add_argument("--json", action="store_true", help="JSON on stdout")
    set_examples(
        b,
        "racksmith fabric burnin --topology ibnetdiscover.txt --hosts hosts.json --out burnin",
        "racksmith fabric burnin --topology ibnetdiscover.txt --routes ibdiagnet2.fdbs --json",
        "racksmith fabric burnin --topology ibnetdiscover.txt --before before.txt"
        " --after after.txt --seconds 1800 --json",
    )
    b.set_defaults(func=cmd_burnin)


def _hosts_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hosts", metavar="FILE", help="JSON: host or service tag -> HCA GUIDs")


def _triage_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--topology", metavar="FILE", help="ibnetdiscover/iblinkinfo: peers and GUIDs of ports"
    )
    p.add_argument(
        "--max-ports",
        type=int,
        metavar="N",
        help="cap on ports isolated per run (default max(10, 0.5%% of switch ports))",
    )
    p.add_argument("--burst-count", type=int, default=triage_mod.BURST_COUNT)
    p.add_argument("--burst-window", type=float, default=triage_mod.BURST_WINDOW, metavar="SECONDS")
    p.add_argument("--before", metavar="FILE", help="perfquery counters before a burn-in")
    p.add_argument("--after", metavar="FILE", help="perfquery counters after it")
    p.add_argument("--seconds", type=float, default=1800.0, help="burn time (symbol-error limit)")
    p.add_argument("--json", action="store_true", help="JSON lines: one per port")
