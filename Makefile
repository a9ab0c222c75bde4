# StreamFusion image entrypoint. `make demo` and `make test` need Go only.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -modified)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
GOBUILD := CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)'

.PHONY: release test-release test-race rules-doc bench-image-deep build dist flink-dist test test-real test-jvm image-test bench bench-image bench-linkage test-classfile-jvm lint demo fuzz clean test-install-crash config-tables k8s-tools test-k8s bench-k8s test-linkage bench-linkage-checker bench-linkage-compare dist-packages bench-audit bench-webhook

build: bin/entrypoint bin/streamfusion

bin/entrypoint: FORCE
	$(GOBUILD) -o $@ ./cmd/entrypoint

bin/streamfusion: FORCE
	$(GOBUILD) -o $@ ./cmd/streamfusion

# --- release (issue 40)
# Every artifact a user installs, built from the commit (a clean tree, no
# replaced module) into release/: the static binaries with SHA256SUMS and a
# CycloneDX SBOM each, the webhook/CLI image (an OCI image index for amd64
# and arm64 as an OCI layout and a tarball per platform, each platform's SBOM
# attached as a referrer), the chart packaged to pull that image by digest;
# release/manifest.json lists them with their digests. VERSION is SemVer 2:
# make release VERSION=1.0.0 [REPOSITORY=the image's repository, as the
# chart pulls it] [CA_CERTS=the CA bundle the image carries; default
# /etc/ssl/certs/ca-certificates.crt]. The same commit, Go release, CA
# bundle and repository give the same bytes. It checks what it built.
release: FORCE
	rm -rf release
	go run ./cmd/release build --version '$(VERSION)' --out release $(if $(REPOSITORY),--repository '$(REPOSITORY)') $(if $(CA_CERTS),--ca-certs '$(CA_CERTS)')
# The release built twice and compared byte for byte; its SBOMs against
# go.sum and `go version -m`; the shipped image run in podman as the
# packaged chart runs it, behind a real kube-apiserver (needs the image
# suite's podman setup: see .ci/run).
# RELEASE_BUILT=1: release/ is already this commit's 0.0.0-test (.ci/run
# builds it beside kube-apiserver's cold build).
test-release: k8s-tools
	$(if $(RELEASE_BUILT),go run ./cmd/release check release,$(MAKE) release VERSION=0.0.0-test)
	again=$$(mktemp -d) && go run ./cmd/release build --version 0.0.0-test --out $$again/release >/dev/null && \
		{ diff -r release $$again/release; rc=$$?; rm -rf $$again; exit $$rc; }
	@echo "test-release: a second build of 0.0.0-test is byte for byte the first"
	STREAMFUSION_RELEASE=$(CURDIR)/release go test -tags release -count=1 ./internal/release/
	$(K8S_ENV) STREAMFUSION_RELEASE=$(CURDIR)/release go test -tags k8sreal -count=1 -v -timeout 10m -run TestRealShippedImage ./internal/webhook/
# --- end release

# Static entrypoints for both image platforms, with checksums.
dist: FORCE
	mkdir -p dist
	for arch in amd64 arm64; do GOOS=linux GOARCH=$$arch $(GOBUILD) -o dist/entrypoint-linux-$$arch ./cmd/entrypoint; done
	cd dist && sha256sum entrypoint-linux-* > SHA256SUMS

FORCE:

# Every package's tests, without the race detector: the loop a change runs
# (under 2 min warm on 2 cores). test-race is CI's, where concurrency lives.
test:
	go test -shuffle=on -count=1 ./...

# The entrypoint's command (deadlines, signals) and the packages that run
# goroutines. cmd/streamfusion starts one of its own (the metrics server);
# its commands' concurrency is in the packages below, raced there, and its
# tests took 7 of test-race's 11 minutes on an empty build cache.
RACE_PKGS := ./cmd/entrypoint/... ./internal/admit/... ./internal/audit/... ./internal/baked/... ./internal/host/... ./internal/image/... \
	./internal/jobjar/... ./internal/judge/... ./internal/jvm/... ./internal/payload/... ./internal/rootfs/... ./internal/spool/... \
	./internal/verdict/... ./internal/webhook/...
test-race:
	go test -race -shuffle=on -count=1 $(RACE_PKGS)

