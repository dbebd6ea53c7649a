"""``racksmith run``: the site or reprovision playbook driven through ansible-runner.

The same run as ``ansible-playbook site.yml`` (same playbooks, same ``ansible.cfg``, same
report callback), easier to watch: :mod:`racksmith.run.table` turns the event stream into hosts
per phase and state (pure, tested on recorded events), :mod:`racksmith.run.runner` starts the
run and keeps the events in the run directory, :mod:`racksmith.run.cli` is the command.
"""
