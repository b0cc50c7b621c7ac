# rlctl — make targets. `make test` works on a fresh Debian machine: it
# installs what the tests need (redis-server, redis-sentinel, chromium, nginx).
GO      ?= go
BIN     ?= bin/rlctl
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/rlctl/rlctl/internal/cli.Version=$(VERSION)

.PHONY: build test demo bench fmt lint deps-test deps-go deps-bench clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rlctl

# deps-test installs Debian's Redis (server, CLI, Sentinel), Chromium
# (headless report checks) and nginx (discover's tests start it, on a free
# port, for its limit_req) when they are missing, and fetches the Go
# modules. It leaves the machine's own Redis and nginx services alone.
deps-test: deps-go
	@./scripts/deps.sh test

# deps-go fetches every module the build, the tests and the cross-platform
# vet need. A plain build never fetches those only one platform uses (cobra
# needs one more module on Windows), so without this the Windows vet below
# would reach for the network in the middle of `make test`.
deps-go:
	$(GO) list -deps -test ./... >/dev/null
	GOOS=darwin $(GO) list -deps -test ./... >/dev/null
	GOOS=windows $(GO) list -deps -test ./... >/dev/null
	$(GO) list -deps tool >/dev/null

deps-bench:
	@./scripts/deps.sh bench

# SUITE, the built-in suite's end-to-end run, is tested without the race
# detector, as the binary users run is built, and starts once it is
# compiled, beside everything else (a go test of its own, in the
# background). Its compile comes first, alone: compiled at once beside the
# race build, the two took a fifth more CPU and time than one after the
# other (more compilers than cores). It is two
# suite runs of a minute side by side that mostly pace: 13 s of CPU here,
# 26 s under the race detector. Race-built, its timing-sensitive figures
# missed beside the other tests (a leasing p50 past 1ms, a failover
# ceiling, schedules not kept), so it ran last, alone, for that minute.
# Without the race detector it kept them beside two busy loops, and its
# failover scenario beside eight. On a fresh clone its minute falls in the
# race build, and it passed there four times in four; with the build
# cache warm it runs beside verify, cli and discover, and one run in eleven
# missed there: the real-Redis suite's sliding-window boundary shots went
# unmeasured (Redis's answers came late, which rlctl does not count as
# its own busyness). The code it runs is raced by the packages' own tests
# (verify, cli, traffic), and `go test -race ./scenarios` on its own
# passes too. Its build is the
# module without the race detector, the flags of the Dockerfile's binary
# (CGO_ENABLED=0, -trimpath), so that binary's test and analysis's soak
# child then reuse it.
# Once deps-test has fetched the modules, the commands run with the module
# proxy off: a test run never needs the network.
OFFLINE := GOPROXY=off
# FIRST_TESTS start in this order, before the trivial packages: go test
# starts packages in the order given, three at a time (-p 3 below). The
# longest go first, so the short ones fill in at the end instead of the
# longest running alone; then the short ones that do work.
# verify and cli keep both cores busy, so the third slot goes to those that
# mostly wait (discover: 48s for 7s of CPU, then redisconn and
# fault/deploy), and analysis (18s of CPU in 10s) comes once verify is done.
# COMPILE_FIRST: every package the race tests need is compiled before any
# test runs (go list -export compiles without linking), so on a fresh
# clone the compiler never takes the cores from a race-built
# timing-sensitive test (SUITE, above, runs beside it).
FIRST_TESTS := ./internal/verify ./internal/cli ./internal/discover ./internal/redisconn \
	./internal/fault/deploy ./internal/analysis ./internal/limiter ./internal/keyspace ./internal/report \
	./internal/history ./internal/target/scripttarget ./internal/rundir ./internal/hotpath \
	./internal/fault/toxiproxy ./internal/arch ./internal/target/httptarget ./internal/traffic \
	./internal/redistest ./internal/gateway ./internal/redistest/thirdgw ./internal/calmtest
