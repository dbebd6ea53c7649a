"""Stand-in for the pip bootstrap script ansible-test downloads (get-pip.py).

ansible-test builds each sanity test's virtual environment without pip and fetches get-pip.py
from ci-files.testing.ansible.com, which our machines cannot reach (only PyPI and the Debian
archive are reachable). It runs the script in the new environment with pip's install arguments
(``pip==24.2 --no-setuptools --no-wheel``). This does the same with the pip wheel bundled in the
Python's own ``ensurepip``: no download but the packages ansible-test pins, from PyPI.
scripts/sanity.sh puts it where ansible-test looks for a saved copy.
"""

import ensurepip
import glob
import os
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
bundled = os.path.join(os.path.dirname(ensurepip.__file__), "_bundled")
wheels = sorted(glob.glob(os.path.join(bundled, "pip-*.whl")))
if not wheels:
    sys.exit(f"no pip wheel in {bundled}: this Python was built without ensurepip")
sys.path.insert(0, wheels[-1])

from pip._internal.cli.main import main  # noqa: E402 (importable only from the wheel)

sys.exit(main(["install", "--quiet", *args]))
