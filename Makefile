# porch: the two commands a new user runs are `make run` and `make test`.
GO ?= go
SAMPLE ?= samples/hello/pipeline.yml
# staticcheck at a pinned version, run through the Go proxy as workflowcheck
# is: a fresh machine needs only Go, and go.mod stays as it is.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: run test build bench vet fuzz lint ui-vendor

# Build porch and run a sample pipeline on the embedded Temporal server.
run: build
	./bin/porch run $(SAMPLE)

build:
	$(GO) build -o bin/porch ./cmd/porch

# Vet, the workflow determinism check, staticcheck, then unit, workflow,
# replay and integration tests (embedded server, real processes), and a
# short fuzz of the compiler. The fuzz's budget is a count of inputs, about
# 20 s on a 2-core machine: with a duration, Go before 1.27 can fail a fuzz
# that found nothing with "context deadline exceeded" when the time runs
# out while a worker is busy (go.dev/issue/75804; seen here on a loaded
# machine).
test:
	$(GO) vet ./...
	$(GO) run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 ./workflows/...
	$(GO) run $(STATICCHECK) ./...
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime 40000x ./compiler/

# staticcheck alone (make test runs it too).
lint:
	$(GO) run $(STATICCHECK) ./...

# Fuzz the compiler longer: no input may panic or pass its time and memory
# bounds (FUZZTIME=1h for a long run). A bare "context deadline exceeded"
# at the end, with no input written to compiler/testdata/fuzz, is Go's
# go.dev/issue/75804, not a finding.
FUZZTIME ?= 5m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME) ./compiler/

# Per-step overhead on the embedded server, beside its baselines.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m ./worker/ ./internal/devserver/

# The web page's vendored libraries, built files from npm at pinned
# versions, embedded in the binary (internal/webui/static/vendor): elkjs
# lays the DAG out in a web worker, Chart.js charts a sweep's trials. Run it
# after changing a version, and commit what it writes.
ELKJS_VERSION = 0.12.1
CHARTJS_VERSION = 4.6.1
UI_VENDOR = internal/webui/static/vendor
ui-vendor:
	rm -rf .ui-vendor && mkdir -p .ui-vendor/elkjs .ui-vendor/chart.js $(UI_VENDOR)
	cd .ui-vendor && npm pack --silent elkjs@$(ELKJS_VERSION) chart.js@$(CHARTJS_VERSION) >/dev/null
	tar -xzf .ui-vendor/elkjs-$(ELKJS_VERSION).tgz -C .ui-vendor/elkjs --strip-components=1
	tar -xzf .ui-vendor/chart.js-$(CHARTJS_VERSION).tgz -C .ui-vendor/chart.js --strip-components=1
	cp .ui-vendor/elkjs/lib/elk-api.js .ui-vendor/elkjs/lib/elk-worker.min.js $(UI_VENDOR)/
	cp .ui-vendor/elkjs/LICENSE.md $(UI_VENDOR)/elkjs-LICENSE.md
	cp .ui-vendor/chart.js/dist/chart.umd.min.js $(UI_VENDOR)/
	cp .ui-vendor/chart.js/LICENSE.md $(UI_VENDOR)/chart.js-LICENSE.md
	printf 'elkjs %s\nchart.js %s\n' $(ELKJS_VERSION) $(CHARTJS_VERSION) > $(UI_VENDOR)/VERSIONS
	cd $(UI_VENDOR) && sha256sum elk-api.js elk-worker.min.js chart.umd.min.js >> VERSIONS
	rm -rf .ui-vendor