SUITE := ./scenarios
# -trimpath on vet, list and test: without it a package's directory is
# part of Go's cache keys, so a clone at a new path recompiles every rlctl
# package (about two minutes here) though nothing in them changed.
# The two things the tests build without the race detector, the
# Dockerfile's static binary (cli's docker test and scripts) and
# analysis's soak child, are not compiled here: the tests build them at
# idle CPU priority, one at a time (internal/idletest), in the cores the
# tests leave, and find most of the module already compiled by SUITE's
# build. Compiled here first they were the whole module again, about two
# minutes of a cold run in which no test could start.
# TOXIPROXY is the server the fault tests start (internal/redistest/toxitest),
# go.mod's tool, which verify's tests need at once. It is compiled as the
# Dockerfile's binary is (toxitest builds it the same way), so it shares
# that build's standard library and modules. go tool -n, used before,
# takes no -trimpath: it compiled the standard library a third time (40 s
# of a cold run here).
TOXIPROXY := github.com/Shopify/toxiproxy/v2/cmd/server
# -p 3: three test binaries at once on two cores. Most packages mostly
# wait (on windows, timeouts, servers starting), so two left the cores
# about half idle (3m31s of CPU in 4m03s here); three took the run to
# about 3 minutes.
# NOEXITSLEEP: a race-enabled binary that exits 0 sleeps a second first
# (the race detector's atexit_sleep_ms, so other threads may still report
# a race), and every test binary and every race-built rlctl a test runs
# paid it. A race found is still reported and still exits 66. The
# caller's own GORACE comes after, so it wins.
NOEXITSLEEP := GORACE="atexit_sleep_ms=0 $$GORACE"
# -ldflags="-s -w": the test binaries, linked afresh on every cold run,
# carry no DWARF and no ELF symbol table. Nothing here reads either: stack
# traces and the race detector's reports name functions and lines from
# the Go runtime's own tables, which stay. Without DWARF, the 45 links
# took 73 CPU-s on a cold cache here; without the symbol table too, 61.
# BUILDFLAGS, for every build make test starts and every go command the
# tests run (toxiproxy, the Dockerfile's binary, the soak child), so all
# of them share one cache:
# - the compiler writes no DWARF either. The race build alone on an empty
#   cache took 313 CPU-s (161 s) without it against 367 (189 s) with it
#   here, mean of two pairs.
# - two client libraries' largest packages, go-redis and rueidis's
#   command builders, are compiled without inlining (-l). Their thousands
#   of small methods made them the two longest compiles of a cold run;
#   neither is where a test's time goes, and the binaries users run
#   (make build, the Dockerfile's) inline as before.
# The caller's own GOFLAGS come after, so they win.
NOINLINE := -dwarf=false -l
BUILDFLAGS := GOFLAGS="-gcflags=all=-dwarf=false \
	'-gcflags=github.com/redis/go-redis/v9=$(NOINLINE)' \
	'-gcflags=github.com/redis/rueidis/internal/cmds=$(NOINLINE)' $$GOFLAGS"
# -vet=off: go test's vet, run on every package on a cold cache, took
# 50 CPU-s here in the middle of the timing-sensitive tests. make lint runs
# the whole of go vet (a superset of go test's checks) on every platform,
# and CI runs it after make test.
test: deps-test
	$(OFFLINE) $(BUILDFLAGS) CGO_ENABLED=0 $(GO) list -trimpath -test -export -deps $(SUITE) >/dev/null; \
	$(OFFLINE) $(BUILDFLAGS) CGO_ENABLED=0 $(GO) test -trimpath -vet=off -timeout 8m $(SUITE) & suite=$$!; \
	$(OFFLINE) $(BUILDFLAGS) $(GO) list -race -trimpath -test -export -deps ./... >/dev/null && \
	$(OFFLINE) $(BUILDFLAGS) CGO_ENABLED=0 $(GO) build -trimpath -o /dev/null $(TOXIPROXY) && \
	$(OFFLINE) $(BUILDFLAGS) $(NOEXITSLEEP) $(GO) test -race -trimpath -vet=off -ldflags="-s -w" -p 3 -parallel 4 -timeout 8m $(FIRST_TESTS) $$($(GO) list ./... | grep -v -e '/scenarios$$' $(foreach p,$(FIRST_TESTS),-e '$(patsubst ./%,/%,$(p))$$')); \
	rc=$$?; wait $$suite || rc=1; exit $$rc

# demo runs the main job: the built-in suite on the embedded Redis, nothing
# else installed.
demo: build
	./$(BIN) verify

bench: deps-bench build
	./scripts/bench.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

# lint: gofmt, and go vet on Linux (with and without -race: the race-only
# test files), macOS and Windows (rlctl and its tests build on all three;
# they are tested on Linux). CI runs it after make test,
# which has fetched every platform's modules. The Linux vets take make
# test's build flags, so they reuse its two compiles of the module
# instead of compiling it twice more.
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(OFFLINE) $(BUILDFLAGS) CGO_ENABLED=0 $(GO) vet -trimpath ./... # make test's build without the race detector, reused
	$(OFFLINE) $(BUILDFLAGS) $(GO) vet -race -trimpath ./... # the race-only files; make test's build, reused
	$(OFFLINE) GOOS=darwin $(GO) vet ./...
	$(OFFLINE) GOOS=windows $(GO) vet ./...

clean:
	rm -rf bin
