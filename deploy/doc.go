// Package deploy holds the files that run porch as a service: a Dockerfile
// for the porch binary, a docker-compose file (Temporal on PostgreSQL, its
// web UI, MinIO and porch workers on one box) and Kubernetes manifests (a
// Deployment of workers per compute target, scaled on its Temporal task
// queue with KEDA or an HPA). README.md (with docs/cluster.md) walks an operator through them.
//
// The package has no Go code of its own: its tests parse every file, decode
// the Kubernetes objects strictly into their API types, and check that the
// files agree with porch (worker flags, task queue names, search attributes,
// environment variables), so a broken or stale file fails CI.
package deploy