# --- install crash and concurrency (issue 22)
# The CLI as child processes (the test binary re-run as the CLI): SIGKILL
# after every step of a realistic install, recovery of lib copied at every
# fsync point, two installs started together for 100 rounds, two bakes into
# one --layout. Without -race: what is tested runs in the children. About
# 1 min on 2 cores.
test-install-crash:
	go test -tags installcrash -count=1 -timeout 30m -run 'TestInstallKilledAtEveryStep|TestInstallPowerCutAtEveryFsync|TestInstallsStartedTogether|TestBakesToOneLayoutAtOnce' ./cmd/streamfusion/
# --- end install crash and concurrency

# Real Flink distributions (PyPI's PyFlink packages, by pip) and the few
# JARs they lack (Maven coordinates), cached outside the repository.
CACHE_HOME := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)
FLINK_JARS ?= $(CACHE_HOME)/streamfusion/flink-jars
FLINK_DIST ?= $(CACHE_HOME)/streamfusion/flink-dist
FLINK_VERSIONS := 2.2.0 2.2.1 1.18.1 1.20.3 2.1.1 2.3.0
flink-dist:
	FLINK_DIST_CACHE=$(FLINK_DIST) scripts/fetch-flink-dist $(FLINK_VERSIONS) >/dev/null
test-real: flink-dist
	scripts/fetch-flink-jars internal/realflink/testdata/coordinates.txt $(FLINK_JARS)
	STREAMFUSION_FLINK_DIST=$(FLINK_DIST) STREAMFUSION_FLINK_JARS=$(FLINK_JARS) go test -tags realjars -count=1 -v ./internal/realflink/

# --- rules doc (issue 30)
# docs/rules.md from the rule lists in the code (TestRulesDocIsCurrent,
# in make test, fails when the checked-in file differs).
rules-doc:
	STREAMFUSION_UPDATE_RULES_DOC=1 go test -count=1 -run '^TestRulesDocIsCurrent$$' ./cmd/streamfusion/
# --- end rules doc

# --- config tables (issue 21)
# Each supported release's table of configuration options (every public
# static ConfigOption of its lib, the planner included), checked in and
# embedded by internal/admission; TestConfigTablesMatchTheDistributions
# (make test-real) fails when they differ from the real distributions.
CONFIG_TABLE_VERSIONS := 2.2.0 2.2.1 1.18.1
config-tables:
	FLINK_DIST_CACHE=$(FLINK_DIST) scripts/fetch-flink-dist $(CONFIG_TABLE_VERSIONS) >/dev/null
	for v in $(CONFIG_TABLE_VERSIONS); do \
		java -Dlog4j2.level=OFF scripts/config-tables/ConfigTables.java $(FLINK_DIST)/$$v > internal/flinkconf/flinkkeys/$$v.txt.tmp && \
		mv internal/flinkconf/flinkkeys/$$v.txt.tmp internal/flinkconf/flinkkeys/$$v.txt || exit 1; \
	done
# --- end config tables

# --- linkage oracle (issue 19)
# The project's linkage findings against the JVM: real distributions (2.0.0
# too: the release flink-connector-kafka 4.0.0-2.0 is built for), the corpus
# of testdata/linkage-coordinates.txt, a job JAR built with the real
# maven-shade-plugin, and the Java oracle compiled with javac.
LINKAGE_VERSIONS := 2.2.0 2.2.1 1.18.1 2.0.0
LINKAGE_TESTS ?= TestLinkage
LINKAGE_SKIP ?=
test-linkage:
	FLINK_DIST_CACHE=$(FLINK_DIST) scripts/fetch-flink-dist $(LINKAGE_VERSIONS) >/dev/null
	scripts/fetch-flink-jars internal/realflink/testdata/linkage-coordinates.txt $(FLINK_JARS)
	STREAMFUSION_FLINK_DIST=$(FLINK_DIST) STREAMFUSION_FLINK_JARS=$(FLINK_JARS) go test -tags realjars,linkageoracle -count=1 -timeout 60m -v -run '$(LINKAGE_TESTS)' $(if $(LINKAGE_SKIP),-skip '$(LINKAGE_SKIP)') ./internal/realflink/
