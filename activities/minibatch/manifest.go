package minibatch

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
)

// ManifestName is the manifest's file name in the folder given to Plan.
const ManifestName = "minibatches.manifest"

// manifestMagic starts the trailer; its last byte is the format version.
const manifestMagic = "PORCHMB1"

// trailerSize is the magic and three little-endian uint64: index offset,
// summary offset, summary length.
const trailerSize = len(manifestMagic) + 3*8

// Plan splits in into mini-batches and writes their manifest into dir
// (created if missing). An existing manifest is replaced atomically: the new
// one is written to a temporary file in dir, synced, then renamed over it.
// A user's mistake is an *InputError.
func Plan(in Input, dir string) (Summary, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Summary{}, fmt.Errorf("create manifest folder: %w", err)
	}
	w, err := newWriter(dir)
	if err != nil {
		return Summary{}, err
	}
	defer w.abort()
	switch in.Type {
	case TypeURIFolder, TypeURIFile:
		err = planFiles(in, w)
	case TypeMLTable:
		err = planTable(in, w)
	default:
		err = inputErrorf(in.Path, 0, "input type %q cannot be split into mini-batches: declare the input as uri_folder, uri_file or mltable", in.Type)
	}
	if err != nil {
		return Summary{}, err
	}
	return w.commit(filepath.Join(dir, ManifestName))
}

// writer streams batches into a temporary manifest file. The layout is
//
//	batch 0 JSON \n ... batch n-1 JSON \n
//	index: n+1 little-endian uint64, the offset of each batch's line and the end of the last
//	summary JSON
//	trailer: "PORCHMB1", index offset, summary offset, summary length (uint64 LE)
//
// so Batch(i) reads 16 bytes of index and one line, whatever n is.
type writer struct {
	f       *os.File
	buf     *bufio.Writer
	digest  hash.Hash
	off     int64
	offsets []uint64
	sum     Summary
	line    bytes.Buffer
	enc     *json.Encoder
	done    bool
}

func newWriter(dir string) (*writer, error) {
	f, err := os.CreateTemp(dir, ManifestName+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create manifest: %w", err)
	}
	w := &writer{f: f, buf: bufio.NewWriterSize(f, 256<<10), digest: sha256.New()}
	w.enc = json.NewEncoder(&w.line)
	w.enc.SetEscapeHTML(false)
	return w, nil
}

// add appends b, numbering it; the batch's line (Encode ends it with a
// newline) is what the digest covers.
func (w *writer) add(b *Batch) error {
	b.Index = len(w.offsets)
	w.line.Reset()
	if err := w.enc.Encode(b); err != nil {
		return fmt.Errorf("encode mini-batch %d: %w", b.Index, err)
	}
	w.offsets = append(w.offsets, uint64(w.off))
	w.digest.Write(w.line.Bytes())
	n, err := w.buf.Write(w.line.Bytes())
	w.off += int64(n)
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	w.sum.Batches++
	w.sum.Items += int64(b.Items)
	return nil
}

