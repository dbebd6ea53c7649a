"""The repository root is the Ansible collection racksmith.core: its metadata, what every module
declares (author, attributes, FQCN doc fragments), the import guard a host without racksmith
sees, the ``diff`` the modules return, and playbooks/roles calling everything by its FQCN.

Modules are run the way Ansible runs them on a host: as a Python script reading its arguments
from a JSON file, with ``ansible_collections.racksmith.core`` importable (a link to this
checkout in a temporary tree) and, for the guard, a ``racksmith`` that cannot be imported.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.module_utils.compat.version import LooseVersion
from ansible.playbook.block import Block
from ansible.playbook.handler import Handler
from ansible.playbook.task import Task
from ansible.release import __version__ as ansible_core_version
from packaging.specifiers import SpecifierSet

import racksmith
from racksmith.lab.bmc.behaviour import Faults, Settings
from racksmith.lab.bmc.server import create_farm
from racksmith.lab.maassim.clock import SimClock
from racksmith.lab.maassim.server import running
from racksmith.lab.maassim.state import Store
from racksmith.lab.spec import Server
from racksmith.testing.plugins import load_plugin

REPO = Path(__file__).resolve().parents[3]
#: Action plugins; a module of the same name is their documentation only (as for
#: ansible.builtin.debug): it never runs on a host, needs no racksmith and joins no group.
ACTIONS = sorted((REPO / "plugins" / "action").glob("*.py"))
#: The modules that run (on the controller, through racksmith).
MODULES = sorted(
    p
    for p in (REPO / "plugins" / "modules").glob("*.py")
    if p.stem not in {a.stem for a in ACTIONS}
)
GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())
RUNTIME = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
FQCN = "racksmith.core"


def _module_utils():
    """plugins/module_utils/racksmith_common.py, loaded from its file (it needs only ansible)."""
    return load_plugin("plugins/module_utils/racksmith_common.py")


MACHINE_DIFF_KEYS = _module_utils().MACHINE_DIFF_KEYS
USER, PASSWORD = "root", "Pw-collection-7Hq2x-unit"  # distinctive: grep-able in any output


def module_doc(path: Path, name: str = "DOCUMENTATION") -> Any:
    """A module's own DOCUMENTATION (before fragments) or EXAMPLES, read without importing it."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == name:
            return yaml.safe_load(node.value.value)
    raise AssertionError(f"{path.name}: no {name}")


