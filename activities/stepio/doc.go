// Package stepio is a step's I/O on a worker, shared by every step kind:
// its folders in the porch home, its inputs bound to literals and local
// paths (mounted, downloaded or direct) and its outputs on datastores.
package stepio
