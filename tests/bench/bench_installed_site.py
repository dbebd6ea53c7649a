"""Benchmark: ``ansible-playbook racksmith.core.site`` from an empty directory that holds only
the built tarball's installation and a site's ansible.cfg, against a generated lab rack (issue
27: "installed, it does not run").

1. ``ansible-galaxy collection build`` of the checkout, installed with the collections
   galaxy.yml declares (offline, from the `ansible` package's copies) into the bench's own
   collections directory; nothing from the checkout is on any Ansible path
   (``ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false``, the checkout's venv link unseen);
2. a rack of ``--servers`` (default 4, ``--quick`` 1) without faults, its inventory and the
   bench_site lab (rslab5, /var/lib/racksmith/lab-site: clear of the demo lab), started fresh;
3. the whole flow by name, the run directory under the empty directory's runs/ (the report
   callback enabled by its collection name), then ``racksmith lab check-run`` on it.

Prints the install and lab-up times, the run's wall time, its report summary and the check-run
verdict; exit 1 when the playbook
failed, the report or the run summary is missing, or check-run disagrees. Root and the lab
(``flock /tmp/racksmith-lab.lock``) are needed; the lab is torn down at the end.

    sudo flock /tmp/racksmith-lab.lock .venv/bin/python tests/bench/bench_installed_site.py --quick
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from racksmith.run.runner import CALLBACK

sys.path.insert(0, str(Path(__file__).parent))
from bench_site import LAB, Bench

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WORK = Path("/tmp/racksmith-bench-installed")

#: A site's ansible.cfg for the installed collection (docs/collection.md, "A site's
#: ansible.cfg"): the report callback and the inventory plugins by name, fail closed.
SITE_CFG = f"""\
[defaults]
callbacks_enabled = {CALLBACK}
forks = 32
interpreter_python = auto_silent
inject_facts_as_vars = False
fact_caching = memory
retry_files_enabled = False

[inventory]
enable_plugins = racksmith.core.redfish, racksmith.core.maas, constructed, yaml, ini, host_list
unparsed_is_failed = True
any_unparsed_is_failed = True
ignore_patterns = ^rack\\.yml$

