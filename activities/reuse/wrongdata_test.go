package reuse

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// decide decides a step and fails the test on an error.
func decide(t *testing.T, s *store, in DecideInput) Decision {
	t.Helper()
	d, err := s.a.DecideReuse(context.Background(), in)
	require.NoError(t, err)
	return d
}

// TestARecordIsReusedOnlyWhileItsOutputsHoldWhatTheyHeld: a record lists
// its outputs' files (a manifest); a file of a recorded output emptied or
// deleted, its folder left in place, makes the step run and say which.
func TestARecordIsReusedOnlyWhileItsOutputsHoldWhatTheyHeld(t *testing.T) {
	backends(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		in := s.step("run1", "make", nil)
		first := decide(t, s, in)
		out := s.output("run1", "make")
		s.write(t, out, "a.txt", "alpha")
		s.write(t, out, "b.txt", "beta")
		require.NoError(t, s.a.RecordReuse(ctx, RecordInput{DefaultDatastore: s.ds, Records: []Record{recordOf(in, first, out)}}))

		again := decide(t, s, s.step("run2", "make", nil))
		require.NotNil(t, again.Reused, again.Reason)
		assert.Equal(t, 2, again.Reused.Outputs[0].Files)
		assert.Equal(t, int64(9), again.Reused.Outputs[0].Bytes)

		s.write(t, out, "b.txt", "")
		emptied := decide(t, s, s.step("run3", "make", nil))
		assert.Nil(t, emptied.Reused)
		assert.Equal(t, `recorded output "out" changed: b.txt emptied (4 B → 0 B)`, emptied.Reason)

		s.write(t, out, "b.txt", "beta")
		require.NotNil(t, decide(t, s, s.step("run4", "make", nil)).Reused, "the files as recorded again")

		s.remove(t, out, "a.txt")
		deleted := decide(t, s, s.step("run5", "make", nil))
		assert.Nil(t, deleted.Reused)
		assert.Equal(t, `recorded output "out" changed: a.txt deleted`, deleted.Reason)

		s.write(t, out, "a.txt", "ALPHA")
		changed := decide(t, s, s.step("run6", "make", nil))
		assert.Equal(t, `recorded output "out" changed: a.txt changed`, changed.Reason, "same size, other content")
	})
}

// TestADependantIsKeyedByTheOutputItRead: two runs that both ran prep
// under one key wrote different outputs; each run's train read its own.
// The key's record names the run that recorded prep last, and a later run
// that reuses prep from it must reuse train from that same run too, never
// a train computed from the other run's prep.
func TestADependantIsKeyedByTheOutputItRead(t *testing.T) {
	backends(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		prepA, prepB := s.step("A", "prep", nil), s.step("B", "prep", nil)
		dA, dB := decide(t, s, prepA), decide(t, s, prepB)
		require.Equal(t, dA.Key, dB.Key)
		outA, outB := s.output("A", "prep"), s.output("B", "prep")
		s.write(t, outA, "model.txt", "weights of A")
		s.write(t, outB, "model.txt", "weights of B")
		record := func(recs ...Record) {
			require.NoError(t, s.a.RecordReuse(ctx, RecordInput{DefaultDatastore: s.ds, Records: recs}))
		}
		record(recordOf(prepA, dA, outA))
		record(recordOf(prepB, dB, outB)) // the key's record now names B's output

		train := func(run, from string, ran bool) (DecideInput, Decision) {
			in := s.step(run, "train", &plan.Data{Type: "uri_folder", Path: from})
			in.Upstream = []Upstream{{Input: "src", Step: "prep", Output: "out", Ran: ran}}
			return in, decide(t, s, in)
		}
		trainA, tA := train("A", outA, true)
		trainB, tB := train("B", outB, true)
		assert.NotEqual(t, tA.Key, tB.Key, "the two trains read different outputs")
		s.write(t, s.output("A", "train"), "score.txt", "A")
		s.write(t, s.output("B", "train"), "score.txt", "B")
		record(recordOf(trainB, tB, s.output("B", "train")))
		record(recordOf(trainA, tA, s.output("A", "train"))) // A ends last

		prep := decide(t, s, s.step("C", "prep", nil))
		require.NotNil(t, prep.Reused, prep.Reason)
		require.Equal(t, "B", prep.Reused.Run)
		_, tC := train("C", prep.Reused.Outputs[0].URI, false)
		require.NotNil(t, tC.Reused, tC.Reason)
		assert.Equal(t, "B", tC.Reused.Run, "train is reused from the run whose prep output it reads")
	})
}

// TestAChangedDefaultDatastoreIsNamed: records live on a run's default
// datastore; a run whose default_datastore changed finds none there, and
// says what changed rather than "first run".
func TestAChangedDefaultDatastoreIsNamed(t *testing.T) {
	backends(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		in := s.step("run1", "make", nil)
		first := decide(t, s, in)
		assert.Equal(t, ReasonFirstRun, first.Reason)
		out := s.output("run1", "make")
		s.write(t, out, "m.txt", "made")
		require.NoError(t, s.a.RecordReuse(ctx, RecordInput{DefaultDatastore: s.ds, Records: []Record{recordOf(in, first, out)}}))

		other := s.step("run2", "make", nil)
		other.DefaultDatastore = "otherstore"
		if s.ds == "otherstore" {
			other.DefaultDatastore = testDS
		}
		d := decide(t, s, other)
		assert.Nil(t, d.Reused)
		assert.Equal(t, "default_datastore changed ("+s.ds+" → "+other.DefaultDatastore+")", d.Reason)
		assert.Equal(t, "run1", d.WasRun, "explained against the record on the other datastore")

		other.Inputs[0].Value.Literal = "y"
		d = decide(t, s, other)
		assert.Equal(t, "default_datastore changed ("+s.ds+" → "+other.DefaultDatastore+`); input "src" changed (x → y)`, d.Reason)
	})
}

// TestARecordWithoutManifestIsNotReused: a record an older porch wrote
// lists no files, so what its outputs hold cannot be checked: the step
// runs, says so, and its own record lists them.
func TestARecordWithoutManifestIsNotReused(t *testing.T) {
	backends(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		in := s.step("run1", "make", nil)
		first := decide(t, s, in)
		out := s.output("run1", "make")
		s.write(t, out, "m.txt", "made")
		old := recordOf(in, first, out)
		s.a.Host.RefreshDatastores(ctx, KeyURI(s.ds, old.Key))
		require.NoError(t, writeJSON(ctx, s.a.Host, KeyURI(s.ds, old.Key), old))

		d := decide(t, s, s.step("run2", "make", nil))
		assert.Nil(t, d.Reused)
		assert.Equal(t, ReasonNoManifest, d.Reason)
		require.NoError(t, s.a.RecordReuse(ctx, RecordInput{DefaultDatastore: s.ds, Records: []Record{recordOf(s.step("run2", "make", nil), d, out)}}))
		require.NotNil(t, decide(t, s, s.step("run3", "make", nil)).Reused)
	})
}