# The packages each line's flink-dist carries outside org.apache.flink
# (internal/admission/flinkdist, embedded; TestLinkageDistPackages checks
# them against the real distributions).
DIST_PACKAGE_VERSIONS := 1.18.1 2.0.0 2.2.0
dist-packages:
	FLINK_DIST_CACHE=$(FLINK_DIST) scripts/fetch-flink-dist $(DIST_PACKAGE_VERSIONS) >/dev/null
	for v in $(DIST_PACKAGE_VERSIONS); do \
		unzip -Z1 $(FLINK_DIST)/$$v/lib/flink-dist-$$v.jar | grep '/.*\.class$$' | grep -v '^META-INF/\|^org/apache/flink/\|/module-info\.class$$' \
			| sed 's|/[^/]*$$||' | LC_ALL=C sort -u > internal/admission/flinkdist/$${v%.*}.txt || exit 1; \
	done
# Linkage Checker 1.5.15 against `streamfusion check` on the same JARs in
# one run: wall and CPU time, peak RSS and the ratios against the 10x floor,
# then ours on the budget layout against 3 s and 256 MB (a benchmark, not
# in CI; minutes: the peer is slow). See bench/linkage/run.
bench-linkage-compare: build
	go build -o bin/bench-linkage ./bench/linkage
	bench/linkage/run bin
bench-linkage-checker: bench-linkage-compare
# --- end linkage oracle

# --- ecosystem corpus (issue 28): published connectors, formats and
# integrations (testdata/ecosystem-coordinates.txt) each on the release it
# is built for and on the other major line, the JVM harness the judge;
# ECOSYSTEM_TABLE=docs/ecosystem.md rewrites the table there.
ECOSYSTEM_VERSIONS := 2.2.0 2.1.1 2.0.0 1.20.3 1.18.1
.PHONY: test-ecosystem
test-ecosystem:
	FLINK_DIST_CACHE=$(FLINK_DIST) scripts/fetch-flink-dist $(ECOSYSTEM_VERSIONS) >/dev/null
	scripts/fetch-flink-jars internal/realflink/testdata/ecosystem-coordinates.txt $(FLINK_JARS)
	STREAMFUSION_FLINK_DIST=$(FLINK_DIST) STREAMFUSION_FLINK_JARS=$(FLINK_JARS) go test -tags realjars,linkageoracle,ecosystem -count=1 -timeout 30m -v -run 'TestEcosystem' ./internal/realflink/
# --- end ecosystem corpus

# The differential JAR corpus: real writers (jar, Maven, zip, bsdtar, 7z,
# Python, Go) and corrupters, read by the JVM and by internal/payload.
# Needs a JDK, Maven and the tools .ci/run installs; fails in CI without them.
test-jvm:
	go test -tags jvmoracle -count=1 -v -run 'TestJVMOracleCorpus' ./internal/payload/

# --- native libraries (issue 29): the native-* rules against glibc's own
# loader on this machine (Debian bookworm, glibc 2.36, as the images):
# fixtures built with gcc, put in payload JARs, judged on this root and
# dlopen()ed by a C program built with gcc. Fails without gcc in CI. A few
# seconds.
.PHONY: test-native
test-native:
	go test -tags nativeoracle -count=1 -v -run 'TestNativeLoaderAgrees' ./internal/host/
FUZZ_TARGETS += internal/payload:FuzzParseELF internal/payload:FuzzNatives internal/host:FuzzDefinedVersions
# --- end native libraries

# Real containers: needs an engine at DOCKER_HOST (podman's API service in CI).
image-test:
	scripts/fetch-flink-jars internal/realflink/testdata/coordinates.txt $(FLINK_JARS)
	STREAMFUSION_FLINK_JARS=$(FLINK_JARS) TESTCONTAINERS_RYUK_DISABLED=true go test -tags imagesuite -count=1 -timeout 40m -v ./images/suite/

# --- real Kubernetes API server (issue 20)
# kube-apiserver built from the Go module k8s.io/kubernetes (cached by version
# under the user cache; a cold build takes 15-35 min on 2 cores), Debian's etcd
# and kubectl on PATH, the operator's CRDs from its API JAR by Maven
# coordinates. The suite starts and stops them on loopback.
# prometheus-operator's CRDs (ServiceMonitor, PrometheusRule) from the Go
# module github.com/prometheus-operator/prometheus-operator, cached by
# version under the user cache (TestRealMonitoring).
KUBE_VERSION := v1.37.2
PROMETHEUS_OPERATOR_VERSION := v0.85.0
OPERATOR_API := $(CACHE_HOME)/streamfusion/operator-api
K8S_ENV = STREAMFUSION_KUBE_APISERVER=$$(scripts/build-kube-apiserver $(KUBE_VERSION)) \
	STREAMFUSION_OPERATOR_API_JAR=$(OPERATOR_API)/flink-kubernetes-operator-api-1.10.0.jar \
	STREAMFUSION_PROMETHEUS_OPERATOR_CRDS=$$(scripts/fetch-prometheus-operator-crds $(PROMETHEUS_OPERATOR_VERSION))
