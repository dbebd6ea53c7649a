"""``racksmith run [site|reprovision] -i INVENTORY``: the playbooks through ansible-runner.

``ansible-playbook site.yml`` stays the primary interface; this is the same run (same
playbooks, ``ansible.cfg`` and report callback), with a live table of hosts per phase and
state, the event stream kept in the run directory, the rack report at the end, and
ansible-playbook's exit status. From the checkout it runs the checkout's playbooks; installed
(pip and the collection), the collection's by name (``racksmith.core.site``) from the current
directory, with that directory's ``ansible.cfg`` if any.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from racksmith.errors import UsageError
from racksmith.optionspec import add_deprecated, seconds
from racksmith.run.runner import (
    DEFAULT_INTERVAL,
    EVENTS_FILE,
    RunRequest,
    execute,
    in_checkout,
    repo_root,
)

#: Playbooks by name, relative to the repository.
PLAYBOOKS = {"site": "site.yml", "reprovision": "playbooks/reprovision.yml"}
#: The same, as the installed collection names them.
COLLECTION_PLAYBOOKS = {"site": "racksmith.core.site", "reprovision": "racksmith.core.reprovision"}
#: The merge of a sliced run (racksmith.run.slices), in the checkout and in the collection.
MERGE_PLAYBOOK = "playbooks/merge.yml"
COLLECTION_MERGE = "racksmith.core.merge"
#: Selections that are the whole inventory (the reprovision playbook refuses them too).
_WHOLE = frozenset({"all", "*", "bmc_ok"})

_EPILOG = """examples:
  racksmith run site -i inventory/lab/
  racksmith run site -i inventory/site/ --tags discover,enlist --run-dir runs/rack7
  racksmith run reprovision -i inventory/site/ --limit gpu-r07-u12,gpu-r07-u14
  racksmith run site -i inventory/site/ --slices 4
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("playbook", choices=sorted(PLAYBOOKS), help="which flow to run")
    parser.add_argument(
        "-i", "--inventory", required=True, metavar="INVENTORY", help="inventory path"
    )
    parser.add_argument("-l", "--limit", metavar="HOSTS", help="as ansible-playbook --limit")
    parser.add_argument(
        "-t", "--tags", metavar="PHASES", help="phases to run, comma-separated (--tags)"
    )
    parser.add_argument(
        "--run-dir",
        metavar="DIR",
        help="where the run's events, report and progress go (default runs/<time>-<pid>/ of"
        " the checkout, or of the current directory when racksmith is installed)",
    )
    progress = parser.add_argument(
        "--progress-interval",
        dest="interval",
        type=seconds,
        default=DEFAULT_INTERVAL,
        metavar="SECONDS",
        help=f"seconds between two progress lines (default {DEFAULT_INTERVAL:g})",
    )
    add_deprecated(parser, progress, "--interval")
    parser.add_argument(
        "--slices",
        type=_slices,
        default=0,
        metavar="K",
        help="site only: discover to deploy in one process, then configure and validate in K"
        " processes at once (hosts dealt round-robin), then one merge (docs/fleet.md,"
        " 'Sliced runs'); default: the whole run in one process",
    )
    parser.set_defaults(func=run)


def _slices(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a number of slices, 1 or more: {value!r}")
    return number


def _request(args: argparse.Namespace) -> RunRequest:
    root = repo_root()
    playbook: Path | str
    config: Path | None
    if in_checkout(root):
        playbook, config, runs = root / PLAYBOOKS[args.playbook], root / "ansible.cfg", root
        if not playbook.is_file():
            raise UsageError(f"run: {playbook} not found in the checkout")
    else:  # installed: the collection's playbook, from here, with this site's ansible.cfg
        playbook, runs = COLLECTION_PLAYBOOKS[args.playbook], Path.cwd()
        env_config = os.environ.get("ANSIBLE_CONFIG")
        config = Path(env_config).resolve() if env_config else None
    if args.playbook == "reprovision":
        selected = {part.strip() for part in (args.limit or "").split(",") if part.strip()}
        if not selected or selected & _WHOLE:
            raise UsageError(
                "run reprovision erases hosts: select them explicitly with --limit HOST[,HOST...]"
            )
    inventory = Path(args.inventory)
    if "," not in args.inventory and not inventory.exists():
        raise UsageError(f"run: inventory {args.inventory}: no such file or directory")
    if args.run_dir:
        run_dir = Path(args.run_dir)
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        # the report callback's runs_dir, as the environment sets it, else runs/
        base = Path(os.environ.get("RACKSMITH_RUNS_DIR") or runs / "runs")
        run_dir = base / f"{stamp}-{os.getpid()}"
    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"run: --run-dir {run_dir}: not a directory")
    return RunRequest(
        playbook=playbook,
        inventory=str(inventory.resolve()) if inventory.exists() else args.inventory,
        run_dir=run_dir.resolve(),
        limit=args.limit,
        tags=args.tags,
        ansible_config=config,
        interval=args.interval,
    )


def run(args: argparse.Namespace) -> int:
    try:
        import ansible_runner  # noqa: F401  (checked before anything is started)
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"racksmith run needs ansible-runner (missing module {exc.name!r}): "
            "pip install 'ansible-runner>=2.4,<3'"
        ) from exc
    request = _request(args)
    slices = getattr(args, "slices", 0)
    if slices:
        outcome = _run_sliced(args, request, slices)
    else:
        outcome = execute(request, sys.stdout, tty=sys.stdout.isatty())
    if outcome.report_text:
        print(outcome.report_text)
    else:
        print(f"no rack report in {outcome.run_dir} (the run ended before it)", file=sys.stderr)
    print(f"events: {outcome.events}")
    print(f"run: {outcome.status}, rc={outcome.rc} ({outcome.run_dir})")
    return outcome.rc


def _run_sliced(args: argparse.Namespace, request, slices: int):
    from racksmith.run.slices import execute_sliced

    if args.playbook != "site":
        raise UsageError("run --slices: only the site flow is sliced (reprovision is one process)")
    if args.tags:
        raise UsageError(
            "run --slices runs the whole flow (discover to deploy, then the slices);"
            " --tags picks phases of one process: leave one of them out"
        )
    merge = COLLECTION_MERGE if request.by_name else repo_root() / MERGE_PLAYBOOK
    outcome, plan = execute_sliced(request, slices, sys.stdout, merge_playbook=merge)
    dealt = ", ".join(f"{name}: {len(hosts)}" for name, hosts in plan["slices"].items())
    print(f"sliced run: prepare rc={plan['prepare']}; hosts per slice: {dealt or '-'}")
    return outcome


__all__ = ["EVENTS_FILE", "PLAYBOOKS", "configure", "run"]
