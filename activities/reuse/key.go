package reuse

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"slices"
	"strings"
	"time"
)

// Part is one thing that decides a step's result, and its hash.
type Part struct {
	// Name says what the part is: "command", "environment", "code",
	// `input "data"`, ...
	Name string `json:"name"`
	Hash string `json:"hash"`
	// Detail is what names a change of the part to a reader: a literal
	// input's value, the code snapshot's folder, the upstream step an
	// input comes from.
	Detail string `json:"detail,omitempty"`
	// Step is the upstream step an input's value is an output of; its
	// key stands for the content.
	Step string `json:"step,omitempty"`
}

// Key is the hash of a step's parts, whatever their order.
func Key(parts []Part) string {
	sorted := slices.Clone(parts)
	slices.SortFunc(sorted, func(a, b Part) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	io.WriteString(h, "porch reuse key 1\n")
	for _, p := range sorted {
		io.WriteString(h, p.Name+"\x00"+p.Hash+"\n")
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hashOf is the hex SHA-256 of s.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Output is where one of a step's outputs landed.
type Output struct {
	Name string `json:"name"`
	URI  string `json:"uri"`
	// Manifest is the hash of the output's files as recorded (their
	// list is kept under it); Files and Bytes count them. Records of a
	// porch before manifests have none, and are not reused.
	Manifest string `json:"manifest,omitempty"`
	Files    int    `json:"files,omitempty"`
	Bytes    int64  `json:"bytes,omitempty"`
}

// Record is a successful step's outputs under its reuse key.
type Record struct {
	Key      string `json:"key"`
	Pipeline string `json:"pipeline"`
	// Run and Step are the run and step path that produced the outputs.
	Run     string    `json:"run"`
	Step    string    `json:"step"`
	Parts   []Part    `json:"parts"`
	Outputs []Output  `json:"outputs"`
	Created time.Time `json:"created"`
}

// Short is a hash's first characters, as reasons show it.
func Short(hash string) string {
	if len(hash) > 8 {
		return hash[:8] + "…"
	}
	return hash
}
