# StreamFusion image entrypoint. `make demo` and `make test` need Go only.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
GOBUILD := CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)'

.PHONY: build dist test test-real image-test bench lint demo fuzz clean

build: bin/entrypoint bin/streamfusion

bin/entrypoint: FORCE
	$(GOBUILD) -o $@ ./cmd/entrypoint

bin/streamfusion: FORCE
	$(GOBUILD) -o $@ ./cmd/streamfusion

# Static entrypoints for both image platforms, with checksums.
dist: FORCE
	mkdir -p dist
	for arch in amd64 arm64; do GOOS=linux GOARCH=$$arch $(GOBUILD) -o dist/entrypoint-linux-$$arch ./cmd/entrypoint; done
	cd dist && sha256sum entrypoint-linux-* > SHA256SUMS

FORCE:

test:
	go test -race -shuffle=on -count=1 ./...

# Real Flink release JARs by Maven coordinates, cached outside the repository.
FLINK_JARS ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/streamfusion/flink-jars
test-real:
	scripts/fetch-flink-jars internal/realflink/testdata/coordinates.txt $(FLINK_JARS)
	STREAMFUSION_FLINK_JARS=$(FLINK_JARS) go test -tags realjars -count=1 -v ./internal/realflink/

# Real containers: needs an engine at DOCKER_HOST (podman's API service in CI).
image-test:
	go test -tags imagesuite -count=1 -v ./images/suite/

# Hand-off time against the JVM-side check, the minimal reader and a bare
# exec, alternated in one run; then the Go benchmarks. See docs/performance.md.
BENCH_RUNS ?= 21
bench: build
	go build -o bin/bench-minimal ./bench/minimal
	go build -o bin/bench-bare ./bench/bare
	go build -o bin/bench-ioreport ./bench/ioreport
	mkdir -p bin/bench-jvm && javac -d bin/bench-jvm bench/jvm/JarCheck.java
	go run ./bench/compare -bin bin -runs $(BENCH_RUNS)
	go test -run '^$$' -bench . -benchmem ./internal/payload ./internal/host ./internal/admission
	go test -run '^$$' -bench WarmReview -benchtime 2000x ./internal/webhook

lint:
	go vet -tags imagesuite,realjars ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags imagesuite,realjars ./...
	go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0 run ./...

# Each fuzz target for FUZZTIME; crashers land in testdata/fuzz as regression seeds.
FUZZTIME ?= 10s
FUZZ_TARGETS := internal/payload:FuzzParseManifest internal/payload:FuzzRead internal/payload:FuzzNested \
	internal/admission:FuzzParseJava internal/admission:FuzzIdentify internal/roles:FuzzClassify internal/image:FuzzFlatten \
	internal/deploy:FuzzParse internal/webhook:FuzzValidate
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$pkg $$fn ($(FUZZTIME))"; go test ./$$pkg -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME); done

demo: build
	go run ./demo -entrypoint bin/entrypoint

clean:
	rm -rf bin dist
