package reuse

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore/s3test"
	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) }

// store is a worker whose runs' default datastore is a folder of its
// porch home or, on MinIO, an s3 datastore: where records and outputs
// live.
type store struct {
	a    *Activities
	home string
	ds   string
}

// backends runs a test once per kind of default datastore.
func backends(t *testing.T, test func(t *testing.T, s *store)) {
	t.Run("local", func(t *testing.T) { test(t, localStore(t)) })
	t.Run("minio", func(t *testing.T) { test(t, minioStore(t)) })
}

func localStore(t *testing.T) *store {
	home := t.TempDir()
	return &store{home: home, ds: testDS,
		a: &Activities{Host: &stepio.Host{Home: home}, Hasher: &Hasher{Dir: filepath.Join(home, "cache", "reuse")}}}
}

// minioStore's default datastore is a bucket of a real MinIO server; the
// test is skipped where MinIO is not installed.
func minioStore(t *testing.T) *store {
	endpoint, access, secret, bucket := s3test.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	d := plan.Datastore{Name: "minio", Type: plan.DatastoreS3, Endpoint: endpoint, Bucket: bucket, Prefix: "porch"}
	s := localStore(t)
	s.ds = d.Name
	s.a.Host.Datastores = func(context.Context) ([]plan.Datastore, error) { return []plan.Datastore{d}, nil }
	return s
}

// output is where a run's step writes its output out.
func (s *store) output(run, step string) string {
	return plan.DefaultOutputURI(s.ds, run, step, "out")
}

// write writes a file of the output folder uri, as a step would.
func (s *store) write(t *testing.T, uri, name, content string) {
	t.Helper()
	ctx := context.Background()
	s.a.Host.RefreshDatastores(ctx, uri)
	if d, p, ok := s.a.Host.ObjectLocation(uri); ok {
		o, err := s.a.Host.ObjectStore(d)
		require.NoError(t, err)
		require.NoError(t, o.Put(ctx, strings.TrimSuffix(p, "/")+"/"+name, bytes.NewReader([]byte(content)), int64(len(content))))
		return
	}
	local, err := s.a.Host.LocalPath(uri)
	require.NoError(t, err)
	writeOld(t, filepath.Join(local, name), content)
}

// remove deletes a file of the output folder uri.
func (s *store) remove(t *testing.T, uri, name string) {
	t.Helper()
	ctx := context.Background()
	if d, p, ok := s.a.Host.ObjectLocation(uri); ok {
		o, err := s.a.Host.ObjectStore(d)
		require.NoError(t, err)
		require.NoError(t, o.RemoveAll(ctx, strings.TrimSuffix(p, "/")+"/"+name))
		return
	}
	local, err := s.a.Host.LocalPath(uri)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(local, name)))
}

// step is a command step of the pipeline "chain" reading the input src
// (an output of the step "prep" when upstream is set, or a literal).
func (s *store) step(run, path string, src *plan.Data) DecideInput {
	in := DecideInput{
		Pipeline: "chain", RunID: run, DefaultDatastore: s.ds,
		Step: plan.Step{Name: path, Path: path, Type: plan.StepCommand,
			Command: &plan.Command{Template: plan.Template{Source: "cp -r ${{inputs.src}} ${{outputs.out}}"}},
			Outputs: []plan.Output{{Name: "out", Type: "uri_folder"}}},
		Inputs: []plan.Input{{Name: "src", Type: "string", Value: plan.Value{Kind: plan.ValueLiteral, Literal: "x"}}},
	}
	if src != nil {
		in.Inputs[0] = plan.Input{Name: "src", Type: "uri_folder", Value: plan.Value{Kind: plan.ValueData, Data: src}}
	}
	return in
}

// recordOf is the record a run leaves for a step that succeeded.
func recordOf(in DecideInput, d Decision, out string) Record {
	return Record{Key: d.Key, Pipeline: in.Pipeline, Run: in.RunID, Step: in.Step.Path, Parts: d.Parts,
		Outputs: []Output{{Name: "out", URI: out}}}
}
