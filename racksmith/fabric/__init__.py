"""InfiniBand fabric tools: topology parsing and the cabling check, UFM event triage with port
isolation through UFM's REST API, and the burn-in planner.

Parsers are pure (text in, typed objects out); I/O (files, UFM) sits in ``cli``, ``ufm`` and
``isolate``. See docs/fabric.md for the operator's view.
"""
