#!/usr/bin/env bash
# make bench: rlctl's figures beside the reference tools', each pair run in
# this one command on this machine, printed with their ratio. Everything
# runs on loopback and stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
RLCTL=${RLCTL:-bin/rlctl}
work=$(mktemp -d)
pids=()
# The servers are stopped and waited for before $work goes: one still
# shutting down writes into it, and rm -rf racing it fails ("Directory not
# empty"), which set -e makes the script's exit status.
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# The servers under test run in a session of their own, as a daemon would.
# With the kernel's autogroup scheduling (on by default), a server left in
# this script's session shares one CPU share with the load generator, per
# thread: a multi-threaded client then takes CPU from the server that a
# single-threaded one (redis-benchmark) leaves it, and the comparison
# measures the scheduler instead of the clients.
server() { setsid "$@" & }

echo "== 1. redis-fixed-window decisions/s: rlctl (50 gateways, every decision recorded) vs redis-benchmark (same EVALSHA, 50 clients)"
echo "   and vs a bare go-redis loop (50 goroutines, same EVALSHA, nothing recorded): the target assumes that loop reaches redis-benchmark"
rport=$(free_port)
server redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --daemonize no >"$work/redis.log" 2>&1
pids+=($!)
for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
go run ./scripts/benchtool lua redis-fixed-window >"$work/fw.lua"
sha=$(redis-cli -p "$rport" SCRIPT LOAD "$(cat "$work/fw.lua")")
# Five rounds, each running the two back to back for about 5 s apiece:
# on a shared 2-core machine one pair can be off by 20% either way, so the
# median of the rounds' ratios is the figure.
ratios=()
loops=()
for round in 1 2 3 4 5; do
	rb=$(redis-benchmark -p "$rport" -c 50 -n 250000 -r 1000 -q EVALSHA "$sha" 1 'rl:fw:{__rand_int__}' 100000000 60000 1 | tr '\r' '\n' | grep -oE '[0-9.]+ requests per second' | tail -1 | cut -d' ' -f1)
	rm -rf "$work/r1"
	"$RLCTL" verify scripts/bench/redis-fixed-window.yaml --redis "redis://127.0.0.1:$rport" --no-progress --report-dir "$work/r1" --format json >/dev/null 2>"$work/v1.err" || { cat "$work/v1.err"; exit 1; }
	read -r req bad < <(go run ./scripts/benchtool rate "$work"/r1/*/report.json)
	rl=$(awk -v r="$req" 'BEGIN { printf "%.0f", r / 5 }')
	ratios+=("$(ratio "$rl" "$rb")")
	lp=$(go run ./scripts/benchtool loop "redis://127.0.0.1:$rport" "$sha")
	loops+=("$(ratio "$lp" "$rb")")
	echo "   round $round: redis-benchmark: $rb req/s   rlctl: $rl decisions/s (errors+dropped: $bad)   ratio: ${ratios[-1]}×   bare go-redis loop: $lp req/s, ${loops[-1]}×"
done
echo "   median ratio: $(printf '%s\n' "${ratios[@]}" | sort -n | sed -n 3p)× (target ≥ 1.0); bare go-redis loop: $(printf '%s\n' "${loops[@]}" | sort -n | sed -n 3p)×"

echo "== 1b. CPU µs per decision (user+sys of the whole process / decisions answered): rlctl closed and open model vs redis-benchmark per request"
echo "   open model: a 1,000,000/s schedule far above what Redis serves, so most requests are dropped (tallied, not recorded);"
echo "   paced: the open model at 20,000/s, below what Redis serves, nearly nothing dropped: its own cost without overload"
# cpu_us FILE N: the user+sys seconds /usr/bin/time wrote to FILE, in µs per one of N.
cpu_us() { awk -v n="$2" '{ if (n > 0) printf "%.1f", ($1 + $2) * 1e6 / n; else print "n/a" }' "$1"; }
/usr/bin/time -f '%U %S' -o "$work/rb.cpu" redis-benchmark -p "$rport" -c 50 -n 250000 -r 1000 -q EVALSHA "$sha" 1 'rl:fw:{__rand_int__}' 100000000 60000 1 >/dev/null
rb_us=$(cpu_us "$work/rb.cpu" 250000)
for model in closed open paced; do
	yaml=scripts/bench/redis-fixed-window.yaml
	[ "$model" = closed ] || yaml=scripts/bench/redis-fixed-window-$model.yaml
	rm -rf "$work/rc"
	/usr/bin/time -f '%U %S %M' -o "$work/rl.cpu" "$RLCTL" verify "$yaml" --redis "redis://127.0.0.1:$rport" --no-progress --report-dir "$work/rc" --format json >/dev/null 2>"$work/vc.err" || { cat "$work/vc.err"; exit 1; }
	read -r req bad < <(go run ./scripts/benchtool rate "$work"/rc/*/report.json)
	rl_us=$(cpu_us "$work/rl.cpu" $((req - bad)))
	rss=$(awk '{ printf "%.0f", $3 / 1024 }' "$work/rl.cpu")
	echo "   $model model: rlctl $rl_us µs/decision ($((req - bad)) decisions, $bad dropped or errors, peak RSS ${rss} MB)   redis-benchmark: $rb_us µs/request   ratio: $(ratio "$rl_us" "$rb_us")×"
