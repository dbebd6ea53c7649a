"""Test-only stdout callback: every task result, filed under the host and task that produced it.

Why not ``ansible.posix.json``: under the free strategy it looks a result's task up by the
``v2_runner_on_start`` it recorded, and files a result it finds none for under whichever task
any host started last, so one host's list could hold another host's task. Here each record
is named from the result's own host and task, so a host's list is exactly what that host ran,
in order.

Output: one JSON document, ``{"results": [{"host", "task", "result"}...], "stats": {...}}``.
"""

from __future__ import annotations

import json

from ansible.parsing.ajson import AnsibleJSONEncoder
from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "results_by_host"

    def __init__(self, display=None):
        super().__init__(display)
        self.records: list[dict] = []

    def _record(self, result, **flags) -> None:
        body = {**result._result, **flags, "action": result._task.action}
        self.records.append(
            {"host": result._host.get_name(), "task": result._task.get_name(), "result": body}
        )

    def v2_runner_on_ok(self, result):
        self._record(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, failed=True)

    def v2_runner_on_skipped(self, result):
        self._record(result, skipped=True)

    def v2_runner_on_unreachable(self, result):
        self._record(result, unreachable=True)

    def v2_playbook_on_stats(self, stats):
        summary = {host: stats.summarize(host) for host in sorted(stats.processed)}
        document = {"results": self.records, "stats": summary}
        self._display.display(json.dumps(document, cls=AnsibleJSONEncoder, sort_keys=True))
