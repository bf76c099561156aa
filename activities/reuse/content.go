package reuse

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/porch-pipelines/porch/activities/codesnapshot"
	"github.com/porch-pipelines/porch/activities/objectstore"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// maxDetail bounds a literal shown in a reason.
const maxDetail = 40

// inputPart is an input's part: a literal's value, the files of an
// upstream step's output, or the content of a file or folder.
func (a *Activities) inputPart(ctx context.Context, in plan.Input, up *Upstream) (Part, error) {
	p := Part{Name: InputPart(in.Name)}
	switch {
	case in.Value.Kind == plan.ValueLiteral:
		p.Hash, p.Detail = hashOf("literal "+in.Value.Literal), clip(in.Value.Literal)
	case in.Value.Kind != plan.ValueData || in.Value.Data == nil:
		p.Hash = hashOf("none")
	case up != nil:
		// An upstream output counts as the output it is, where it is and
		// with the files it holds (as a record's manifest lists them),
		// never by the key that made it: two runs of one key may write
		// different files, and a dependant is reused only with the very
		// output it was computed from. An upstream step that ran again
		// wrote a new output, so its dependants run, as in Azure ML.
		hash, _, err := a.manifest(ctx, in.Value.Data.Path)
		if err != nil {
			return p, fmt.Errorf("input %q: %w", in.Name, err)
		}
		p.Hash, p.Step = hashOf("output "+in.Value.Data.Path+" "+hash), up.Step
	default:
		sum, err := a.content(ctx, in.Value.Data.Path)
		if err != nil {
			return p, fmt.Errorf("input %q: %w", in.Name, err)
		}
		p.Hash = sum
	}
	return p, nil
}

func clip(s string) string {
	if len([]rune(s)) > maxDetail {
		return string([]rune(s)[:maxDetail]) + "…"
	}
	return s
}

// content is the hash of the file or folder at uri: its objects' paths and
// ETags on an s3 datastore, its files' paths and contents otherwise. Data
// that is not there hashes as missing: the step runs, and says so itself.
func (a *Activities) content(ctx context.Context, uri string) (string, error) {
	files, err := a.files(ctx, uri)
	if errors.Is(err, fs.ErrNotExist) {
		return hashOf("missing " + uri), nil
	}
	if err != nil {
		return "", err
	}
	return sumFiles(files), nil
}

// files are the files of the file or folder at uri, each with its hash
// (an ETag on object storage), in path order.
func (a *Activities) files(ctx context.Context, uri string) ([]File, error) {
	if stepio.WebURL(uri) {
		return a.webFiles(ctx, uri)
	}
	if d, p, ok := a.Host.ObjectLocation(uri); ok {
		s, err := a.Host.ObjectStore(d)
		if err != nil {
			return nil, err
		}
		return objectFiles(ctx, s, strings.TrimSuffix(p, "/"))
	}
	local, err := a.Host.LocalPath(uri)
	if err != nil {
		return nil, err
	}
	_, files, err := a.Hasher.Tree(local)
	return files, err
}

// webFiles is a web URL's file: its version as the server names it (ETag,
// else Last-Modified), without fetching it; a server that names none is
// fetched into the cache and its content hashed.
func (a *Activities) webFiles(ctx context.Context, uri string) ([]File, error) {
	version, err := a.Host.WebVersion(ctx, uri)
	if err != nil {
		return nil, err
	}
	if version != "" {
		return []File{{Hash: "web " + uri + " " + version}}, nil
	}
	f, err := a.Host.WebFile(ctx, uri)
	if err != nil {
		return nil, err
	}
	return []File{{Hash: "sha256 " + f.SHA256}}, nil
}

// objectFiles lists the object p, or the objects of the folder p.
func objectFiles(ctx context.Context, s *objectstore.Store, p string) ([]File, error) {
	objs, err := s.List(ctx, p)
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		o, err := s.Head(ctx, p)
		if err != nil {
			return nil, err
		}
		return []File{{Hash: "etag " + o.ETag, Size: o.Size}}, nil
	}
	files := make([]File, 0, len(objs))
	for _, o := range objs {
		files = append(files, File{Path: o.Path, Hash: "etag " + o.ETag, Size: o.Size})
	}
	slices.SortFunc(files, func(x, y File) int { return strings.Compare(x.Path, y.Path) })
	return files, nil
}

// codePart is the code's part: a snapshot's content hash, which its URI
// holds, or the hash of a local code folder as a snapshot would take it
// (the same ignore rules). A local folder's files and their hashes are
// kept on the datastore ds under that hash, so a later change can be
// named file by file.
func (a *Activities) codePart(ctx context.Context, ds, code string) (Part, error) {
	p := Part{Name: PartCode, Detail: code}
	if hash, ok := snapshotHash(code); ok {
		p.Hash = hash
		return p, nil
	}
	// The porch home is left out, as a snapshot leaves it out.
	t, err := codesnapshot.Scan(code, a.Host.Home)
	if err != nil {
		return p, fmt.Errorf("code %q: %w", code, err)
	}
	p.Hash = t.Hash
	uri := codeFilesURI(ds, t.Hash)
	if ok, err := exists(ctx, a.Host, uri); err != nil || ok {
		return p, err
	}
	// Only what the snapshot holds: the ignore rules are codesnapshot's.
	var rels []string
	for _, e := range t.Entries {
		if e.Kind == codesnapshot.KindFile {
			rels = append(rels, strings.TrimPrefix(strings.TrimPrefix(e.Path, t.Name), "/"))
		}
	}
	files, err := a.Hasher.Files(t.Root, rels)
	if err != nil {
		return p, fmt.Errorf("code %q: %w", code, err)
	}
	return p, writeJSON(ctx, a.Host, uri, files)
}

// snapshotHash is the hash a code snapshot's URI holds.
func snapshotHash(code string) (string, bool) {
	if _, rest, ok := plan.SplitDatastoreURI(code); ok {
		if hash, _, ok := codesnapshot.ParsePath(strings.TrimSuffix(rest, "/")); ok {
			return hash, true
		}
	}
	return "", false
}

// codeChanges names the files that differ between two versions of a
// step's code (at most three, then a count), or "" when either is not
// there to compare: snapshots are listed on their datastore, local code
// folders compared by the files kept under their hashes.
func (a *Activities) codeChanges(ctx context.Context, ds string, was, now Comparison) string {
	list := func(code, hash string) ([]File, error) {
		if _, ok := snapshotHash(code); ok {
			return a.files(ctx, code)
		}
		var files []File
		err := readJSON(ctx, a.Host, codeFilesURI(ds, hash), &files)
		return files, err
	}
	old, err := list(was.WasDetail, was.Was)
	if err != nil {
		return ""
	}
	cur, err := list(now.Detail, now.Hash)
	if err != nil {
		return ""
	}
	names := diffFiles(old, cur)
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.Join(names, ", ")
}

// diffFiles names the files added, removed or changed between two lists.
func diffFiles(old, cur []File) []string {
	was := map[string]string{}
	for _, f := range old {
		was[f.Path] = f.Hash
	}
	var out []string
	for _, f := range cur {
		if h, ok := was[f.Path]; !ok || h != f.Hash {
			out = append(out, f.Path)
		}
		delete(was, f.Path)
	}
	var gone []string
	for p := range was {
		gone = append(gone, p+" (removed)")
	}
	slices.Sort(gone)
	return append(out, gone...)
}
