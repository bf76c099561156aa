package launch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/porch-pipelines/porch/activities/lifeline"
)

// BuildError is an image build that failed: the step cannot run in its
// environment until what the build says is fixed.
type BuildError struct {
	Runtime Runtime
	What    string
	// Output is the end of the build's output.
	Output string
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("building %s with %s failed: %s", e.What, e.Runtime.Kind, e.Output)
}

// pipVars are the worker's pip settings a derived image's build passes
// on, so that it installs from the index the worker uses.
var pipVars = []string{"PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_FIND_LINKS", "PIP_NO_INDEX"}

// Build builds the image of a Docker build context (build: {path,
// dockerfile_path}) once: it is tagged localhost/porch-build:<hash of the
// context's files and the Dockerfile's path>, and a context unchanged
// builds nothing.
func (im *Images) Build(ctx context.Context, dir, dockerfile string, log io.Writer) (Image, error) {
	sum, err := treeHash(dir)
	if err != nil {
		return Image{}, fmt.Errorf("read the build context %s: %w", dir, err)
	}
	tag := "localhost/porch-build:" + hashOf(sum, dockerfile)
	what := fmt.Sprintf("the build context %s (%s)", dir, dockerfile)
	return im.buildOnce(ctx, tag, what, dir, filepath.Join(dir, dockerfile), nil, log)
}

// Derive builds base with a conda file installed once: files are the
// build context (the conda file, its pip requirements, the install
// script install.sh), run as the image's user, the environment's bin
// folder (prefix) first on PATH. It is tagged localhost/porch-env:<hash of
// the base image's id and the files>, shared by every step that uses the
// same two.
func (im *Images) Derive(ctx context.Context, base Image, files map[string]string, prefix string, log io.Writer) (Image, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := []string{base.ID}
	for _, n := range names {
		parts = append(parts, n, files[n])
	}
	tag := "localhost/porch-env:" + hashOf(parts...)
	dir, err := os.MkdirTemp("", "porch-env-")
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(dir)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(files[n]), 0o644); err != nil {
			return Image{}, err
		}
	}
	var args []string
	var b strings.Builder
	fmt.Fprintf(&b, "FROM %s\n", base.ID)
	for _, v := range pipVars {
		if val, ok := os.LookupEnv(v); ok {
			fmt.Fprintf(&b, "ARG %s\n", v)
			args = append(args, "--build-arg", v+"="+val)
		}
	}
	fmt.Fprintf(&b, "COPY . /tmp/porch-env/\nRUN [\"/bin/sh\", \"/tmp/porch-env/install.sh\"]\nENV PATH=%s/bin:$PATH\n", prefix)
	file := filepath.Join(dir, "Containerfile")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		return Image{}, err
	}
	what := fmt.Sprintf("the conda environment on image %s", base.Ref)
	return im.buildOnce(ctx, tag, what, dir, file, args, log)
}

// buildOnce builds tag unless the runtime has it. The build runs in a
// group that dies with the worker (lifeline.Run), and stops when ctx ends.
func (im *Images) buildOnce(ctx context.Context, tag, what, dir, file string, extra []string, log io.Writer) (Image, error) {
	lock := im.lock(tag)
	lock.Lock()
	defer lock.Unlock()
	if id, err := im.Inspect(ctx, tag); err == nil {
		fmt.Fprintf(log, "porch: %s is built already: image %s\n", what, tag)
		return Image{Ref: tag, ID: id}, nil
	}
	fmt.Fprintf(log, "porch: building %s with %s as %s\n", what, im.Runtime.Kind, tag)
	args := []string{"build", "--tag", tag, "--file", file, "--network", "host"}
	if im.Runtime.Kind == Podman {
		// Builds without a container runtime of their own (cgroup v1
		// hosts without CAP_SYS_RESOURCE run nothing else).
		args = append(args, "--isolation", "chroot")
	}
	args = append(append(args, extra...), dir)
	var out bytes.Buffer
	cmd := exec.Command(im.Runtime.Bin, args...)
	cmd.Stdout, cmd.Stderr = io.MultiWriter(log, &out), io.MultiWriter(log, &out)
	if err := lifeline.Run(ctx, cmd, clientGrace); err != nil {
		if ctx.Err() != nil {
			return Image{}, ctx.Err()
		}
		return Image{}, &BuildError{Runtime: im.Runtime, What: what, Output: lastLines(out.String(), 5, err)}
	}
	id, err := im.Inspect(ctx, tag)
	if err != nil {
		return Image{}, err
	}
	return Image{Ref: tag, ID: id}, nil
}

// ContextHash is the hash of a build context's files, which names the
// image built from it.
func ContextHash(dir string) (string, error) { return treeHash(dir) }

// treeHash hashes a folder's files: their paths, modes and contents, and
// links' targets.
func treeHash(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%o\x00", rel, info.Mode())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			io.WriteString(h, target)
		case info.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
		}
		h.Write([]byte{0})
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

func hashOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d\x00%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))[:20]
}
