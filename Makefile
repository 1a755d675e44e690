# tidegate: build, run and test. Everything a fresh machine needs comes
# through the Go toolchain and the Go module proxy.

GO          ?= go
BIN         := bin/tidegate
VERSION     := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.6.1
CROSS       := darwin/amd64 darwin/arm64 freebsd/amd64 freebsd/arm64

.PHONY: all build run test fmt-check vet staticcheck cross unit fuzz-smoke clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tidegate

# The main job on its embedded default configuration.
run: build
	./$(BIN) proxy --demo

test: fmt-check vet staticcheck cross unit

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

unit:
	$(GO) test -race -count=1 -timeout 10m ./...

# A short run of every fuzz target (not part of test).
fuzz-smoke:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$f"; $(GO) test -run=NONE -fuzz="^$$f$$" -fuzztime=10s $$pkg; \
		done; \
	done

clean:
	rm -rf bin
