# porch: the two commands a new user runs are `make run` and `make test`.
GO ?= go
SAMPLE ?= samples/hello/pipeline.yml
# staticcheck at a pinned version, run through the Go proxy as workflowcheck
# is: a fresh machine needs only Go, and go.mod stays as it is.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: run test build bench vet fuzz lint

# Build porch and run a sample pipeline on the embedded Temporal server.
run: build
	./bin/porch run $(SAMPLE)

build:
	$(GO) build -o bin/porch ./cmd/porch

# Vet, the workflow determinism check, staticcheck, then unit, workflow,
# replay and integration tests (embedded server, real processes), and a
# short fuzz of the compiler.
test:
	$(GO) vet ./...
	$(GO) run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 ./workflows/...
	$(GO) run $(STATICCHECK) ./...
	$(GO) test -count=1 -timeout 20m ./...
	$(GO) test -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime 20s ./compiler/

# staticcheck alone (make test runs it too).
lint:
	$(GO) run $(STATICCHECK) ./...

# Fuzz the compiler longer: no input may panic or pass its time and memory
# bounds (FUZZTIME=1h for a long run).
FUZZTIME ?= 5m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME) ./compiler/

# Per-step overhead on the embedded server, beside its baselines.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m ./worker/ ./internal/devserver/
