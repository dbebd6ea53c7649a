"""The compiled-template cache (plugins/callback/template_cache.py, issue 25): the same results
as ansible-core without it, compiled once per run directory, never caching what fails.

Each case runs in its own Python process: the cache wraps ansible-core's AnsibleEnvironment for
the whole process, which the other unit tests must not inherit."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from racksmith.testing.plugins import REPO

PLUGIN = REPO / "plugins" / "callback" / "template_cache.py"

#: Templates and conditionals a playbook of ours uses in kind: filters, tests, lookups of
#: variables, backslashes (ansible escapes them in templates, not in conditionals), loops.
PROBE = r"""
import json, sys
from ansible._internal._templating._engine import TemplateEngine
from ansible._internal._datatag._tags import TrustedAsTemplate
from racksmith.testing.plugins import load_plugin

plugin = load_plugin(sys.argv[1])
cache = plugin.install(sys.argv[2]) if sys.argv[2] != "-" else None
trusted = TrustedAsTemplate().tag
variables = {"a": 3, "names": ["gpu01", "gpu02"], "path": "C:\\new", "nested": "{{ a * 2 }}"}
templates = [
    "{{ a + 1 }}",
    "{{ names | map('upper') | join(',') }}",
    "{{ path | regex_replace('\\\\', '/') }}",
    "{{ 'c:\\newfile' }}",
    "{% for n in names %}{{ n }}-{% endfor %}",
    "{{ nested }}",
    "plain {{ a }} text\n",
]
conditionals = ["a > 1", "names | length == 2", "'gpu01' in names", "path is match('C:')"]
out = {"templates": [], "conditionals": []}
for _ in range(2):
    engine = TemplateEngine(variables=variables)
    out["templates"].append([repr(engine.template(trusted(t))) for t in templates])
    out["conditionals"].append([engine.evaluate_conditional(trusted(c)) for c in conditionals])
if cache is not None:
    out["hits"], out["misses"] = cache.hits, cache.misses
print(json.dumps(out))
"""


def probe(tmp_path: Path, directory: str) -> dict:
    script = tmp_path / "probe.py"
    script.write_text(PROBE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(PLUGIN), directory],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_the_same_results_as_without_the_cache_and_compiled_once(tmp_path):
    plain = probe(tmp_path, "-")
    directory = tmp_path / "cache"
    directory.mkdir()
    cached = probe(tmp_path, str(directory))
    assert cached["templates"] == plain["templates"]
    assert cached["conditionals"] == plain["conditionals"]
    assert plain["templates"][0][:2] == ["4", "'GPU01,GPU02'"]
    assert plain["conditionals"][0] == [True, True, True, True]
    # the first pass compiles each template once; the second reuses every one of them
    assert cached["misses"] > 0
    assert cached["hits"] >= cached["misses"]
    files = list(directory.iterdir())
    assert len(files) == cached["misses"]


def test_a_second_process_of_the_run_reuses_what_the_first_compiled(tmp_path):
    directory = tmp_path / "cache"
    directory.mkdir()
    first = probe(tmp_path, str(directory))
    second = probe(tmp_path, str(directory))
    assert second["templates"] == first["templates"]
    assert second["conditionals"] == first["conditionals"]
    assert second["misses"] == 0  # a forked worker finds it in the run's directory
    assert second["hits"] == first["hits"] + first["misses"]


KEYS = r"""
import json, sys
from racksmith.testing.plugins import load_plugin
from ansible._internal._templating._jinja_bits import AnsibleEnvironment

key = load_plugin(sys.argv[1]).compile_key
env = AnsibleEnvironment()
base = (env, "template", "{{ a }}", True, False)
other = {
    "escape": (env, "template", "{{ a }}", False, False),
    "kind": (env, "expression:True", "{{ a }}", True, False),
    "source": (env, "template", "{{ b }}", True, False),
    "embedded": (env, "template", "{{ a }}", True, True),
    "trim": (env.overlay(trim_blocks=False), "template", "{{ a }}", True, False),
}
out = {"same": key(*base) == key(*base)}
out.update({name: key(*args) != key(*base) for name, args in other.items()})
print(json.dumps(out))
"""


def test_every_compile_setting_is_part_of_the_key(tmp_path):
    script = tmp_path / "keys.py"
    script.write_text(KEYS, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(PLUGIN)], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == dict.fromkeys(
        ("same", "escape", "kind", "source", "embedded", "trim"), True
    )


BROKEN = r"""
import json, sys
from ansible._internal._templating._engine import TemplateEngine
from ansible._internal._datatag._tags import TrustedAsTemplate
from racksmith.testing.plugins import load_plugin

if sys.argv[2] != "-":
    load_plugin(sys.argv[1]).install(sys.argv[2])
said = []
for text, conditional in (("{{ a + }}", False), ("a ==", True)):
    engine = TemplateEngine(variables={"a": 1})
    try:
        if conditional:
            engine.evaluate_conditional(TrustedAsTemplate().tag(text))
        else:
            engine.template(TrustedAsTemplate().tag(text))
    except Exception as exc:
        said.append([type(exc).__name__, str(exc).splitlines()[0]])
print(json.dumps(said))
"""


@pytest.mark.parametrize("attempt", [1, 2])
def test_a_template_that_does_not_compile_fails_as_before_and_is_not_kept(tmp_path, attempt):
    script = tmp_path / "broken.py"
    script.write_text(BROKEN, encoding="utf-8")
    directory = tmp_path / "cache"
    directory.mkdir()

    def run(where: str) -> list:
        done = subprocess.run(
            [sys.executable, str(script), str(PLUGIN), where],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)

    plain = run("-")
    for _ in range(attempt):
        assert run(str(directory)) == plain
    assert len(plain) == 2 and all(name.startswith("Ansible") for name, _ in plain)
    assert list(directory.iterdir()) == []


OFF = r"""
import jinja2
jinja2.__version__ = "3.2.0"
import sys
from racksmith.testing.plugins import load_plugin
plugin = load_plugin(sys.argv[1])
try:
    plugin.install(sys.argv[2])
except ImportError as exc:
    print("off:", exc)
from ansible._internal._templating._jinja_bits import AnsibleEnvironment
print("wrapped:", hasattr(AnsibleEnvironment, "_racksmith_cache"))
"""


def test_it_stays_off_where_jinja_is_not_the_one_it_knows(tmp_path):
    script = tmp_path / "off.py"
    script.write_text(textwrap.dedent(OFF), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(PLUGIN), str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["off: Jinja 3.2.0, not 3.1", "wrapped: False"]