k8s-tools:
	scripts/build-kube-apiserver $(KUBE_VERSION) >/dev/null
	scripts/fetch-flink-jars internal/webhook/testdata/operator-api.txt $(OPERATOR_API) >/dev/null
	scripts/fetch-prometheus-operator-crds $(PROMETHEUS_OPERATOR_VERSION) >/dev/null
test-k8s: k8s-tools
	$(K8S_ENV) go test -tags k8sreal -count=1 -v -timeout 20m -run 'TestRealAPIServer|TestRealMonitoring' ./internal/webhook/
	$(K8S_ENV) go test -tags k8sreal -count=1 -v -timeout 20m -run 'TestRealAudit' ./internal/audit/
# The webhook under load (docs/performance.md, "The webhook under load"):
# warm reviews over HTTP/2 at 1, 8, 32 and 128 in flight against the
# webhook and a trivial HTTPS echo server, each in a process of its own;
# reviews/s, p50/p99/max, peak RSS. Not in CI: a measurement.
bench-webhook:
	go test -count=1 -run '^$$' -bench '^BenchmarkLoad$$' -benchtime 1x -timeout 20m ./internal/webhook/
# Latency through the real API server (docs/webhook-reference.md).
bench-k8s: k8s-tools
	$(K8S_ENV) go test -tags k8sreal -count=1 -run '^$$' -bench RealAPIServer -benchtime 1x -timeout 20m ./internal/webhook/
# streamfusion audit of 200 FlinkDeployments over 20 images (docs/audit.md).
bench-audit: k8s-tools
	$(K8S_ENV) go test -tags k8sreal -count=1 -run '^$$' -bench RealAudit -benchtime 1x -timeout 30m -v ./internal/audit/
# --- end real Kubernetes API server

# Hand-off time against the JVM-side check, the minimal reader and a bare
# exec, alternated in one run, on a real distribution's lib (BENCH_FLINK)
# plus the realistic payloads, then on the synthetic layouts; then the Go
# benchmarks. See docs/performance.md.
BENCH_RUNS ?= 21
BENCH_FLINK ?= 2.2.0
BENCH_SCALES ?= 1,4,16
# The real lib's run also measures the start with a baked deep verdict
# against the start without deep checking, and with a new ~43 MB shaded
# Kafka job JAR in usrlib (bench/compare/kafka-job.txt; issue 30's budgets).
BENCH_JOB_JARS = $(shell sed -n 's/^[^#:]*:\([^:]*\):\(.*\)$$/$(subst /,\/,$(FLINK_JARS))\/\1-\2.jar/p' bench/compare/kafka-job.txt | paste -sd, -)
bench: bench-tools
	mkdir -p bin/bench-jvm && javac -d bin/bench-jvm bench/jvm/JarCheck.java
	scripts/fetch-flink-jars bench/compare/kafka-job.txt $(FLINK_JARS) >/dev/null
	go run ./bench/compare -bin bin -runs $(BENCH_RUNS) -flink-lib $(FLINK_DIST)/$(BENCH_FLINK)/lib -scales '$(BENCH_SCALES)' -baked -job-jars '$(BENCH_JOB_JARS)'
	go test -run '^$$' -bench . -benchmem ./internal/payload ./internal/host ./internal/admission
	go test -run '^$$' -bench WarmReview -benchtime 2000x ./internal/webhook

# The start path's parts priced alone in the same alternated run (issue
# 19's budget): bare execs that link one library's package inits or set up
# PID 1's signal handling, beside the entrypoint, the minimal reader and a
# bare exec. See docs/performance.md.
START_PARTS = notify yaml collate zerolog
comma := ,
bench-start-parts: bench-tools
	for p in $(START_PARTS); do CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/startparts-$$p ./bench/startparts/$$p || exit 1; done
	go run ./bench/compare -bin bin -runs 61 -jvm=false -parts $(subst $() ,$(comma),$(addprefix bin/startparts-,$(START_PARTS))) -flink-lib $(FLINK_DIST)/$(BENCH_FLINK)/lib -scales ''

