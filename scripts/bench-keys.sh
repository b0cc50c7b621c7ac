#!/usr/bin/env bash
# bench-keys.sh: how rlctl audit and rlctl keys repair-ttl compare with a
# bare key listing on a large keyspace, and what latency other clients see
# meanwhile.
#
# Starts a fresh redis-server on a free loopback port, loads N limiter keys
# (default 1,000,000; BROKEN of them without TTL, default 10,000), then times
#   1. redis-cli --scan            (the bare listing; COUNT 10 where supported)
#   2. SCAN COUNT 1000             (floor: listing every key, nothing else)
#   3. SCAN 1000 + pipelined PTTL  (floor: every key's TTL read, one pipeline
#                                   per page; the issue's estimate of the
#                                   least an audit can cost)
#   4. SCAN 1000 + PTTL + MGET     (floor of audit's extra work: given a
#                                   limit, it reads every counter)
#   5. rlctl audit                 (one full pass)
#   6. rlctl keys repair-ttl       (repairs the BROKEN keys)
# and prints each time as a ratio of the listing and of the SCAN+PTTL
# floor (targets: audit <= 1.5, or within 1.5x its own floor; repair-ttl
# <= 1.1, its extra work being a TYPE and a PEXPIRE on the BROKEN keys
# alone), with the p99 PING latency
# a separate client saw during each run (target < 2 ms), measured with
# redis-benchmark in short rounds. The floors come from scripts/benchtool.
#
# Usage: scripts/bench-keys.sh            (N=100000 BROKEN=1000 for a quick run; ROUNDS, default 3)
set -euo pipefail

N=${N:-1000000}
BROKEN=${BROKEN:-10000}
cd "$(dirname "$0")/.."

for bin in redis-server redis-cli redis-benchmark go awk; do
	command -v "$bin" >/dev/null || { echo "bench-keys: $bin not found" >&2; exit 2; }
done

tmp=$(mktemp -d)
pid=
probe_pid=
# Everything that writes into $tmp is stopped and waited for before $tmp
# goes: a redis-server writes its log there as it shuts down, and an
# rm -rf racing it failed with "Directory not empty", which set -e made
# the exit status of make bench.
cleanup() {
	for p in $probe_pid $pid; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Its own session, as a daemon: see server() in bench.sh.
setsid redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
	--logfile "$tmp/redis.log" --daemonize no &
pid=$!
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
url="redis://127.0.0.1:$port"

go build -o "$tmp/rlctl" ./cmd/rlctl
go build -o "$tmp/benchtool" ./scripts/benchtool

echo "loading $N limiter keys ($BROKEN without TTL) into $url ..."
awk -v n="$N" -v broken="$BROKEN" -v list="$tmp/broken" 'BEGIN {
	every = int(n / broken); if (every < 1) every = 1
	for (i = 0; i < n; i++) {
		k = "rl:fw:{u" i "}"
		if (i % every == 0 && b < broken) {
			b++
			print k > list
			printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\n1\r\n", length(k), k
		} else {
			printf "*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\n1\r\n$2\r\nEX\r\n$4\r\n3600\r\n", length(k), k
		}
	}
}' | redis-cli -p "$port" --pipe >/dev/null
echo "keys: $(redis-cli -p "$port" dbsize)"

now() { date +%s.%N; }

# probe runs short redis-benchmark rounds until $tmp/stop exists and
# prints the worst and the median p99 (ms) of the rounds.
probe() {
	rm -f "$tmp/stop" "$tmp/p99"
	while [ ! -e "$tmp/stop" ]; do
		redis-benchmark -p "$port" -t ping -n 2000 -c 1 --csv 2>/dev/null |
			awk -F'"' '/PING_MBULK/ {print $14}' >>"$tmp/p99"
	done
}
p99s() {
	sort -n "$tmp/p99" | awk '{a[NR]=$1} END {if (NR==0) {print "n/a"; exit}; printf "worst %.3f ms, median %.3f ms over %d rounds", a[NR], a[int((NR+1)/2)], NR}'
}

timed() { # timed NAME CMD... : runs CMD with the latency probe, prints seconds
	local name=$1; shift
	probe &
	probe_pid=$!
	local t0; t0=$(now)
	"$@" >"$tmp/$name.out" 2>&1 || true
	local t1; t1=$(now)
	touch "$tmp/stop"; wait "$probe_pid" || true
	probe_pid=
	echo "$t0 $t1" | awk '{printf "%.3f", $2 - $1}'
}

scan_args=(--scan)
if redis-cli --help 2>&1 | grep -q -- '--count'; then scan_args+=(--count 10); fi

t0=$(now)
listed=$(redis-cli -p "$port" "${scan_args[@]}" | wc -l)
t1=$(now)
t_scan=$(echo "$t0 $t1" | awk '{printf "%.3f", $2 - $1}')
echo "redis-cli ${scan_args[*]}: $listed keys in ${t_scan}s"

