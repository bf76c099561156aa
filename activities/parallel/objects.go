package parallel

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/porch-pipelines/porch/activities/minibatch"
	"github.com/porch-pipelines/porch/activities/stepio"
)

// fetched counts what a worker fetched of a mini-batch's input.
type fetched struct {
	objects int
	bytes   int64
}

// fetchBatch brings the objects of a mini-batch whose input is on a
// datastore into a folder of the worker's own (under its working folder),
// and returns the batch with local paths: whole objects for a file list,
// only each part's byte range (after its header, when the part needs one)
// for a tabular batch. A batch on local files is returned as it is.
// cleanup removes the folder.
func (rt *parallelRuntime) fetchBatch(ctx context.Context, b minibatch.Batch, attempt int32) (minibatch.Batch, func(), error) {
	dir := filepath.Join(rt.work, ".porch-inputs", strconv.Itoa(b.Index)+"-"+strconv.Itoa(int(attempt)))
	cleanup := func() { _ = os.RemoveAll(dir) }
	bf := batchFetch{a: rt.a, dir: dir}
	out, err := bf.batch(ctx, b)
	if bf.got.objects > 0 {
		rt.log(fmt.Sprintf("porch: mini-batch %d: fetched %d objects or byte ranges (%d bytes) from the datastore", b.Index, bf.got.objects, bf.got.bytes))
	}
	return out, cleanup, err
}

// batchFetch fetches one mini-batch's objects into dir.
type batchFetch struct {
	a   *Activities
	dir string
	got fetched
}

func (bf *batchFetch) batch(ctx context.Context, b minibatch.Batch) (minibatch.Batch, error) {
	out := b
	if len(b.Files) > 0 {
		out.Files = make([]string, len(b.Files))
		for i, uri := range b.Files {
			p, err := bf.file(ctx, uri)
			if err != nil {
				return b, err
			}
			out.Files[i] = p
		}
	}
	if b.Table == nil {
		return out, nil
	}
	t := *b.Table
	t.Parts = make([]minibatch.Part, len(b.Table.Parts))
	if local, ok := bf.local(t.Read.Root); ok {
		t.Read.Root = local
	}
	for i, part := range b.Table.Parts {
		p, err := bf.part(ctx, part)
		if err != nil {
			return b, err
		}
		t.Parts[i] = p
	}
	out.Table = &t
	return out, nil
}

// local is where uri, on an s3 datastore, goes in the batch's folder.
func (bf *batchFetch) local(uri string) (string, bool) {
	d, rest, ok := bf.a.ObjectLocation(uri)
	if !ok {
		return uri, false
	}
	return filepath.Join(bf.dir, d.Name, filepath.FromSlash(path.Clean("/"+rest))), true
}

// file fetches the whole object uri.
func (bf *batchFetch) file(ctx context.Context, uri string) (string, error) {
	d, rest, ok := bf.a.ObjectLocation(uri)
	if !ok {
		return uri, nil
	}
	dst, _ := bf.local(uri)
	s, err := bf.a.ObjectStore(d)
	if err == nil {
		err = s.GetFile(ctx, rest, dst)
	}
	if err != nil {
		return "", stepio.StoreError(fmt.Sprintf("fetch %s", uri), err)
	}
	info, err := os.Stat(dst)
	if err != nil {
		return "", err
	}
	bf.got.objects++
	bf.got.bytes += info.Size()
	return dst, nil
}

// part fetches a part's byte range, after the header it needs, into a file
// of its own that the driver reads whole.
func (bf *batchFetch) part(ctx context.Context, p minibatch.Part) (minibatch.Part, error) {
	d, rest, ok := bf.a.ObjectLocation(p.Path)
	if !ok {
		return p, nil
	}
	dst, _ := bf.local(p.Path)
	s, err := bf.a.ObjectStore(d)
	if err != nil {
		return p, stepio.StoreError(fmt.Sprintf("fetch %s", p.Path), err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return p, err
	}
	file, err := os.Create(dst)
	if err != nil {
		return p, err
	}
	defer file.Close()
	var n int64
	if p.Header {
		hpath := p.HeaderPath
		if hpath == "" {
			hpath = p.Path
		}
		hd, hrest, ok := bf.a.ObjectLocation(hpath)
		if !ok || hd.Name != d.Name {
			return p, fmt.Errorf("the header of %s is in %s, not on the same datastore: plan the step again", p.Path, hpath)
		}
		got, err := s.GetRange(ctx, hrest, 0, p.HeaderLength, file)
		if err != nil {
			return p, stepio.StoreError(fmt.Sprintf("fetch the header of %s", p.Path), err)
		}
		n += got
	}
	got, err := s.GetRange(ctx, rest, p.Offset, p.Length, file)
	if err != nil {
		return p, stepio.StoreError(fmt.Sprintf("fetch bytes %d-%d of %s", p.Offset, p.Offset+p.Length, p.Path), err)
	}
	n += got
	if err := file.Close(); err != nil {
		return p, err
	}
	bf.got.objects++
	bf.got.bytes += n
	return minibatch.Part{Path: dst, Offset: 0, Length: n, Rows: p.Rows}, nil
}

// objectOutputs are a parallel step's uri_folder outputs on s3 datastores
// as one worker stages them: run() writes into a staging folder, and the
// files a mini-batch wrote are uploaded when it succeeds, before its done
// record. FinishParallel commits the outputs.
type objectOutputs struct {
	a   *Activities
	ups []stepio.Upload
	// mu serialises uploads; sent holds each uploaded file's size and
	// modification time, so a file is uploaded again only when it
	// changed. A file another mini-batch is still writing may go up
	// unfinished; it goes up again when that mini-batch succeeds, and no
	// reader takes the output for whole before FinishParallel commits it.
	mu   sync.Mutex
	sent map[string]sentFile
}

type sentFile struct {
	size int64
	mod  time.Time
}

// upload sends the staged files that are new or changed since the last
// upload. A failure is retryable: the mini-batch is retried.
func (o *objectOutputs) upload(ctx context.Context) error {
	if o == nil || len(o.ups) == 0 {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sent == nil {
		o.sent = map[string]sentFile{}
	}
	for _, u := range o.ups {
		s, err := o.a.ObjectStore(u.Store)
		if err != nil {
			return stepio.StoreError(fmt.Sprintf("output %q: open datastore %q", u.Name, u.Store.Name), err)
		}
		err = filepath.WalkDir(u.Local, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := os.Stat(p)
			if err != nil || !info.Mode().IsRegular() {
				return err
			}
			now := sentFile{size: info.Size(), mod: info.ModTime()}
			if o.sent[p] == now {
				return nil
			}
			rel, err := filepath.Rel(u.Local, p)
			if err != nil {
				return err
			}
			if _, err := s.PutFile(ctx, p, u.Path+"/"+filepath.ToSlash(rel)); err != nil {
				return stepio.StoreError(fmt.Sprintf("upload output %q to datastore %q", u.Name, u.Store.Name), err)
			}
			o.sent[p] = now
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
