# Palaver: `make run` starts a one-node cluster on loopback; `make test` runs every test.
GO      ?= go
PKGS    ?= ./...
FUZZTIME ?= 20s

.PHONY: run build test vet race-free bench fuzz fuzz-short clean dist dist-check

run:
	$(GO) run ./cmd/palaver serve

build:
	$(GO) build -o bin/palaver ./cmd/palaver

# gofmt, vet and go.mod tidiness, then every test with the race detector (fuzz targets run their
# seed corpora), then the alerting rules and dashboard through Prometheus' parsers (a module of
# its own, deploy/rulescheck, so that Prometheus stays out of go.mod).
test: vet
	$(GO) test -race -count=1 -timeout 18m $(PKGS)
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

# Release files in dist/: palaver_<version>_linux_amd64.tar.gz, palaver_<version>_amd64.deb (a
# systemd unit, a default configuration, the documentation) and SHA256SUMS. The packaging program
# is a module of its own (deploy/dist) so that nfpm stays out of go.mod.
dist:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags '-s -w' -o bin/palaver-linux-amd64 ./cmd/palaver
	cd deploy/dist && $(GO) run . --binary ../../bin/palaver-linux-amd64 --root ../.. --out ../../dist --arch amd64

# Builds the package from a fresh binary and checks it: dpkg-deb -I/-c/-x, the installed binary,
# systemd-analyze verify on the unit (a few minutes; CI runs it).
dist-check:
	cd deploy/dist && $(GO) vet ./... && $(GO) test -count=1 -timeout 20m ./...

clean:
	rm -rf bin data dist