def fragment_sections() -> dict[str, dict[str, Any]]:
    """racksmith_attributes' sections by the name modules use (``racksmith_attributes.maas``)."""
    tree = ast.parse((REPO / "plugins" / "doc_fragments" / "racksmith_attributes.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    sections = {}
    for node in cls.body:
        if isinstance(node, ast.Assign):
            name = node.targets[0].id
            key = "" if name == "DOCUMENTATION" else "." + name.lower()
            sections[f"{FQCN}.racksmith_attributes{key}"] = yaml.safe_load(node.value.value)
    return sections


def group_of(module: str) -> str:
    return next(group for group, members in RUNTIME["action_groups"].items() if module in members)


# -- metadata ---------------------------------------------------------------------------------


def test_galaxy_yml_names_the_collection_at_the_package_version():
    assert (GALAXY["namespace"], GALAXY["name"]) == ("racksmith", "core")
    assert GALAXY["version"] == racksmith.__version__
    for key in ("readme", "authors", "description", "license"):
        assert GALAXY[key], key
    assert (REPO / GALAXY["readme"]).is_file()
    # the tarball leaves out the pip package, local state and the repository's own tooling
    for ignored in (".venv", "runs", ".lab", "racksmith", "tests/fixtures", "tests/unit"):
        assert ignored in GALAXY["build_ignore"], ignored


def test_runtime_requires_this_ansible_core_and_groups_every_module_by_its_prefix():
    assert ansible_core_version in SpecifierSet(RUNTIME["requires_ansible"])
    assert LooseVersion(ansible_core_version) >= LooseVersion("2.19")
    names = {p.stem for p in MODULES}
    groups = RUNTIME["action_groups"]
    assert set(groups) == {"maas", "redfish"}
    for group, members in groups.items():
        assert members == sorted(n for n in names if n.startswith(group + "_")), group
    assert {m for members in groups.values() for m in members} == names


# -- what every module declares ------------------------------------------------------------------


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_module_declares_author_attributes_and_fqcn_fragments(path):
    doc = module_doc(path)
    assert doc["module"] == path.stem
    assert doc["author"]
    fragments = doc["extends_documentation_fragment"]
    assert all(f.startswith(FQCN + ".") for f in fragments), fragments
    group = group_of(path.stem)
    sections = fragment_sections()
    assert f"{FQCN}.racksmith_attributes" in fragments
    assert f"{FQCN}.racksmith_attributes.{group}" in fragments
    attributes: dict[str, Any] = dict(doc.get("attributes") or {})
    for name in fragments:
        attributes.update(sections.get(name, {}).get("attributes", {}))
    assert {"check_mode", "diff_mode", "platform", "action_group"} <= set(attributes)
    assert attributes["check_mode"]["support"] == "full"  # every module supports check mode
    assert attributes["diff_mode"]["support"] in ("full", "partial")
    assert attributes["action_group"]["membership"] == [f"{FQCN}.{group}"]
    assert "supports_check_mode=True" in path.read_text()


@pytest.mark.parametrize("path", ACTIONS, ids=lambda p: p.stem)
def test_action_is_documented_by_its_module_and_needs_no_racksmith(path):
    doc_path = REPO / "plugins" / "modules" / path.name
    doc = module_doc(doc_path)
    assert doc["module"] == path.stem and doc["author"]
    attributes: dict[str, Any] = dict(doc.get("attributes") or {})
    sections = fragment_sections()
    for name in doc.get("extends_documentation_fragment") or []:
        attributes.update(sections.get(name, {}).get("attributes", {}))
    assert attributes["action"]["support"] == "full"
    assert attributes["check_mode"]["support"] == "full"
    tree = ast.parse(doc_path.read_text())
    assert not [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.Import))], (
        "documentation only: the action plugin does the work"
    )
    for code in (doc_path, path):
        imported = {
            (n.module or "").split(".")[0]
            for n in ast.walk(ast.parse(code.read_text()))
            if isinstance(n, ast.ImportFrom)
        }
        assert "racksmith" not in imported, code


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_module_imports_racksmith_only_inside_the_guard(path):
    tree = ast.parse(path.read_text())
    guarded: set[int] = set()
    for node in tree.body:  # with RacksmithImports() as RACKSMITH: (module_utils/racksmith_common)
        if isinstance(node, ast.With) and any(
            getattr(item.context_expr, "func", None) is not None
            and getattr(item.context_expr.func, "id", None) == "RacksmithImports"
            and getattr(item.optional_vars, "id", None) == "RACKSMITH"
            for item in node.items
        ):
            guarded |= {id(n) for n in ast.walk(node)}
    imports = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "racksmith"
    ]
    assert imports, "a racksmith module that does not use racksmith?"
    assert all(id(n) in guarded for n in imports), (
        "racksmith imported outside the RacksmithImports guard"
    )
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    first = main.body[0]
    assert ast.unparse(first) == "RACKSMITH.require()"


def test_racksmith_imports_guard_keeps_an_import_error_and_raises_anything_else():
    guard_type = _module_utils().RacksmithImports
    with guard_type() as guard:
        import racksmith  # noqa: F401  (present here: nothing kept)
    assert guard.error is None
    with guard_type() as guard:
        import racksmith_absent_for_the_guard_test  # noqa: F401
    assert guard.error.startswith("Traceback")
    assert "racksmith_absent_for_the_guard_test" in guard.error
    with pytest.raises(ZeroDivisionError), guard_type():
        1 / 0  # noqa: B018  (not an ImportError: raised as usual)


# -- running modules ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def collections_root(tmp_path_factory) -> Path:
    """``ansible_collections/racksmith/core`` -> this checkout, as an installed collection is."""
    root = tmp_path_factory.mktemp("collections")
    (root / "ansible_collections" / "racksmith").mkdir(parents=True)
    (root / "ansible_collections" / "racksmith" / "core").symlink_to(REPO)
    return root


