# racksmith: the attributes every racksmith module declares (check mode, diff, where it runs,
# its module_defaults group), and those of its controller-only action plugins (ACTION). Options
# live in racksmith_redfish / racksmith_maas.
from __future__ import annotations


class ModuleDocFragment:
    # Every module: what it needs and where it runs.
    DOCUMENTATION = r"""
requirements:
  - The racksmith Python package, in the Python that runs the module (normally the controller's,
    with C(ansible_python_interpreter) set to C({{ ansible_playbook_python }})).
attributes:
  check_mode:
    description: Runs in check mode and says what it would change, changing nothing.
    support: full
  platform:
    description: Where the module runs.
    support: full
    platforms: posix
    details:
      - On the controller (C(delegate_to) C(localhost)); it acts on the BMC or MAAS over HTTP(S).
"""

    # The redfish_* modules: module_defaults group; diff also in check mode (the predicted state).
    REDFISH = r"""
attributes:
  action_group:
    description: Use C(group/racksmith.core.redfish) in C(module_defaults) to set its defaults.
    support: full
    membership:
      - racksmith.core.redfish
  diff_mode:
    description: Returns the state it read before and after the change (in check mode, the one it
      would reach).
    support: full
"""

    # The maas_* modules: module_defaults group; diff of the machine record before and after.
    MAAS = r"""
attributes:
  action_group:
    description: Use C(group/racksmith.core.maas) in C(module_defaults) to set its defaults.
    support: full
    membership:
      - racksmith.core.maas
  diff_mode:
    description: Returns the MAAS machine (status, boot disk, kernel, tags...) before and after.
    support: partial
    details:
      - In check mode the "after" side is the machine as it stands; C(actions) says what would
        change.
"""

    # The action plugins that only run on the controller (role_skip, role_arguments): no
    # connection to the host, once per host, the same in check mode, nothing to diff.
    ACTION = r"""
attributes:
  action:
    description: Runs as an action plugin on the controller.
    support: full
  async:
    description: Cannot run asynchronously.
    support: none
  bypass_host_loop:
    description: Runs once for each host.
    support: none
  check_mode:
    description: Behaves the same in check mode.
    support: full
  diff_mode:
    description: Has nothing to compare.
    support: none
  platform:
    description: Runs on the controller and does not connect to the host.
    support: full
    platforms: all
"""
