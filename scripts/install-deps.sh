#!/usr/bin/env bash
# Installs the Debian 12 packages that building, the demo and the test suites need.
# Does nothing when they are all present, so it is cheap to run before every build.
set -euo pipefail

packages=(
    build-essential cmake libgtest-dev
    postgresql-15 postgresql-server-dev-15 postgresql-15-cron postgresql-15-pgtap pgtap
    libipc-run-perl sqlsmith
    rabbitmq-server python3-psycopg python3-pika libpqxx-dev
    prometheus
    mmdebstrap # the chroots of the other majors (scripts/major-chroot.sh)
)

missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
# The Node example needs node and npm; a Node.js installed from elsewhere (which brings its own
# npm) will do, and Debian's npm could not be installed beside it.
command -v npm >/dev/null || missing+=(nodejs npm)
((${#missing[@]})) || exit 0

echo "installing: ${missing[*]}"
here=$(dirname "$0")
"$here/as-root.sh" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"$here/as-root.sh" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"

# The broker suite runs a private RabbitMQ node of its own; the service that the package starts
# (listening on every interface, as does the epmd it brings) is not needed, so when we have just
# installed it, it is stopped and disabled.
if [[ " ${missing[*]} " == *" rabbitmq-server "* ]] && [ -d /run/systemd/system ]; then
    "$here/as-root.sh" systemctl disable --now rabbitmq-server.service epmd.socket epmd.service \
        >/dev/null 2>&1 || true
fi
# Likewise Prometheus: the monitoring test only needs its promtool, to check the alert rules.
if [[ " ${missing[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
    "$here/as-root.sh" systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
