#!/usr/bin/env bash
# One-time (and idempotent) set-up of a controller: the Debian packages the lab and tests use,
# and the project virtualenv with every Python tool pinned by constraints.txt.
# Safe to re-run: each step checks before it acts, and the venv is rebuilt only when
# pyproject.toml or constraints.txt changed.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${RACKSMITH_VENV:-.venv}
PY=${PYTHON:-python3}
# chromium: the rack report's HTML page is tested in a real headless browser.
# gnupg: the lab signs its LAB STAND-IN apt repository.
# qemu-system-x86, fdisk (sfdisk): the lab's VM lane (`racksmith lab vm`, TCG guests, GPT disks).
APT_PKGS=(debootstrap systemd-container apt-cacher-ng zstd openssh-client iproute2 ca-certificates chromium gnupg
  qemu-system-x86 fdisk)

say() { printf '[setup] %s\n' "$*"; }

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    say "need root to install: ${missing[*]}"; exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d keeps the package's default apt-cacher-ng (listening everywhere) from starting.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi

stamp="$VENV/.racksmith-stamp"
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  say "virtualenv $VENV is up to date"
else
  say "building virtualenv $VENV (about a minute on a fresh machine)"
  [[ -d $VENV ]] || "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -c constraints.txt -e '.[dev]'
  echo "$want" > "$stamp"
fi

# racksmith.core is this checkout, in two places (scripts/setup.sh is the one that makes them):
#  - .collections/ansible_collections/racksmith/core -> the repository root. ansible.cfg lists
#    .collections first, ahead of ~/.ansible/collections, where molecule's prerun installs a copy
#    of the collection that would otherwise shadow the checkout (and go stale).
#  - the venv's site-packages/ansible_collections/racksmith/core -> the repository root, the way
#    the `ansible` package ships its collections: any ansible command run from the venv finds it,
#    whatever its ansible.cfg (tests and molecule scenarios write their own).
# Both are ignored by git and skipped by the linters, so nothing walks in circles through them.
link_collection() {  # link_collection LINK TARGET
  if [[ -e $1 && ! -L $1 ]]; then
    say "$1 exists and is not a link; remove it and run again"; exit 1
  fi
  if [[ $(readlink "$1" 2>/dev/null) != "$2" ]]; then
    mkdir -p "$(dirname "$1")"
    ln -sfn "$2" "$1"
    say "linked collection racksmith.core: $1 -> $2"
  fi
}
link_collection .collections/ansible_collections/racksmith/core ../../..
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
link_collection "$site/ansible_collections/racksmith/core" "$PWD"
