# racksmith: options every redfish_* module shares
# (racksmith.redfish.ansible_support.COMMON_ARGUMENTS).
from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  bmc:
    description: The BMC as C(HOST) or C(HOST:PORT) (exactly one BMC; no ranges).
    type: str
    required: true
  username:
    description: BMC user; default from C(username_env) or C(credentials_file).
    type: str
  password:
    description: BMC password (not logged); default from C(password_env) or C(credentials_file).
    type: str
  username_env:
    description: Environment variable with the user name.
    type: str
    default: RACKSMITH_BMC_USERNAME
  password_env:
    description: Environment variable with the password.
    type: str
    default: RACKSMITH_BMC_PASSWORD
  credentials_file:
    description: C(KEY=VALUE) file read when the environment lacks the variables.
    type: path
  ca_bundle:
    description: CA bundle to verify the BMC certificate (default system store).
    type: path
  validate_certs:
    description: Opt out of TLS verification (logged as a warning).
    type: bool
    default: true
  scheme:
    description: C(https), or C(http) for emulators.
    type: str
    default: https
    choices: [https, http]
  connect_timeout:
    description: Seconds to wait for a connection.
    type: float
    default: 5
  read_timeout:
    description: Seconds to wait for each answer.
    type: float
    default: 30
  deadline:
    description: Seconds for the whole action including read-back.
    type: float
    default: 300
"""
