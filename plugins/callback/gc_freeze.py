"""Ansible callback: keep Python's cyclic garbage collector off the objects every worker shares.

Why (issue 25, docs/fleet.md "The collector and the forks"): ansible-playbook forks one worker
per host and task, and a forked worker shares its parent's memory page by page until either
writes to a page. Python's cyclic garbage collector writes to every object it traverses (the
reference counts of a collection's candidates), so a collection in a worker, or in the main
process while workers run, copies the pages of objects nobody changed. On a no-change rerun of
a 4-server lab rack (2026-12-02, the controller pinned to a core of its own) that was a third
of the workers' CPU: 15.0 and 14.4 CPU-s without this, 8.0 with it; the main process 8.1-8.4
against 7.2, the controller as a whole 35 against 26.5 CPU-s.

What it does: at the start of each task (before its workers fork) the main process moves every
object it holds into the collector's permanent generation (``gc.freeze()``), and each forked
worker does the same with what it inherits, so collections only look at objects created after
that. Objects are still freed when their last reference goes; only garbage in reference
cycles among frozen objects waits. So that this cannot grow without bound over a long run, at
the start of a play, when no worker is running, the main process collects everything once
whenever the frozen objects have doubled since the last such collection.
"""

from __future__ import annotations

DOCUMENTATION = """
    name: gc_freeze
    type: aggregate
    short_description: keep Python's garbage collector off the memory forked workers share
    description:
      - At each task start, before its workers fork, moves the main process's objects into
        Python's permanent generation (gc.freeze), and has each forked worker do the same, so a
        collection does not copy the pages every worker shares.
      - At a play start, when no worker runs, collects everything once whenever the frozen
        objects have doubled since the last such collection, so cycles are still freed.
    requirements:
      - CPython 3.7 or later (gc.freeze)
"""

import gc
import os

from ansible.plugins.callback import CallbackBase

#: Whether this process already registered the worker-side freeze (once per process).
_AT_FORK = False


def freeze_in_workers() -> None:
    """Every process forked from this one freezes what it inherits (once per process)."""
    global _AT_FORK
    if not _AT_FORK:
        os.register_at_fork(after_in_child=gc.freeze)
        _AT_FORK = True


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "racksmith.core.gc_freeze"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        freeze_in_workers()
        self._collected_at = 0  # frozen objects right after the last full collection

    def v2_playbook_on_play_start(self, play):
        """Between plays no worker runs: collect once when the frozen objects have doubled."""
        if gc.get_freeze_count() > 2 * max(self._collected_at, 1):
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self._collected_at = gc.get_freeze_count()

    def v2_playbook_on_task_start(self, task, is_conditional):
        gc.freeze()

    def v2_playbook_on_handler_task_start(self, task):
        gc.freeze()
