# StreamFusion image entrypoint. `make demo` and `make test` need Go only.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
GOBUILD := CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)'

.PHONY: build test lint demo clean

build: bin/entrypoint

bin/entrypoint: FORCE
	$(GOBUILD) -o $@ ./cmd/entrypoint

FORCE:

test:
	go test -race -shuffle=on -count=1 ./...

lint:
	go vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@if command -v golangci-lint >/dev/null; then golangci-lint run; else echo "golangci-lint not installed: vet and gofmt only"; fi

demo: build
	go run ./demo -entrypoint bin/entrypoint

clean:
	rm -rf bin
