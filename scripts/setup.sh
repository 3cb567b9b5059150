#!/usr/bin/env bash
# Set up everything wattlog needs on a fresh Debian machine, idempotently.
#   scripts/setup.sh            Python venv (.venv) with wattlog and its extras
#   scripts/setup.sh --servers  also the Debian packages the tests start for real
#                               (prometheus, alertmanager, pushgateway, postgresql, chromium,
#                               victoria-metrics, node, slurm-wlm, munge and pgbouncer)
#                               and Grafana's schema types for the dashboard type check
#                               (npm packages in .grafana-schema/, see tests/dashboards/grafana_types.py)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"
DEBIAN_PACKAGES=(
  prometheus prometheus-alertmanager prometheus-pushgateway postgresql chromium victoria-metrics
  slurm-wlm munge  # tests/integration/test_slurm.py: slurmctld + slurmd on loopback (~15 s to install)
  pgbouncer  # tests/integration/test_pgbouncer.py: transaction pooling in front of the test PostgreSQL
)
# Node.js for the dashboard type check: only where no `npm` is on the PATH. Machines that ship
# NodeSource's nodejs (which carries npm) must not get Debian's npm: the two conflict in apt.
command -v npm >/dev/null || DEBIAN_PACKAGES+=(nodejs npm)
GRAFANA_SCHEMA_DIR="${WATTLOG_GRAFANA_SCHEMA_DIR:-.grafana-schema}"
NPM_PACKAGES=("@grafana/schema@13" "typescript@5")

missing_debian_packages() {
  local pkg
  for pkg in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

install_servers() {
  local missing
  missing=$(missing_debian_packages)
  [ -z "$missing" ] && return 0
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: $missing" >&2; exit 1; }
    sudo="sudo"
  fi
  echo "setup: installing Debian packages: $(echo $missing)"
  $sudo apt-get update -qq
  # --no-install-recommends: prometheus would otherwise pull node-exporter, smartmontools, ipmitool...
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

install_grafana_schema() {
  [ -f "$GRAFANA_SCHEMA_DIR/node_modules/@grafana/schema/package.json" ] \
    && [ -f "$GRAFANA_SCHEMA_DIR/node_modules/typescript/package.json" ] && return 0
  echo "setup: installing ${NPM_PACKAGES[*]} into $GRAFANA_SCHEMA_DIR (dashboard type check)"
  mkdir -p "$GRAFANA_SCHEMA_DIR"
  [ -f "$GRAFANA_SCHEMA_DIR/package.json" ] || echo '{"private": true}' > "$GRAFANA_SCHEMA_DIR/package.json"
  (cd "$GRAFANA_SCHEMA_DIR" && npm install --no-audit --no-fund --silent "${NPM_PACKAGES[@]}")
}

install_python() {
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  local stamp="$VENV/.wattlog-installed"
  local want
  want=$(cat pyproject.toml scripts/constraints.txt | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  echo "setup: installing wattlog and its Python dependencies into $VENV (first time: ~2 min)"
  "$VENV/bin/pip" install -q --upgrade pip
  # The extras bound torch from below only; the constraints file gives this venv the CPU build.
  "$VENV/bin/pip" install -q -c scripts/constraints.txt -e ".[all,test]"
  echo "$want" > "$stamp"
}

case "${1:-}" in
  --servers) install_servers; install_grafana_schema; install_python ;;
  "") install_python ;;
  *) echo "usage: $0 [--servers]" >&2; exit 2 ;;
esac
