"""The rack report: what each phase did to each host, and where every host ended up.

Built from a run's events (the ``racksmith_report`` callback feeds it) so that a rerun's report
never mixes with an earlier one: each run writes to its own directory.
"""

from racksmith.report.model import PHASES, HostRecord, PhaseOutcome, RunReport

__all__ = ["PHASES", "HostRecord", "PhaseOutcome", "RunReport"]