done
redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true

echo "== 2. HTTP requests/s at 50 connections: rlctl (every response recorded) vs wrk, against nginx on loopback"
hport=$(free_port)
mkdir -p "$work/www" && echo ok >"$work/www/index.html"
# mktemp -d is private (0700): nginx's worker would answer 403 to everything.
chmod 755 "$work" "$work/www" && chmod 644 "$work/www/index.html"
cat >"$work/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx.err;
events { worker_connections 1024; }
http {
  access_log off;
  server { listen 127.0.0.1:$hport; root $work/www; keepalive_requests 1000000; }
}
NGINX
server nginx -c "$work/nginx.conf"
pids+=($!)
sleep 0.5
sed "s/PORT/$hport/" scripts/bench/http.yaml >"$work/http.yaml"
# Three rounds, the median ratio the figure, for the same reason as above.
ratios=()
for round in 1 2 3; do
	wk=$(wrk -t 2 -c 50 -d 5s "http://127.0.0.1:$hport/index.html" | awk '/Requests\/sec/ { print $2 }')
	rm -rf "$work/r2"
	"$RLCTL" verify "$work/http.yaml" --no-progress --report-dir "$work/r2" --format json >/dev/null 2>"$work/v2.err" || { cat "$work/v2.err"; exit 1; }
	read -r req bad < <(go run ./scripts/benchtool rate "$work"/r2/*/report.json)
	rl=$(awk -v r="$req" 'BEGIN { printf "%.0f", r / 5 }')
	ratios+=("$(ratio "$rl" "$wk")")
	echo "   round $round: wrk: $wk req/s   rlctl: $rl req/s (errors+dropped: $bad)   ratio: ${ratios[-1]}×"
done
echo "   median ratio: $(printf '%s\n' "${ratios[@]}" | sort -n | sed -n 2p)× (target ≥ 0.8)"

echo "== 3. analysis of 10 million history records (target ≤ 2 s, ≤ 48 bytes/record at peak)"
go test -run '^$' -bench 'Analyze10M' -benchtime 1x ./internal/analysis/ | grep -E 'Benchmark|ns/op'

echo "== 3b. analysis of 50 million records: spilled to disk (a soak run's) vs held in memory (target ≤ 2× the time, RSS under 300 MB)"
go test -c -o "$work/analysis.test" ./internal/analysis/
for mode in disk memory; do
	# The soak child generates the records, analyses them and prints its
	# analysis time and its peak resident memory (VmHWM).
	out=$(cd "$work" && RLCTL_SOAK_RECORDS=50000000 RLCTL_SOAK_MODE=$mode TMPDIR="$work" ./analysis.test)
	secs=$(grep -oE 'analysis_s=[0-9.]+' <<<"$out" | cut -d= -f2)
	rss=$(grep -oE 'peak_rss_mb=[0-9]+' <<<"$out" | cut -d= -f2)
	eval "secs_$mode=$secs"
	echo "   $mode: analysis ${secs}s, peak RSS ${rss} MB"
done
echo "   spilled / in memory time: $(ratio "$secs_disk" "$secs_memory")× (target ≤ 2)"

if [ -x scripts/bench-keys.sh ]; then
	echo "== 4. audit and repair-ttl over 1,000,000 limiter keys vs redis-cli --scan"
	scripts/bench-keys.sh
fi
