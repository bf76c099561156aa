// Package reuse decides whether a step can reuse an earlier run's outputs,
// as Azure ML reuses a step whose component and inputs have not changed, and
// says why when it cannot.
//
// A step's reuse key is the hash of its parts: everything that decides its
// result (the command or task, the environment, the code snapshot, the
// interface, each input's value or content, the parallel or sweep
// settings), never its compute, display name, tags or run id. A successful
// step leaves a Record in its run's default datastore, beside its outputs:
//
//	porch-reuse/keys/<key>.json                  by key: what a later run reuses
//	porch-reuse/latest/<pipeline>/<step>.json    the step path's latest record: what a miss is compared with
//	porch-reuse/manifests/<hash>.json            a recorded output's files
//
// so records outlive the embedded server, and workers sharing an s3
// datastore share them. A record lists each output's files (a manifest:
// paths, sizes, contents' hashes up to MaxHashedOutputFile); a step whose
// key has a record whose outputs still hold those files is reused;
// otherwise it runs, and Decision.Reason says why, from the comparison of
// its parts with the latest record's (or what changed in the outputs).
//
// Input content is hashed file by file, symbolic links followed; a Hasher
// keeps each file's hash by path, size, modification and inode-change
// times and inode, so an unchanged folder costs a walk and a stat per
// file. On s3 datastores the objects' ETags stand for their content. An
// input that is an upstream step's output counts by where it is and the
// files it holds (its manifest): a dependant is keyed by the output it read, never by
// the key that made it, so two runs of one key never pass their outputs
// for each other.
package reuse
