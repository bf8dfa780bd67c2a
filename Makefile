# Palaver: `make run` starts a one-node cluster on loopback; `make test` runs every test.
GO      ?= go
PKGS    ?= ./...
FUZZTIME ?= 20s

.PHONY: run build test vet race-free bench fuzz fuzz-short clean

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

clean:
	rm -rf bin data
