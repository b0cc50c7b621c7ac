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
	# discover's tests run nginx's limit_req (in /usr/sbin, off a user's PATH)
	command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
	;;
bench)
	command -v redis-server >/dev/null || need+=(redis-server)
	command -v redis-benchmark >/dev/null || need+=(redis-tools)
	command -v wrk >/dev/null || need+=(wrk)
	command -v nginx >/dev/null || need+=(nginx-light)
	[ -x /usr/bin/time ] || need+=(time) # CPU per decision (section 1b)
	;;
esac
if [ ${#need[@]} -gt 0 ]; then
	echo "installing: ${need[*]}" >&2
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ "${1:-test}" = bench ]; then
	# vegeta, the paced HTTP reference (section 2b), from the Go module
	# proxy at a fixed version; and the modules scripts/clientbench compares
	# rlctl's clients with (section 1c and 2c), a module of its own.
	gobin=$(go env GOPATH)/bin
	# (vegeta -version is empty in a go install build: ask the binary's
	# module version instead.)
	go version -m "$gobin/vegeta" 2>/dev/null | grep -q 'mod.*vegeta/v12.*v12\.13\.0' ||
		go install github.com/tsenart/vegeta/v12@v12.13.0
	(cd scripts/clientbench && go mod download)
fi
# Debian's packages may start redis-server, redis-sentinel and nginx
# services; they are the machine's, and stay as they are: the tests start
# their own servers on free loopback ports and never use the default ones.
