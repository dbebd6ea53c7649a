#!/usr/bin/env bash
# The sanity lane: `ansible-test sanity` on the collection racksmith.core as it ships, i.e. the
# tarball `ansible-galaxy collection build` makes, installed into a scratch
# ansible_collections/racksmith/core (ansible-test only runs inside such a tree).
#
# Usage: scripts/sanity.sh [ansible-test sanity options]
#   default: every sanity test, on Python 3.11, in this venv (--local)
#   e.g.     scripts/sanity.sh --test validate-modules
#
# No containers and nothing from ansible's CI file server (unreachable here): ansible-test builds
# one virtual environment per test under ~/.ansible/test/venv (once; reused while ansible-core
# stays the same) with the exact pins it wants, from PyPI. Two shims make that work offline of
# its file server:
#  - its pip bootstrap script is scripts/ansible_test_get_pip.py (pip from ensurepip's wheel);
#  - validate-modules imports each module to read its argument spec, and ours come from the
#    racksmith package, so that test's environment also sees this venv (a .pth file). The
#    import test's environment does not: it proves each module loads without racksmith.
# The result is the last line: "sanity: ok ..." or "sanity: FAILED ...", and the exit status.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${RACKSMITH_VENV:-.venv}
export PATH="$ROOT/$VENV/bin:$PATH"
unset ANSIBLE_CONFIG  # ansible-test brings its own settings; the project's must not leak in
PY=3.11
# Every sanity test ansible-test has (23 in ansible-core 2.19): all of them run offline here and
# the whole set takes seconds once the environments exist, so none is left out.
t0=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/racksmith-sanity.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1. The collection as it ships. The checkout is also linked into the venv as racksmith.core
#    (scripts/setup.sh); scanning sys.path off makes sure the install looks only at the tarball.
#    --no-deps: sanity tests our collection alone; galaxy.yml's dependencies (ansible.posix,
#    community.general) cannot be resolved offline and are not what is under test here.
ansible-galaxy collection build --output-path "$work/dist" . >/dev/null
tarball=$(echo "$work"/dist/racksmith-core-*.tar.gz)
ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false ANSIBLE_COLLECTIONS_PATH="$work/collections" \
  ansible-galaxy collection install --offline --force --no-deps \
  -p "$work/collections" "$tarball" >/dev/null
cd "$work/collections/ansible_collections/racksmith/core"

# 2. ansible-test's pip bootstrap, where it looks for a saved copy (named by its pip version).
pip_version=$(python - <<'EOF'
import pathlib, re, ansible_test
path = pathlib.Path(ansible_test.__file__).parent / "_internal/python_requirements.py"
found = re.search(r"pip='([0-9.]+)'", path.read_text())
print(found.group(1) if found else "")
EOF
)
[[ -n $pip_version ]] || { echo "sanity: FAILED: no pip version in ansible-test's python_requirements.py"; exit 1; }
cache=$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py
mkdir -p "$(dirname "$cache")"
cmp -s "$ROOT/scripts/ansible_test_get_pip.py" "$cache" || cp "$ROOT/scripts/ansible_test_get_pip.py" "$cache"

args=("$@")

# 3. Build (or reuse) the test environments, then let validate-modules' environment see racksmith.
ansible-test sanity --local --python "$PY" --prime-venvs "${args[@]}" >"$work/prime.log" 2>&1 \
  || { cat "$work/prime.log"; echo "sanity: FAILED preparing ansible-test's environments"; exit 1; }
purelib=$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for site in "$HOME"/.ansible/test/venv/sanity.validate-modules/"$PY"/*/lib/python"$PY"/site-packages; do
  if [[ -d $site ]]; then echo "import site; site.addsitedir('$purelib')" >"$site/racksmith-venv.pth"; fi
done

# 4. The tests.
version=$(python -c 'import json; print(json.load(open("MANIFEST.json"))["collection_info"]["version"])')
if ansible-test sanity --local --python "$PY" --color no "${args[@]}"; then
  echo "sanity: ok, racksmith.core $version, ${args[*]:-every test} in $((SECONDS - t0))s"
else
  echo "sanity: FAILED on racksmith.core $version (see the errors above) after $((SECONDS - t0))s"
  exit 1
fi
