package metrics

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestReadPartialLinesAndOffsets(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)

	recs, off, err := Read(path, 0, 0)
	require.NoError(t, err, "a missing file is no records yet")
	assert.Empty(t, recs)
	assert.Zero(t, off)

	first := `{"kind":"metric","key":"loss","value":0.5,"step":1,"time":10.5}` + "\n"
	appendTo(t, path, first+`{"kind":"metric","key":"lo`)
	recs, off, err = Read(path, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []Record{{Kind: KindMetric, Key: "loss", Value: 0.5, Step: 1, HasStep: true, Time: 10.5}}, recs)
	assert.Equal(t, int64(len(first)), off, "the partial second line waits")

	recs, off2, err := Read(path, off, 0)
	require.NoError(t, err)
	assert.Empty(t, recs)
	assert.Equal(t, off, off2, "still partial: the offset stays")

	appendTo(t, path, `ss","value":"NaN","time":11}`+"\n"+`{"kind":"param","key":"lr","value":"0.01","time":12}`+"\n")
	recs, off, err = Read(path, off, 0)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, "loss", recs[0].Key)
	assert.True(t, math.IsNaN(recs[0].Value))
	assert.False(t, recs[0].HasStep)
	assert.Equal(t, Record{Kind: KindParam, Key: "lr", Text: "0.01", Time: 12}, recs[1])
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, info.Size(), off)
}

func TestReadMaxBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l1 := `{"kind":"metric","key":"a","value":1,"step":0,"time":1}` + "\n"
	l2 := `{"kind":"metric","key":"a","value":2,"step":1,"time":2}` + "\n"
	appendTo(t, path, l1+l2)

	// A window that ends inside the second line returns the first only.
	recs, off, err := Read(path, 0, len(l1)+5)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, 0, recs[0].Step)
	assert.True(t, recs[0].HasStep, "step 0 is a step")
	recs, off, err = Read(path, off, len(l1)+5)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, 2.0, recs[0].Value)
	assert.Equal(t, int64(len(l1+l2)), off)
}

func TestReaderSkipsMalformedAndLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	long := `{"kind":"tag","key":"blob","value":"` + strings.Repeat("x", 300) + `"}` + "\n"
	appendTo(t, path, strings.Join([]string{
		`not json`,
		`{"kind":"metric","key":"acc","value":"high"}`,
		`{"kind":"metric","key":"acc","value":0.9,"step":1.5}`,
		`{"key":"acc","value":0.9}`,
		``,
		`{"kind":"metric","key":"acc","value":0.75}`,
	}, "\n")+"\n"+long+`{"kind":"metric","key":"acc","value":"-Infinity"}`+"\n")

	r := &Reader{Path: path}
	var got []Record
	for range 10 {
		recs, err := r.Next(128)
		require.NoError(t, err)
		got = append(got, recs...)
	}
	require.Len(t, got, 2)
	assert.Equal(t, 0.75, got[0].Value)
	assert.True(t, math.IsInf(got[1].Value, -1))
	assert.Equal(t, 5, r.Malformed, "4 bad lines and one longer than the window")
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, info.Size(), r.Offset)
}

func TestReaderRestartsOnReplacedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	appendTo(t, path, `{"kind":"metric","key":"a","value":1}`+"\n"+`{"kind":"metric","key":"a","value":2}`+"\n")
	r := &Reader{Path: path}
	recs, err := r.Next(0)
	require.NoError(t, err)
	require.Len(t, recs, 2)

	// A new attempt of the step removes the artifacts folder and starts over.
	require.NoError(t, os.Remove(path))
	appendTo(t, path, `{"kind":"metric","key":"a","value":3}`+"\n")
	recs, err = r.Next(0)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, 3.0, recs[0].Value)
	assert.Equal(t, 1, r.Restarts)
}

func TestReadUnreadableFile(t *testing.T) {
	dir := t.TempDir()
	_, _, err := Read(dir, 0, 0)
	require.Error(t, err, "a folder is not a metrics file")
	assert.Contains(t, err.Error(), "read metrics file")
}

func TestCollectStepNumbering(t *testing.T) {
	recs := []Record{
		{Kind: KindMetric, Key: "loss", Value: 3},
		{Kind: KindParam, Key: "lr", Text: "0.1"},
		{Kind: KindMetric, Key: "acc", Value: 0.5, Step: 10, HasStep: true},
		{Kind: KindMetric, Key: "loss", Value: 2},
		{Kind: KindMetric, Key: "acc", Value: 0.6, Step: 0, HasStep: true},
		{Kind: KindMetric, Key: "loss", Value: 1},
	}
	s := Collect(recs)
	assert.Equal(t, Series{
		"loss": {{Step: 1, Value: 3}, {Step: 2, Value: 2}, {Step: 3, Value: 1}},
		"acc":  {{Step: 10, Value: 0.5}, {Step: 0, Value: 0.6}},
	}, s)
	last, ok := s.Last("loss")
	assert.True(t, ok)
	assert.Equal(t, Point{Step: 3, Value: 1}, last)
	_, ok = s.Last("missing")
	assert.False(t, ok)

	// Records read in two batches number as if read at once.
	inc := Collect(recs[:4])
	inc.Add(recs[4:])
	assert.Equal(t, s, inc)
}

func TestJSONRoundTripKeepsNaN(t *testing.T) {
	recs := []Record{
		{Kind: KindMetric, Key: "loss", Value: math.Inf(1), Step: 0, HasStep: true, Time: 1.5},
		{Kind: KindMetric, Key: "loss", Value: 0.25},
		{Kind: KindTag, Key: "model", Text: "cnn", Time: 2},
		{Kind: KindArtifact, Key: "model"},
	}
	b, err := json.Marshal(recs)
	require.NoError(t, err)
	var back []Record
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, recs, back)

	pts := []Point{{Step: 1, Value: math.NaN()}, {Step: 2, Value: -1e300}}
	b, err = json.Marshal(pts)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"step":1,"value":"NaN"},{"step":2,"value":-1e300}]`, string(b))
	var ptsBack []Point
	require.NoError(t, json.Unmarshal(b, &ptsBack))
	assert.True(t, math.IsNaN(ptsBack[0].Value))
	assert.Equal(t, pts[1], ptsBack[1])

	var r Record
	err = json.Unmarshal([]byte(`{"kind":"metric","key":"x","value":"lots"}`), &r)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "numeric metric value")
}