func (w *writer) commit(dst string) (Summary, error) {
	w.offsets = append(w.offsets, uint64(w.off))
	w.sum.Digest = hex.EncodeToString(w.digest.Sum(nil))
	indexOff := w.off
	var word [8]byte
	for _, o := range w.offsets {
		binary.LittleEndian.PutUint64(word[:], o)
		w.buf.Write(word[:])
	}
	sumOff := indexOff + 8*int64(len(w.offsets))
	sumJSON, err := json.Marshal(w.sum)
	if err != nil {
		return Summary{}, fmt.Errorf("encode manifest summary: %w", err)
	}
	w.buf.Write(sumJSON)
	w.buf.WriteString(manifestMagic)
	for _, v := range []int64{indexOff, sumOff, int64(len(sumJSON))} {
		binary.LittleEndian.PutUint64(word[:], uint64(v))
		w.buf.Write(word[:])
	}
	if err := w.buf.Flush(); err != nil {
		return Summary{}, fmt.Errorf("write manifest: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return Summary{}, fmt.Errorf("sync manifest: %w", err)
	}
	if err := w.f.Close(); err != nil {
		return Summary{}, fmt.Errorf("close manifest: %w", err)
	}
	if err := os.Rename(w.f.Name(), dst); err != nil {
		return Summary{}, fmt.Errorf("replace manifest: %w", err)
	}
	w.done = true
	return w.sum, nil
}

// abort removes the temporary file unless commit renamed it.
func (w *writer) abort() {
	if w.done {
		return
	}
	w.f.Close()
	os.Remove(w.f.Name())
}

// Manifest is an open manifest written by Plan. Its methods are safe for
// concurrent use; Batch reads only what it returns.
type Manifest struct {
	f        *os.File
	path     string
	sum      Summary
	indexOff int64
}

// Open opens the manifest Plan wrote into dir. It reads the summary only.
func Open(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestName)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open mini-batch manifest: %w", err)
	}
	m := &Manifest{f: f, path: path}
	if err := m.readSummary(); err != nil {
		f.Close()
		return nil, fmt.Errorf("mini-batch manifest %q is damaged (%v): plan the step again", path, err)
	}
	return m, nil
}

func (m *Manifest) readSummary() error {
	st, err := m.f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size < int64(trailerSize) {
		return errors.New("too short")
	}
	tr := make([]byte, trailerSize)
	if _, err := m.f.ReadAt(tr, size-int64(trailerSize)); err != nil {
		return err
	}
	if string(tr[:len(manifestMagic)]) != manifestMagic {
		return errors.New("no porch manifest trailer")
	}
	word := func(i int) int64 { return int64(binary.LittleEndian.Uint64(tr[len(manifestMagic)+8*i:])) }
	indexOff, sumOff, sumLen := word(0), word(1), word(2)
	if sumOff < indexOff || sumLen < 0 || sumOff+sumLen != size-int64(trailerSize) {
		return errors.New("inconsistent trailer")
	}
	buf := make([]byte, sumLen)
	if _, err := m.f.ReadAt(buf, sumOff); err != nil {
		return err
	}
	if err := json.Unmarshal(buf, &m.sum); err != nil {
		return err
	}
	if m.sum.Batches < 0 || indexOff+8*int64(m.sum.Batches+1) != sumOff {
		return errors.New("index does not match the batch count")
	}
	m.indexOff = indexOff
	return nil
}

// Summary returns what planning found.
func (m *Manifest) Summary() Summary { return m.sum }

// Len returns the number of mini-batches.
func (m *Manifest) Len() int { return m.sum.Batches }

// Batch reads mini-batch i (0 <= i < Len()): 16 bytes of the index and the
// batch's own line, nothing else.
func (m *Manifest) Batch(i int) (Batch, error) {
	if i < 0 || i >= m.sum.Batches {
		return Batch{}, fmt.Errorf("mini-batch %d does not exist: manifest %q holds %d", i, m.path, m.sum.Batches)
	}
	var ix [16]byte
	if _, err := m.f.ReadAt(ix[:], m.indexOff+8*int64(i)); err != nil {
		return Batch{}, fmt.Errorf("read index of mini-batch %d in %q: %w", i, m.path, err)
	}
	start := int64(binary.LittleEndian.Uint64(ix[:8]))
	end := int64(binary.LittleEndian.Uint64(ix[8:]))
	if start < 0 || end <= start || end > m.indexOff {
		return Batch{}, fmt.Errorf("mini-batch manifest %q is damaged at batch %d: plan the step again", m.path, i)
	}
	line := make([]byte, end-start)
	if _, err := m.f.ReadAt(line, start); err != nil {
		return Batch{}, fmt.Errorf("read mini-batch %d in %q: %w", i, m.path, err)
	}
	var b Batch
	if err := json.Unmarshal(line, &b); err != nil || b.Index != i {
		return Batch{}, fmt.Errorf("mini-batch manifest %q is damaged at batch %d: plan the step again", m.path, i)
	}
	return b, nil
}

// Close closes the manifest file.
func (m *Manifest) Close() error { return m.f.Close() }
