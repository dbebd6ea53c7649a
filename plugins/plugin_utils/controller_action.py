# racksmith.core: the base of the collection's controller-only action plugins (role_skip,
# role_arguments, health_verdict, maas_outcome). They decide on the controller from the host's
# variables or an earlier result, never connect to the host, behave the same in check mode and
# run once per host (not asynchronously): the four settings that say so, in one place.
from __future__ import annotations

from ansible.plugins.action import ActionBase


class ControllerAction(ActionBase):
    """An action plugin that runs only on the controller."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False
