#!/usr/bin/env bash
# One-time (and idempotent) set-up of a controller: the Debian packages the lab and tests use,
# and the project virtualenv with every Python tool pinned by constraints.txt.
# Safe to re-run: each step checks before it acts, and the venv is rebuilt only when
# pyproject.toml or constraints.txt changed.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${RACKSMITH_VENV:-.venv}
PY=${PYTHON:-python3}
APT_PKGS=(debootstrap systemd-container apt-cacher-ng zstd openssh-client iproute2 ca-certificates)

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

# racksmith.core resolves from this checkout for every ansible command run with the venv, whatever
# its ansible.cfg (tests and molecule write their own): the checkout is linked into the venv's
# ansible_collections/, the way the `ansible` package ships its collections. The link lives
# under $VENV, which every tool already skips, so nothing walks in circles through it.
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
link=$site/ansible_collections/racksmith/core
if [[ $(readlink "$link" 2>/dev/null) != "$PWD" ]]; then
  if [[ -e $link && ! -L $link ]]; then
    say "$link exists and is not a link; remove it and run again"; exit 1
  fi
  mkdir -p "$(dirname "$link")"
  ln -sfn "$PWD" "$link"
  say "linked collection racksmith.core -> $PWD"
fi