# The contenders bench and bench-start-parts measure the entrypoint
# against: the real distribution's lib, the minimal reader, a bare exec,
# and the reporter of bytes read.
bench-tools: build
	FLINK_DIST_CACHE=$(FLINK_DIST) scripts/fetch-flink-dist $(BENCH_FLINK) >/dev/null
	go build -o bin/bench-minimal ./bench/minimal
	go build -o bin/bench-bare ./bench/bare
	go build -o bin/bench-ioreport ./bench/ioreport

# streamfusion verify and bake on a ~700 MB image built from parts, from a tarball, an
# OCI layout and a loopback registry, against a floor that reads every layer
# once. The image is kept in $TMPDIR/streamfusion-imagebench. See
# docs/performance.md.
bench-image: build
	go build -o bin/bench-image ./bench/imagebench
	bin/bench-image -bin bin

# --- linkage (issue 19)
# The deep check (shadowing and linkage) on the real 2.2.0 lib plus real
# connectors and a ~106 MB job JAR shaded from real JARs, against 3 s and
# 256 MB; with LINKAGE_CHECKER=1, Google's Linkage Checker 1.5.15 (by Maven
# coordinates) on the same JARs. See docs/performance.md.
LINKAGE_RUNS ?= 7
# The largest real bundles, each alone on its own release (issue 28): Hive's
# SQL bundle. Hudi's bundles are not served by the registry CI uses
# (internal/realflink/testdata/ecosystem-unserved.txt).
LINKAGE_BUNDLES ?= 1.20.3:flink-sql-connector-hive-2.3.10_2.12-1.20.0
# The class-file parser against javap on real classes (a JDK; the real JARs).
test-classfile-jvm: flink-dist
	scripts/fetch-flink-jars internal/realflink/testdata/coordinates.txt $(FLINK_JARS)
	STREAMFUSION_FLINK_DIST=$(FLINK_DIST) STREAMFUSION_FLINK_JARS=$(FLINK_JARS) go test -tags jvmoracle -count=1 -v -run TestJavapAgrees ./internal/classfile/

# --- deep check of images (issue 19): verify with and without the deep
# check on a real 2.2.0 image with the 3.2.0-1.18 Kafka connector, cold and
# with a warm layer cache; one process per case, for its peak RSS. A
# benchmark, not in CI (docs/performance.md).
bench-image-deep: flink-dist
	scripts/fetch-flink-jars internal/realflink/testdata/coordinates.txt $(FLINK_JARS)
	for c in fast deep fast-cached deep-cached deep-facts-cached; do \
		STREAMFUSION_FLINK_DIST=$(FLINK_DIST) STREAMFUSION_FLINK_JARS=$(FLINK_JARS) go test -tags realjars -count=1 -run '^$$' \
			-bench "VerifyRealImage/$$c\$$" -benchtime 5x ./internal/realflink/ | grep '^Benchmark' || exit 1; \
	done
# --- end

bench-linkage: build flink-dist
	scripts/fetch-flink-jars internal/realflink/testdata/coordinates.txt $(FLINK_JARS)
	go build -o bin/bench-linkage ./bench/linkage
	bin/bench-linkage -bin bin -flink-lib $(FLINK_DIST)/2.2.0/lib -jars $(FLINK_JARS) -runs $(LINKAGE_RUNS) \
		-flink-dist $(FLINK_DIST) -bundles $(LINKAGE_BUNDLES) \
		$(if $(LINKAGE_CHECKER),-linkage-checker "$$(scripts/linkage-checker-classpath)")
# --- end

lint:
	go vet -tags imagesuite,realjars,jvmoracle,installcrash,k8sreal,linkageoracle,nativeoracle,ecosystem,release ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0 run ./...

# Each fuzz target for FUZZTIME; crashers land in testdata/fuzz as regression seeds.
# Minimising a new input is capped: with JAR-sized inputs the default (60 s)
# would spend a short run's whole budget on one input, and a time-bound
# minimisation that overruns the run's end is reported as a failure: count it.
FUZZTIME ?= 10s
FUZZ_TARGETS := internal/payload:FuzzParseManifest internal/payload:FuzzRead internal/payload:FuzzNested internal/payload:FuzzReadDiff \
	internal/admission:FuzzParseJava internal/admission:FuzzIdentify internal/admission:FuzzParseStockVersion internal/admission:FuzzIdentifyStock internal/admission:FuzzAttributeSyntax internal/roles:FuzzClassify internal/image/flatten:FuzzScanLayer \
	internal/deploy:FuzzParse internal/webhook:FuzzValidate internal/classfile:FuzzParse internal/payload:FuzzArchive internal/install:FuzzParseJournal internal/host:FuzzReadConfig internal/flinkconf:FuzzScalarMatchers internal/flinkconf:FuzzReadYAML internal/admission:FuzzPOMRuntimeGroups
