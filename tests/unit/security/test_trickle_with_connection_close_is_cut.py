"""Found in issue 22's round: an answer with ``Connection: close`` escaped the watchdog.

http.client drops ``conn.sock`` once it has read the headers of such an answer (the response
owns the socket from then on), so the watchdog of racksmith.transport found no socket to cut
and a trickled body ran to its end: 21 s of a 2 s deadline with a scripted BMC whose answers
all say ``Connection: close`` (many embedded HTTP servers do). The socket is now kept apart.
"""

from __future__ import annotations

import time

from sec_support import MARGIN

from racksmith import transport
from racksmith.testing.hostile import Route


def test_trickled_body_with_connection_close_ends_at_the_budget(hostile):
    body = b'{"Members": [' + b" " * 2000 + b"]}"
    server = hostile("routes", routes={"/": Route(body=body, trickle=True)}, interval=0.05)
    started = time.monotonic()
    try:
        transport.request(
            transport.session(), "GET", f"{server.url}/x", budget=1.0, connect_timeout=1.0
        )
    except transport.BudgetExpired as exc:
        assert exc.stage == "reading the body"
    else:
        raise AssertionError("a 100 s trickle was read whole")
    assert time.monotonic() - started < 1.0 + MARGIN