def run_quietly(cmd: list[str], *, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """Run ``cmd`` with this environment minus any ANSIBLE_*/RACKSMITH_* settings, plus ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "RACKSMITH_"))}
    return subprocess.run(
        cmd, capture_output=True, text=True, cwd=cwd, env={**clean, **env}, timeout=120, check=False
    )


def run_module(
    name: str, args: dict[str, Any], *, pythonpath: list[Path], tmp: Path
) -> tuple[int, dict[str, Any], str]:
    args_file = tmp / f"{name}-args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    module = REPO / "plugins" / "modules" / f"{name}.py"
    done = run_quietly(
        [sys.executable, str(module), str(args_file)],
        cwd=tmp,
        PYTHONPATH=os.pathsep.join(map(str, pythonpath)),
    )
    return done.returncode, json.loads(done.stdout), done.stdout + done.stderr


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_module_on_a_python_without_racksmith_says_what_is_missing(
    path, tmp_path, collections_root
):
    shadow = tmp_path / "shadow" / "racksmith"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('racksmith is not installed here')\n")
    # the options of whichever service, a password among them: unchecked, and never echoed
    args = {
        "bmc": "127.0.0.1:1",
        "pxe_mac": "aa:bb:cc:dd:ee:ff",
        "password": PASSWORD,
        "maas_api_key": PASSWORD,
        "_ansible_check_mode": True,
    }
    rc, result, output = run_module(
        path.stem, args, pythonpath=[shadow.parent, collections_root], tmp=tmp_path
    )
    assert rc == 1 and result["failed"]
    assert result["msg"].startswith("Failed to import the required Python library (racksmith)")
    assert sys.executable in result["msg"]  # says which interpreter lacks it
    assert PASSWORD not in output


@pytest.fixture
def bmc(tmp_path):
    """One emulated iDRAC (plain HTTP on loopback), its clock 300 s fast."""
    server = Server(index=1, name="gpu01", model="hgx-h200-8gpu", ip="127.0.0.1", bmc_port=0)
    farm = create_farm(
        [server],
        username=USER,
        password=PASSWORD,
        ports=[0],
        settings=Settings(power_delay=0.2),
        faults={"gpu01": Faults(clock_skew=300.0)},
    )
    farm.start()
    yield farm.bmcs[0]
    farm.stop()


def test_redfish_modules_return_diff_in_check_mode_and_for_real(bmc, tmp_path, collections_root):
    conn = {
        "bmc": f"127.0.0.1:{bmc.port}",
        "scheme": "http",
        "username": USER,
        "password": PASSWORD,
        "_ansible_diff": True,
    }

    def run(name: str, check: bool, **args: Any) -> dict[str, Any]:
        rc, result, output = run_module(
            name,
            {**conn, **args, "_ansible_check_mode": check},
            pythonpath=[collections_root],
            tmp=tmp_path,
        )
        assert rc == 0, output
        assert PASSWORD not in output
        return result

    dry = run("redfish_power", True, state="on", poll=0.1)
    assert dry["changed"] and bmc.power_state() == "Off"
    assert dry["diff"] == {"before": {"power_state": "Off"}, "after": {"power_state": "On"}}
    done = run("redfish_power", False, state="on", poll=0.1, wait=10)
    assert done["diff"] == {"before": {"power_state": "Off"}, "after": {"power_state": "On"}}
    again = run("redfish_power", False, state="on", poll=0.1)
    assert not again["changed"]
    assert again["diff"]["before"] == again["diff"]["after"] == {"power_state": "On"}

    dry = run("redfish_boot", True)
    assert dry["diff"]["after"]["enabled"] == "Once" and dry["diff"]["after"]["target"] == "Pxe"
    assert dry["diff"]["before"] != dry["diff"]["after"]
    done = run("redfish_boot", False)
    assert done["diff"]["before"] == dry["diff"]["before"]
    assert done["diff"]["after"] == done["after"]

    dry = run("redfish_clock", True, correct=True)
    assert dry["changed"] and dry["diff"]["before"]["skew_seconds"] > 250
    assert dry["diff"]["after"]["skew_seconds"] == 0.0
    assert set(dry["diff"]["before"]) == {"bmc_time", "skew_seconds"}
    done = run("redfish_clock", False, correct=True)
    assert done["changed"] and abs(done["diff"]["after"]["skew_seconds"]) <= 5


def test_maas_machine_returns_diff(tmp_path, collections_root):
    """The record before (none) and after, the same on a rerun; check mode changes nothing."""
    store = Store(clock=SimClock(3000.0), seed=7)
    with running(store) as server:
        base = {
            "maas_url": server.url,
            "maas_api_key": store.admin_key(),
            "state": "present",
            "pxe_mac": "AA:BB:CC:00:11:22",
            "hostname": "gpu01",
            "power_type": "manual",
            "_ansible_diff": True,
        }

        def run(check: bool) -> dict[str, Any]:
            rc, result, output = run_module(
                "maas_machine",
                {**base, "_ansible_check_mode": check},
                pythonpath=[collections_root],
                tmp=tmp_path,
            )
            assert rc == 0, output
            assert store.admin_key() not in output
            return result

        dry = run(True)
        assert dry["changed"] and dry["diff"]["before"] == {}
        created = run(False)
        assert created["changed"] and created["diff"]["before"] == {}
        after = created["diff"]["after"]
        assert after["hostname"] == "gpu01" and after["status_name"]
        assert "power_pass" not in after and set(after) <= set(MACHINE_DIFF_KEYS)
        again = run(False)
        assert not again["changed"] and again["diff"]["before"] == again["diff"]["after"] == after


GROUP_PLAYBOOK = """\
- name: Connection settings once, for every redfish_* module
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/racksmith.core.redfish:
      bmc: "127.0.0.1:{port}"
      scheme: http
      username: root
      password: "{{{{ lookup('ansible.builtin.env', 'TEST_BMC_PASSWORD') }}}}"
  tasks:
    - name: Power on, check mode
      racksmith.core.redfish_power: {{state: "on", poll: 0.1}}
      check_mode: true
      register: power
    - name: Read the clock
      racksmith.core.redfish_clock: {{}}
      register: clock
    - name: Both took the group's settings
      ansible.builtin.assert:
        that:
          - power is changed and power.diff.after.power_state == 'On'
          - clock.skewed and clock.bmc == '127.0.0.1:{port}'
"""


def test_module_defaults_group_sets_the_redfish_connection_once(bmc, tmp_path, collections_root):
    playbook = tmp_path / "group.yml"
    playbook.write_text(GROUP_PLAYBOOK.format(port=bmc.port))
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    done = run_quietly(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            *("-i", "localhost,", "-c", "local", "--diff", str(playbook)),
            *("-e", "ansible_python_interpreter={{ ansible_playbook_python }}"),
        ],
        cwd=tmp_path,
        ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(collections_root),
        ANSIBLE_HOME=str(tmp_path / "home"),
        ANSIBLE_NOCOLOR="1",
        TEST_BMC_PASSWORD=PASSWORD,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "ok=3" in done.stdout and "failed=0" in done.stdout
    assert PASSWORD not in done.stdout + done.stderr


# -- playbooks and roles call everything by its FQCN -------------------------------------------

TASK_KEYWORDS = (
    set(Task.fattributes) | set(Handler.fattributes) | set(Block.fattributes) | {"local_action"}
)


def _tasks(items: Any, where: str):
    for item in items or []:
        if not isinstance(item, dict):
            continue
        nested = [k for k in ("block", "rescue", "always") if k in item]
        if nested:
            for key in nested:
                yield from _tasks(item[key], where)
            continue
        yield item, where


def _actions(path: Path):
    """(action name, where) for every task, handler, role and imported playbook in a file."""
    data = yaml.safe_load(path.read_text())
    rel = str(path.relative_to(REPO))
    if not isinstance(data, list):  # vars files, molecule.yml, argument specs ...
        return
    plays = [d for d in data if isinstance(d, dict) and ("hosts" in d or "import_playbook" in d)]
    if plays:
        for play in plays:
            if "import_playbook" in play:
                yield "ansible.builtin.import_playbook", rel  # the keyword itself
            for role in play.get("roles") or []:
                yield (role["role"] if isinstance(role, dict) else role), f"{rel} (roles)"
            for key in ("pre_tasks", "tasks", "post_tasks", "handlers"):
                for task, where in _tasks(play.get(key), rel):
                    yield from _task_actions(task, where)
    else:  # a task file
        for task, where in _tasks(data, rel):
            yield from _task_actions(task, where)


def _task_actions(task: dict, where: str):
    names = [k for k in task if k not in TASK_KEYWORDS and not k.startswith("with_")]
    if "action" in task or "local_action" in task:
        spec = task.get("action") or task.get("local_action")
        names.append(spec["module"] if isinstance(spec, dict) else spec.split()[0])
    for name in names:
        yield name, f"{where}: {task.get('name', '(unnamed)')}"


def ansible_files() -> list[Path]:
    files = [REPO / "site.yml", *sorted((REPO / "playbooks").rglob("*.yml"))]
    for role in sorted((REPO / "roles").iterdir()):
        for sub in ("tasks", "handlers", "molecule"):
            files += sorted((role / sub).rglob("*.yml"))
    return files


@pytest.mark.parametrize(
    "path",
    MODULES + [REPO / "plugins" / "modules" / a.name for a in ACTIONS],
    ids=lambda p: p.stem,
)
def test_module_examples_call_it_by_its_fqcn(path):
    actions = [
        name
        for task, _ in _tasks(module_doc(path, "EXAMPLES"), path.name)
        for name, _ in _task_actions(task, "")
    ]
    assert f"{FQCN}.{path.stem}" in actions
    assert all(name.count(".") >= 2 for name in actions), actions


def test_every_task_role_and_module_is_called_by_its_fqcn():
    bare = [
        f"{where}: {name}"
        for path in ansible_files()
        for name, where in _actions(path)
        if name.count(".") < 2
    ]
    assert not bare, (
        "called by a bare name (use ansible.builtin.*, racksmith.core.*):\n" + "\n".join(bare)
    )
