#!/usr/bin/env bash
# Installs the Debian 12 packages of one set, those missing only, quietly:
#   scripts/install-deps.sh [demo|test]
# demo: what building and installing the extension and `make demo` need (PostgreSQL 15, its
# server headers, a C++ compiler, and the libraries of inbox-relay). test (the default,
# `make deps`): that and everything the test suites need (`make test`): CMake and GoogleTest,
# pg_cron, pgTAP, IPC::Run, sqlsmith, RabbitMQ, Prometheus's promtool, the examples' clients,
# mmdebstrap for the other majors' chroots.
# Does nothing when they are all present, so it is cheap to run before every build. apt's output
# goes to a log file, shown when apt fails.
set -euo pipefail

set_name=${1:-test}
# make builds inbox-relay too: libpq, rabbitmq-c, OpenSSL and libcurl.
demo_packages=(build-essential postgresql-15 postgresql-server-dev-15 libpq-dev librabbitmq-dev
    libssl-dev libcurl4-openssl-dev)
case $set_name in
demo)
    purpose="the demo needs"
    packages=("${demo_packages[@]}")
    ;;
test)
    purpose="the build and the tests need"
    packages=(
        "${demo_packages[@]}" cmake libgtest-dev postgresql-15-cron postgresql-15-pgtap pgtap
        libipc-run-perl sqlsmith
        rabbitmq-server python3-psycopg python3-pika libpqxx-dev
        prometheus
        mmdebstrap # the chroots of the other majors (scripts/major-chroot.sh)
    )
    ;;
*)
    echo "usage: $0 [demo|test]" >&2
    exit 2
    ;;
esac

missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
# The Node example needs node and npm; a Node.js installed from elsewhere (which brings its own
# npm) will do, and Debian's npm could not be installed beside it.
if [ "$set_name" = test ]; then
    command -v npm >/dev/null || missing+=(nodejs npm)
fi
((${#missing[@]})) || exit 0

here=$(dirname "$0")
log=$(mktemp "${TMPDIR:-/tmp}/inbox-install-deps.XXXXXX.log")
echo "== installing what $purpose, with apt (its output: $log):"
echo "   ${missing[*]}"
if ! { "$here/as-root.sh" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
    "$here/as-root.sh" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    tail -n 25 "$log" >&2
    echo "apt could not install them (all of its output: $log)" >&2
    exit 1
fi
rm -f "$log"

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