[ssh_connection]
pipelining = True
"""


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv[:4])} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done


def install(env: dict[str, str]) -> Path:
    """The tarball and its declared collections in WORK/collections; WORK/site, empty but for
    the site's ansible.cfg."""
    shutil.rmtree(WORK, ignore_errors=True)
    site = WORK / "site"
    site.mkdir(parents=True)
    (site / "ansible.cfg").write_text(SITE_CFG)
    _run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(WORK),
          str(REPO)], env, site)  # fmt: skip
    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    deps = [
        str(Path(yaml.__file__).resolve().parents[1] / "ansible_collections" / Path(*n.split(".")))
        for n in yaml.safe_load((REPO / "galaxy.yml").read_text())["dependencies"]
    ]
    # only the bench's directory is looked at: the checkout is linked into the venv as
    # racksmith.core, and the `ansible` package's copies would count as already installed
    only = dict(env, ANSIBLE_COLLECTIONS_PATH=str(WORK / "collections"),
                ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false")  # fmt: skip
    _run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "-p",
          str(WORK / "collections"), str(WORK / f"racksmith-core-{version}.tar.gz"), *deps],
         only, site)  # fmt: skip
    installed = WORK / "collections" / "ansible_collections"
    for name in ("racksmith/core", "ansible/posix", "community/general"):
        if not (installed / name / "MANIFEST.json").is_file():
            raise RuntimeError(f"{installed / name}: not installed")
    return site


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 server (CI smoke)")
    parser.add_argument("--servers", type=int, help="rack size (default 4, quick 1)")
    args = parser.parse_args(argv)
    # quick: one server shows the installed collection runs the whole flow; each more costs
    # the CI lane a configure phase's worth of CPU (bench_site --quick covers faults)
    servers = args.servers or (1 if args.quick else 4)
    if os.geteuid() != 0:
        print("bench_installed_site: the lab needs root", file=sys.stderr)
        return 1
    lab_dir = LAB["lab_dir"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "MAAS_"))}
    env = {k: v for k, v in env.items() if k not in ("RACKSMITH_RUN_DIR", "RACKSMITH_RUNS_DIR")}
    inventory = WORK / "inventory"
    env.update(
        PATH=f"{BIN}:{os.environ.get('PATH', '')}",
        RACKSMITH_RACK=str(inventory / "rack.yml"),
        RACKSMITH_LAB_DIR=str(lab_dir),
        ANSIBLE_HOME=str(WORK / "ansible-home"),
        ANSIBLE_NOCOLOR="1",
    )
    env.pop("RACKSMITH_BMC_USERNAME", None)
    env.pop("RACKSMITH_BMC_PASSWORD", None)
    t0 = time.monotonic()
    site = install(env)
    print(f"installed racksmith.core and its dependencies in {time.monotonic() - t0:.1f} s")
    bench = Bench(inventory=inventory, lab_dir=lab_dir, env=dict(env))
    bench.racksmith(
        "lab", "rack", "--servers", str(servers), "--faults", "0", "--seed", "7",
        "--bridge", LAB["bridge"], "--prefix", LAB["prefix"],
        "--bmc-base-port", str(LAB["bmc_base_port"]), "--maas-listen", LAB["maas_listen"],
        "--inventory", str(inventory), "--lab-dir", str(lab_dir), quiet=True,
    )  # fmt: skip
    problems: list[str] = []
    try:
        up = bench.fresh()
        print(f"lab up (fresh) in {up:.1f} s; {servers} servers")
        run_env = dict(
            bench.env,
            ANSIBLE_CONFIG=str(site / "ansible.cfg"),
            ANSIBLE_COLLECTIONS_PATH=str(WORK / "collections"),
            ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
            ANSIBLE_SHOW_CUSTOM_STATS="1",
        )
        t0 = time.monotonic()
        done = subprocess.run(
            [str(BIN / "ansible-playbook"), "racksmith.core.site", "-i", f"{inventory}/",
             # the lab's GPU stand-in replays captures kept in the checkout, not in the
             # tarball (the role's default is relative to the checkout's playbooks/)
             "-e", f"lab_gpu_standin_capture={REPO / 'tests' / 'fixtures' / 'h200-x2'}"],
            cwd=site, env=run_env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        wall = time.monotonic() - t0
        (WORK / "site.log").write_text(done.stdout + done.stderr)
        if "template_cache is off" in done.stdout + done.stderr:  # the collection's callback
            problems.append("racksmith.core.template_cache did not load from the collection")
        print(f"ansible-playbook racksmith.core.site: rc {done.returncode}, {wall:.0f} s"
              f" (log {WORK / 'site.log'})")  # fmt: skip
        if done.returncode:
            problems.append(f"racksmith.core.site exited {done.returncode}: {done.stdout[-1500:]}")
        runs = (
            [p for p in (site / "runs").glob("*") if p.is_dir()] if (site / "runs").is_dir() else []
        )
        if len(runs) != 1 or not (runs[0] / "report.json").is_file():
            problems.append(f"expected one run with report.json under {site / 'runs'}: {runs}")
        else:
            report = json.loads((runs[0] / "report.json").read_text())
            report["summary"] = report.get("summary") or {}
            print(f"report: {report['summary']} ({runs[0]})")
            check = subprocess.run(
                [str(BIN / "racksmith"), "lab", "check-run", str(runs[0])],
                cwd=site, env=bench.env, capture_output=True, text=True, check=False,
            )  # fmt: skip
            print(f"check-run: {(check.stdout.strip().splitlines() or ['?'])[-1]}")
            if check.returncode:
                problems.append(f"check-run: {check.stdout[-1500:]}{check.stderr[-500:]}")
        stats = done.stdout.partition("CUSTOM STATS:")[2]
        if "racksmith.run-summary/v1" not in stats:
            problems.append("no racksmith run summary in the custom stats (set_stats)")
        elif runs and f'"golden": {report["summary"].get("GOLDEN", 0)},' not in stats:
            problems.append(f"the run summary disagrees with report.json: {stats[:600]}")
        else:
            print(f"set_stats: {' '.join(stats.split())[:300]}")
    except (RuntimeError, OSError, ValueError) as exc:
        problems.append(f"could not run: {exc}")
    finally:
        out = bench.racksmith("lab", "down", check=False, quiet=True)
        if "racksmith lab down:" in out:
            problems.append(f"lab down reported problems: {out[-500:]}")
    for problem in problems:
        print(f"FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
