#!/usr/bin/env bash
# Installs what `make test` or `make bench` needs, only when missing.
set -euo pipefail
need=()
case "${1:-test}" in
test)
	command -v redis-server >/dev/null || need+=(redis-server)
	command -v redis-cli >/dev/null || need+=(redis-tools)
	command -v redis-sentinel >/dev/null || need+=(redis-sentinel)
	command -v chromium >/dev/null || need+=(chromium)
	command -v openssl >/dev/null || need+=(openssl)
	;;
bench)
	command -v redis-server >/dev/null || need+=(redis-server)
	command -v redis-benchmark >/dev/null || need+=(redis-tools)
	command -v wrk >/dev/null || need+=(wrk)
	command -v nginx >/dev/null || need+=(nginx-light)
	;;
esac
if [ ${#need[@]} -gt 0 ]; then
	echo "installing: ${need[*]}" >&2
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
# The packages start system services; tests start their own servers.
if command -v systemctl >/dev/null && [ "$(id -u)" = 0 ]; then
	systemctl stop redis-server redis-sentinel 2>/dev/null || true
fi
