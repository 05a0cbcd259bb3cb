#!/usr/bin/env bash
# Installs the Debian 12 packages that building, the demo and the test suites need.
# Does nothing when they are all present, so it is cheap to run before every build.
set -euo pipefail

packages=(
    build-essential cmake libgtest-dev
    postgresql-15 postgresql-server-dev-15 postgresql-15-cron postgresql-15-pgtap pgtap
    libipc-run-perl sqlsmith
)

missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
((${#missing[@]})) || exit 0

echo "installing: ${missing[*]}"
here=$(dirname "$0")
"$here/as-root.sh" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"$here/as-root.sh" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
