"""The collector-freeze callback (plugins/callback/gc_freeze.py, issue 25): a task start freezes
the main process's objects, a forked worker freezes what it inherits, a play start collects
frozen cycles once they have doubled, and nothing reachable is ever freed.

Each case runs in its own Python process: freezing and the at-fork hook are process-wide, which
the other unit tests must not inherit."""

from __future__ import annotations

import json
import subprocess
import sys

from racksmith.testing.plugins import REPO

PLUGIN = REPO / "plugins" / "callback" / "gc_freeze.py"

PROBE = r"""
import gc, json, os, sys, weakref
from racksmith.testing.plugins import load_plugin

plugin = load_plugin(sys.argv[1])
seen = {"before": gc.get_freeze_count()}
callback = plugin.CallbackModule()

class Node:
    pass

kept = Node(); kept.me = kept          # a cycle still referenced
lost = Node(); lost.me = lost          # a cycle that becomes garbage while frozen
lost_ref = weakref.ref(lost)
callback.v2_playbook_on_task_start(None, False)
seen["after_task"] = gc.get_freeze_count()
del lost
gc.collect()
seen["frozen_cycle_kept_by_collect"] = lost_ref() is not None

young = Node()
read, write = os.pipe()
pid = os.fork()
if pid == 0:  # a worker: what it inherits is frozen, the collector leaves it alone
    os.write(write, json.dumps(gc.get_freeze_count()).encode())
    os._exit(0)
os.waitpid(pid, 0)
seen["worker"] = json.loads(os.read(read, 100))

for n in range(3 * seen["after_task"]):  # the frozen objects more than double
    setattr(young, f"a{n}", [n])
callback.v2_playbook_on_task_start(None, False)
callback.v2_playbook_on_play_start(None)
seen["frozen_cycle_freed_at_play"] = lost_ref() is None
seen["kept_alive"] = kept.me is kept
seen["after_play"] = gc.get_freeze_count()
callback.v2_playbook_on_play_start(None)  # nothing doubled since: no second collection
seen["after_second_play"] = gc.get_freeze_count()
print(json.dumps(seen))
"""


def test_freezes_at_task_start_in_workers_and_collects_between_plays() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(PLUGIN)],
        capture_output=True, text=True, check=False, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["before"] == 0
    assert seen["after_task"] > 0
    # frozen garbage waits for the play start ...
    assert seen["frozen_cycle_kept_by_collect"] is True
    # ... a worker froze what it inherited (the young objects created since the task start too)
    assert seen["worker"] > seen["after_task"]
    # ... and is freed there once the frozen objects doubled; what is referenced stays
    assert seen["frozen_cycle_freed_at_play"] is True
    assert seen["kept_alive"] is True
    assert seen["after_second_play"] == seen["after_play"]
