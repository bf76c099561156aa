// Package cluster holds TestCluster, which runs porch on a real Temporal
// cluster the way deploy/ sets one up: the official Temporal server and
// schema tool built from the Go module porch embeds, on PostgreSQL, started
// from deploy/temporal/config.yaml with TLS on its frontend, and porch
// workers in network namespaces of their own that reach it with mTLS and
// share a MinIO datastore. It skips, saying why, where PostgreSQL does not
// answer on 127.0.0.1:5432 or network namespaces cannot be made.
//
// It is a package of its own, not part of deploy's file checks, so that
// `go test ./...` runs it in parallel with the other packages and
// `go test ./deploy` stays quick.
package cluster