floor() { # floor NAME MODE: a benchtool reference pass under the probe, which must see every key
	local t; t=$(timed "$1" "$tmp/benchtool" scanfloor "$2" "$url")
	local seen; seen=$(cut -d' ' -f1 "$tmp/$1.out")
	[ "$seen" = "$listed" ] || { echo "bench-keys: floor $1 saw '$seen' keys, not $listed" >&2; exit 1; }
	echo "$t"
}
# rebreak takes the TTL off the keys the load left without one (listed in
# $tmp/broken), so every round's repair-ttl has the same work (outside its
# timing).
rebreak() {
	awk '{ printf "*2\r\n$7\r\nPERSIST\r\n$%d\r\n%s\r\n", length($0), $0 }' "$tmp/broken" |
		redis-cli -p "$port" --pipe >/dev/null
}

# Each figure is the median of ROUNDS rounds, each running the floors and
# rlctl back to back, so one slow pass on a shared machine does not decide
# a ratio; the p99 PING meanwhile is over every round.
ROUNDS=${ROUNDS:-3}
t_fscan=$(floor fscan scan)
lat_fscan=$(p99s)
rm -f "$tmp"/all.*
for round in $(seq "$ROUNDS"); do
	for run in fpttl ftype audit repair; do
		case $run in
		fpttl) t=$(floor fpttl pttl) ;;
		ftype) t=$(floor ftype value) ;;
		audit) t=$(timed audit "$tmp/rlctl" audit --redis "$url" --limit 100/1h --no-progress) ;;
		repair)
			[ "$round" = 1 ] || rebreak
			t=$(timed repair "$tmp/rlctl" keys repair-ttl --redis "$url" --limit 100/1h --yes --no-progress)
			grep -q "$BROKEN of them without TTL" "$tmp/repair.out" || { echo "bench-keys: round $round's repair-ttl did not find the $BROKEN keys without TTL:" >&2; cat "$tmp/repair.out" >&2; exit 1; }
			[ "$(redis-cli -p "$port" ttl 'rl:fw:{u0}')" -gt 0 ] || { echo "bench-keys: repair-ttl did not repair rl:fw:{u0}" >&2; exit 1; }
			;;
		esac
		echo "$t" >>"$tmp/all.$run"
		cat "$tmp/p99" >>"$tmp/all.p99.$run"
	done
done
grep -h "without TTL" "$tmp/repair.out" || cat "$tmp/repair.out"
med() { sort -n "$tmp/all.$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
lat() { cp "$tmp/all.p99.$1" "$tmp/p99"; p99s; }
t_fpttl=$(med fpttl) t_ftype=$(med ftype) t_audit=$(med audit) t_repair=$(med repair)
lat_fpttl=$(lat fpttl) lat_ftype=$(lat ftype) lat_audit=$(lat audit) lat_repair=$(lat repair)
echo "rounds: $ROUNDS; each time below is the median (SCAN+PTTL $(tr '\n' ' ' <"$tmp/all.fpttl")s, audit $(tr '\n' ' ' <"$tmp/all.audit")s, repair-ttl $(tr '\n' ' ' <"$tmp/all.repair")s)"

awk -v s="$t_scan" -v fs="$t_fscan" -v fp="$t_fpttl" -v ft="$t_ftype" -v a="$t_audit" -v r="$t_repair" \
	-v lfs="$lat_fscan" -v lfp="$lat_fpttl" -v lft="$lat_ftype" -v la="$lat_audit" -v lr="$lat_repair" 'BEGIN {
	printf "\n%-28s %8s %8s %12s %14s   %s\n", "run", "seconds", "ratio", "vs SCAN+PTTL", "target", "p99 PING meanwhile"
	printf "%-28s %8.3f %8s %12.2f\n", "bare listing (redis-cli)", s, "1.00", s / fp
	printf "%-28s %8.3f %8.2f %12.2f %14s   %s\n", "floor: SCAN 1000", fs, fs / s, fs / fp, "", lfs
	printf "%-28s %8.3f %8.2f %12.2f %14s   %s\n", "floor: SCAN 1000 + PTTL", fp, fp / s, 1, "", lfp
	printf "%-28s %8.3f %8.2f %12.2f %14s   %s\n", "floor: + MGET (audit'"'"'s)", ft, ft / s, ft / fp, "", lft
	printf "%-28s %8.3f %8.2f %12.2f %14s   %s\n", "rlctl audit", a, a / s, a / fp, "<=1.50", la
	printf "%-28s %8.3f %8.2f %12.2f %14s   %s\n", "rlctl keys repair-ttl", r, r / s, r / fp, "<=1.10", lr
	printf "audit / its own floor (SCAN+PTTL+MGET): %.2f×\n", a / ft
}'
