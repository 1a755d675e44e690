# tidegate: build, run and test. Everything a fresh machine needs comes
# through the Go toolchain and the Go module proxy, except the third-party
# Minecraft clients and servers the tests run (node-minecraft-protocol),
# which npm installs (see node-deps).

GO          ?= go
BIN         := bin/tidegate
BENCH_BIN   := bin/tidegate-bench
VERSION     := $(shell git describe --always --dirty 2>/dev/null || echo dev)
# main.version is what `version` prints; revision.Stamp is the revision the
# benchmark reports name (a plain go build has none with -buildvcs=false).
# -w drops the DWARF tables (debuggers only); the symbol table stays, for
# go tool nm, perf and pprof.
LDFLAGS     := -w -X main.version=$(VERSION) -X github.com/tidegate/tidegate/internal/revision.Stamp=$(VERSION)
# The production binary is also stripped of its symbol table (-s): pprof
# still symbolizes from the Go runtime's own tables; for perf's symbols,
# build with `make build STRIP=`.
STRIP       ?= -s
# urfave_cli_no_docs leaves out cli's man page and Markdown writers (and
# their Markdown parser), which no command uses.
BUILDFLAGS  := -trimpath -tags urfave_cli_no_docs
# The production binary links no benchmark code; this bounds its size (MiB).
# It was 15 before the cluster client: go-redis v9.23 adds 8.2 MiB, since
# text/template (urfave/cli's help) looks methods up by name, which keeps
# every exported method of go-redis's client types in the binary. The
# terminating login (RSA, the session server's HTTP client, CFB8, zlib) and
# goccy/go-yaml (the config's file:line:col problems) took it to 23.3 MiB;
# make test builds it too, so a growth past this bound fails the suite, not
# only make run.
MAX_BIN_MIB := 25
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.6.1
CROSS       := darwin/amd64 darwin/arm64 freebsd/amd64 freebsd/arm64

.PHONY: all build run run-offline test fmt-check vet staticcheck cross unit node-deps stress fuzz-smoke clean

all: build

# Both binaries: tidegate (production) and tidegate-bench (load generators
# and peers, which start the bin/tidegate next to them). Prints both sizes,
# and fails when the production binary links the benchmark reports' plotting
# code or grew past MAX_BIN_MIB.
build:
	$(GO) build $(BUILDFLAGS) -ldflags "$(STRIP) $(LDFLAGS)" -o $(BIN) ./cmd/tidegate
	$(GO) build $(BUILDFLAGS) -ldflags "$(LDFLAGS)" -o $(BENCH_BIN) ./cmd/tidegate-bench
	@set -e; for b in $(BIN) $(BENCH_BIN); do \
		wc -c <$$b | awk -v b=$$b '{printf "%-20s %5.1f MiB (%d bytes)\n", b, $$1/1048576, $$1}'; \
	done; \
	if $(GO) version -m $(BIN) | grep -q gonum.org; then echo "$(BIN) links gonum.org (benchmark charts)"; exit 1; fi; \
	size=$$(wc -c <$(BIN)); if [ $$size -gt $$(($(MAX_BIN_MIB) * 1048576)) ]; then \
		echo "$(BIN) is $$size bytes, over $(MAX_BIN_MIB) MiB"; exit 1; fi

# The main job on its embedded default configuration.
run: build
	./$(BIN) proxy --demo

# The proxy completing logins with velocity forwarding to the fake backend.
run-offline: build
	./$(BIN) proxy --demo --config docs/examples/offline-velocity/proxy.yaml

test: fmt-check vet staticcheck cross build unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run $(STATICCHECK) ./...

# The kqueue side is compiled and vetted for macOS and FreeBSD on every run.
cross:
	@set -e; for p in $(CROSS); do \
		echo "build+vet $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build ./... ; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./... ; \
	done

unit: node-deps
	$(GO) test -race -count=1 -timeout 10m ./...

# node-minecraft-protocol (npm minecraft-protocol, pinned by its lockfile)
# for the tests that run third-party clients and servers through the
# proxy: installed by npm ci when node_modules is missing or older than the
# lockfile. Without npm, or when npm ci fails (no registry), those tests
# are skipped, saying so, except under CI=true, where this fails.
NODEMC_DIR   := internal/testkit/nodemc/js
node-deps: $(NODEMC_DIR)/node_modules/.package-lock.json

$(NODEMC_DIR)/node_modules/.package-lock.json: $(NODEMC_DIR)/package.json $(NODEMC_DIR)/package-lock.json
	@if command -v npm >/dev/null; then \
		echo "npm ci --prefix $(NODEMC_DIR)"; \
		npm ci --prefix $(NODEMC_DIR) --no-audit --no-fund --loglevel=error && exit 0; \
		echo "npm ci failed"; \
	else \
		echo "npm is not installed"; \
	fi; \
	if [ "$$CI" = true ]; then exit 1; fi; \
	echo "the node-minecraft-protocol tests will be skipped"

# The suite under the race detector STRESS_COUNT times while STRESS_LOAD busy
# loops (one per core here) compete for the CPU: a test that only passes on
# an idle machine fails here. The loops are killed however the run ends
# (pass, fail, ^C). A short trial: make stress STRESS_COUNT=2; one package:
# make stress STRESS_PKGS=./reactor/.
STRESS_COUNT   ?= 20
STRESS_LOAD    ?= 2
STRESS_PKGS    ?= ./...
STRESS_TIMEOUT ?= 4h

stress:
	@pids=""; trap 'kill $$pids 2>/dev/null' EXIT INT TERM; \
	for i in $$(seq $(STRESS_LOAD)); do yes > /dev/null & pids="$$pids $$!"; done; \
	echo "stress: $(STRESS_LOAD) busy loops (pids$$pids), go test -race -count=$(STRESS_COUNT) $(STRESS_PKGS)"; \
	$(GO) test -race -count=$(STRESS_COUNT) -timeout $(STRESS_TIMEOUT) $(STRESS_PKGS)

# A short run of every fuzz target (not part of test).
fuzz-smoke:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$f"; $(GO) test -run=NONE -fuzz="^$$f$$" -fuzztime=10s $$pkg; \
		done; \
	done

clean:
	rm -rf bin
