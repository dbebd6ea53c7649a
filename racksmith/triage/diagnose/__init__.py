"""When training goes wrong on the golden set: find the hung rank's host, read the MFU curve,
and plan the restart on the best hosts (issue 26).

Part of racksmith.triage (training diagnosis, as the architecture places it: it files its
tickets through the triage and ranks hosts with its golden history). One module per concern; the
analyses are pure (documents in, typed reports out) and the I/O sits at the edges:

- ``hang``: group a hung job's ranks by Python stack and by flight-recorder collective
  position, name the ranks, GPUs and hosts outside the majority and the hosts that are silent.
- ``probe``: what runs on each host (standard library only): its training processes' py-spy
  dumps, flight-recorder dumps and kernel log, as one JSON document.
- ``collect``: the hosts of an inventory and a limit, probed at once within one deadline (SSH,
  or this machine), and the health agent's quick checks on the suspects.
- ``hang_cli`` / ``cli``: ``racksmith diagnose hang`` (text, ``--json``, tickets).
- ``mfu``, ``restart``: ``racksmith diagnose mfu`` and ``racksmith restart-plan``.
"""
