# porch: the two commands a new user runs are `make run` and `make test`.
GO ?= go
SAMPLE ?= samples/hello/pipeline.yml

.PHONY: run test build bench vet fuzz

# Build porch and run a sample pipeline on the embedded Temporal server.
run: build
	./bin/porch run $(SAMPLE)

build:
	$(GO) build -o bin/porch ./cmd/porch

# Vet, the workflow determinism check, then unit, workflow, replay and
# integration tests (embedded server, real processes), and a short fuzz of
# the compiler.
test:
	$(GO) vet ./...
	$(GO) run go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0 ./workflows/...
	$(GO) test -count=1 -timeout 20m ./...
	$(GO) test -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime 20s ./compiler/

# Fuzz the compiler longer: no input may panic or pass its time and memory
# bounds (FUZZTIME=1h for a long run).
FUZZTIME ?= 5m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME) ./compiler/

# Per-step overhead on the embedded server, beside its baselines.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m ./worker/ ./internal/devserver/
