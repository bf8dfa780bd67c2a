# Palaver: `make run` starts a one-node cluster on loopback; `make test` runs every test.
GO      ?= go
PKGS    ?= ./...
FUZZTIME ?= 20s

.PHONY: run build test vet race-free bench fuzz fuzz-short irctest clean dist dist-check upgrade-check

run:
	$(GO) run ./cmd/palaver serve

build:
	$(GO) build -o bin/palaver ./cmd/palaver

# gofmt, vet and go.mod tidiness, then every test with the race detector (fuzz targets run their
# seed corpora). The race detector needs cgo and a C compiler; RACE= runs without it.
RACE ?= -race
test: vet
	@if [ -n "$(RACE)" ] && ! command -v "$$($(GO) env CC)" >/dev/null 2>&1; then \
	  echo "make test: go test -race needs a C compiler ($$($(GO) env CC) not found): install gcc, or run 'make test RACE=' without the race detector"; exit 1; fi
	$(GO) test $(RACE) -count=1 -timeout 18m $(PKGS)
	cd deploy/rulescheck && $(GO) vet ./... && $(GO) test -count=1 ./...

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run 'go mod tidy'"; $(GO) mod tidy -diff; exit 1; }

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Runs every fuzz target (of PKGS) for FUZZTIME each.
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$target"; \
	    $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# Every fuzz target for 2 s: a budget for CI (not part of `make test`).
fuzz-short:
	$(MAKE) fuzz FUZZTIME=2s

# Runs the irctest conformance suite (a checkout of https://github.com/progval/irctest in IRCTEST,
# with python3 and pytest) against a fresh build, with the controller in conformance/irctest.
# IRCTEST_ARGS adds pytest arguments (e.g. `-n 2`, `-x`, a test file).
IRCTEST ?=
PYTHON ?= python3
IRCTEST_MARKERS ?= not implementation-specific and not deprecated and not strict
IRCTEST_SELECTORS ?= not ServicesLinksTestCase
IRCTEST_ARGS ?=

irctest:
	@test -n "$(IRCTEST)" || { echo "usage: make irctest IRCTEST=<irctest checkout>"; exit 2; }
	$(GO) build -o bin/palaver ./cmd/palaver
	cd "$(IRCTEST)" && PALAVER_BIN="$(CURDIR)/bin/palaver" PYTHONPATH="$(CURDIR)/conformance/irctest$${PYTHONPATH:+:$$PYTHONPATH}" \
	  $(PYTHON) -m pytest -p no:cacheprovider --controller palaver \
	  -m '$(IRCTEST_MARKERS)' -k '$(IRCTEST_SELECTORS)' $(IRCTEST_ARGS)

# Release files in dist/: palaver_<version>_linux_amd64.tar.gz, palaver_<version>_amd64.deb (a
# systemd unit, a default configuration, the documentation) and SHA256SUMS. The packaging program
# is a module of its own (deploy/dist) so that nfpm stays out of go.mod.
dist:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags '-s -w' -o bin/palaver-linux-amd64 ./cmd/palaver
	cd deploy/dist && $(GO) run . --binary ../../bin/palaver-linux-amd64 --root ../.. --out ../../dist --arch amd64

# Builds the package from a fresh binary and checks it: dpkg-deb -I/-c/-x, the unpacked binary,
# systemd-analyze verify on the unit, and (as root) an installation with dpkg --root into a scratch
# root: the user, the files, dpkg --verify, the kept configuration, a purge. A few minutes; CI runs
# it when time allows.
dist-check:
	cd deploy/dist && $(GO) vet ./... && $(GO) test -count=1 -timeout 20m ./...

# The rolling upgrade from the previous release (TestRollingUpgrade in cmd/palaver): builds it from
# the git history (tag v0.1.0, or its commit), runs three nodes of it as processes and replaces
# them one at a time with this build under the checked load. A few minutes, most of them building
# the previous release; CI runs it when time allows. Skips when the history is not at hand.
upgrade-check:
	PALAVER_ROLLING_UPGRADE=1 $(GO) test $(RACE) -count=1 -timeout 15m -run '^TestRollingUpgrade$$' -v ./cmd/palaver/

clean:
	rm -rf bin data dist