# --- session job JARs (issue 20): real connectors as session jobs' JARs on
# the real Flink 2.2.0 lib, through the webhook (the JARs by coordinates,
# as test-real fetches them); the cold and warm review's benchmark.
FUZZ_TARGETS += internal/jobjar:FuzzParseHeaders internal/jobjar:FuzzParseURI
# The baked deep verdict's reader (issue 30).
FUZZ_TARGETS += internal/baked:FuzzDecode
# The deep result cache's reader (issue 30).
FUZZ_TARGETS += internal/image:FuzzDecodeDeepResult
# GLIBC_TUNABLES from the image's or the pod's environment (issue 29).
FUZZ_TARGETS += internal/admission:FuzzStaticTLS
# streamfusion audit: a runtime's imageID, an --image-map-file.
FUZZ_TARGETS += internal/audit:FuzzParseImageID internal/audit:FuzzParseImageMapFile
# The SQL scanner: factory identifiers in WITH clauses (issue 38).
FUZZ_TARGETS += internal/sqlscan:FuzzScan
# A saved image tarball, against go-containerregistry's reader (issue 37).
FUZZ_TARGETS += internal/image/source:FuzzOpenTarball
.PHONY: test-session-jar bench-session-jar bench-start-parts bench-tools
test-session-jar: flink-dist
	scripts/fetch-flink-jars internal/realflink/testdata/coordinates.txt $(FLINK_JARS)
	STREAMFUSION_FLINK_DIST=$(FLINK_DIST) STREAMFUSION_FLINK_JARS=$(FLINK_JARS) go test -tags realjars -count=1 -v -run 'TestRealJobJARs' ./internal/webhook/
bench-session-jar: flink-dist
	scripts/fetch-flink-jars internal/realflink/testdata/coordinates.txt $(FLINK_JARS)
	scripts/fetch-flink-jars bench/compare/kafka-job.txt $(FLINK_JARS) >/dev/null
	STREAMFUSION_FLINK_DIST=$(FLINK_DIST) STREAMFUSION_FLINK_JARS=$(FLINK_JARS) go test -tags realjars -count=1 -run '^$$' -bench SessionJobReview -benchtime 5x ./internal/webhook/
# --- end
# scripts/fuzz tries a run once more only when Go's coordinator failed it at
# the deadline with no input written (golang/go#75804, Go 1.26).
fuzz:
	scripts/fuzz $(FUZZTIME) $(FUZZ_TARGETS)

demo: build
	go run ./demo -entrypoint bin/entrypoint

clean:
	rm -rf bin dist

# --- prefetch: what the heavier suites fetch, into the user caches (the
# Flink distributions of every suite, the JARs of every coordinates list,
# the operator's API JAR, the image suite's Debian root). Mostly network:
# .ci/run runs it in the background while lint and the unit tests keep the
# cores busy; each suite's own fetch then finds its files cached.
PREFETCH_VERSIONS := $(sort $(FLINK_VERSIONS) $(LINKAGE_VERSIONS) $(ECOSYSTEM_VERSIONS))
PREFETCH_LISTS := internal/realflink/testdata/coordinates.txt internal/realflink/testdata/linkage-coordinates.txt \
	internal/realflink/testdata/ecosystem-coordinates.txt images/suite/testdata/connectors.txt images/suite/testdata/processes.txt
.PHONY: prefetch
prefetch:
	FLINK_DIST_CACHE=$(FLINK_DIST) scripts/fetch-flink-dist $(PREFETCH_VERSIONS) >/dev/null
	for list in $(PREFETCH_LISTS); do scripts/fetch-flink-jars $$list $(FLINK_JARS) >/dev/null || exit 1; done
	scripts/fetch-flink-jars internal/webhook/testdata/operator-api.txt $(OPERATOR_API) >/dev/null
	scripts/build-base-root >/dev/null
# --- end prefetch
