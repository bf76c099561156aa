package reuse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// MaxHashedOutputFile bounds the files of a recorded output whose content
// its manifest hashes: 64 MiB. A larger file is checked by its size and
// modification time (on an object-store datastore every object by its ETag, which
// costs nothing to read).
const MaxHashedOutputFile = 64 << 20

// manifestMissing is the manifest of an output that was not there when
// its step was recorded.
var manifestMissing = hashOf("porch output manifest: missing")

// manifest lists the output at uri as a record keeps it: its files' paths
// and sizes, and their hashes (ETags on an object-store datastore). Its hash is
// manifestMissing for an output that is not there.
func (a *Activities) manifest(ctx context.Context, uri string) (string, []File, error) {
	var files []File
	var err error
	if d, p, ok := a.Host.ObjectLocation(uri); ok {
		s, serr := a.Host.ObjectStore(d)
		if serr != nil {
			return "", nil, serr
		}
		files, err = objectFiles(ctx, s, strings.TrimSuffix(p, "/"))
	} else {
		local, lerr := localPath(a.Host, uri)
		if lerr != nil {
			return "", nil, lerr
		}
		files, err = a.Hasher.Manifest(local, MaxHashedOutputFile)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return manifestMissing, nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("list output %q: %w", uri, err)
	}
	return manifestHash(files), files, nil
}

// manifestHash is the hash of a manifest's files, in path order.
func manifestHash(files []File) string {
	h := sha256.New()
	io.WriteString(h, "porch output manifest 1\n")
	for _, f := range files {
		if f.Hash != "" {
			fmt.Fprintf(h, "%q %d %s\n", f.Path, f.Size, f.Hash)
		} else {
			fmt.Fprintf(h, "%q %d mod %d\n", f.Path, f.Size, f.Mod)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// withManifests fills in each output's manifest (but the artifacts'),
// and writes the manifests beside the records on the datastore ds.
func (a *Activities) withManifests(ctx context.Context, ds string, r Record) (Record, error) {
	outs := slices.Clone(r.Outputs)
	for i, o := range outs {
		if o.Name == plan.ArtifactsOutput {
			continue
		}
		hash, files, err := a.manifest(ctx, o.URI)
		if err != nil {
			return r, err
		}
		outs[i].Manifest, outs[i].Files, outs[i].Bytes = hash, len(files), 0
		for _, f := range files {
			outs[i].Bytes += f.Size
		}
		if hash == manifestMissing {
			continue
		}
		uri := manifestURI(ds, hash)
		if ok, err := exists(ctx, a.Host, uri); err != nil || ok {
			if err != nil {
				return r, err
			}
			continue
		}
		if err := writeJSON(ctx, a.Host, uri, files); err != nil {
			return r, err
		}
	}
	r.Outputs = outs
	return r, nil
}

// checkOutputs says why a record's outputs cannot be reused, "" when they
// can: each output but the artifacts must hold the files its manifest
// lists, with the sizes and contents recorded.
func (a *Activities) checkOutputs(ctx context.Context, ds string, r Record) (string, error) {
	uris := make([]string, 0, len(r.Outputs))
	for _, o := range r.Outputs {
		uris = append(uris, o.URI)
	}
	a.Host.RefreshDatastores(ctx, uris...)
	for _, o := range r.Outputs {
		if o.Name == plan.ArtifactsOutput {
			continue
		}
		if o.Manifest == "" {
			return ReasonNoManifest, nil
		}
		hash, files, err := a.manifest(ctx, o.URI)
		if err != nil {
			return "", err
		}
		switch {
		case hash == o.Manifest:
			continue
		case hash == manifestMissing:
			return fmt.Sprintf("recorded output %q is gone", o.Name), nil
		}
		var was []File
		if o.Manifest != manifestMissing {
			// Without the recorded list the change cannot be named file
			// by file; that it changed is still known.
			_ = readJSON(ctx, a.Host, manifestURI(ds, o.Manifest), &was)
		}
		return fmt.Sprintf("recorded output %q changed", o.Name) + manifestChanges(was, files), nil
	}
	return "", nil
}

// manifestChanges names the files that differ between two manifests of
// an output (at most three, then a count), after a colon: "" when there
// is no recorded manifest to compare with.
func manifestChanges(was, now []File) string {
	if was == nil {
		return ""
	}
	old := map[string]File{}
	for _, f := range was {
		old[f.Path] = f
	}
	var out []string
	for _, f := range now {
		o, ok := old[f.Path]
		delete(old, f.Path)
		switch {
		case !ok:
			out = append(out, fileName(f.Path)+" added")
		case o.Size != f.Size && f.Size == 0:
			out = append(out, fmt.Sprintf("%s emptied (%d B → 0 B)", fileName(f.Path), o.Size))
		case o.Size != f.Size:
			out = append(out, fmt.Sprintf("%s changed (%d B → %d B)", fileName(f.Path), o.Size, f.Size))
		case o.Hash != f.Hash || o.Mod != f.Mod:
			out = append(out, fileName(f.Path)+" changed")
		}
	}
	var gone []string
	for p := range old {
		gone = append(gone, fileName(p)+" deleted")
	}
	slices.Sort(gone)
	out = append(out, gone...)
	if len(out) == 0 {
		return ""
	}
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("and %d more", len(out)-3))
	}
	return ": " + strings.Join(out, ", ")
}

// fileName is a manifest's path as a reason shows it: the output itself
// for a file output.
func fileName(p string) string {
	if p == "" {
		return "the file"
	}
	return p
}
