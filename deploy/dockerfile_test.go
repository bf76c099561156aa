package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// dockerfile is a Dockerfile's instructions, continuation lines joined.
type dockerfile struct {
	lines []string // "FROM golang:... AS build", "RUN ...", ...
}

func readDockerfile(t *testing.T, name string) *dockerfile {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	d := &dockerfile{}
	var cur strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		cur.WriteString(strings.TrimSuffix(trimmed, "\\"))
		cur.WriteString(" ")
		if !strings.HasSuffix(trimmed, "\\") {
			d.lines = append(d.lines, strings.Join(strings.Fields(cur.String()), " "))
			cur.Reset()
		}
	}
	return d
}

// stages splits the instructions at each FROM.
func (d *dockerfile) stages() [][]string {
	var out [][]string
	for _, l := range d.lines {
		if strings.HasPrefix(l, "FROM ") {
			out = append(out, nil)
		}
		if len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], l)
		}
	}
	return out
}

// arg is the default of ARG name, "" when there is none.
func (d *dockerfile) arg(name string) string {
	for _, l := range d.lines {
		if v, ok := strings.CutPrefix(l, "ARG "+name+"="); ok {
			return v
		}
	}
	return ""
}

var goDirective = regexp.MustCompile(`(?m)^go (\S+)$`)

func TestDockerfile(t *testing.T) {
	d := readDockerfile(t, "Dockerfile")
	stages := d.stages()
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages: want a build stage and a small runtime stage", len(stages))
	}
	for _, st := range stages {
		image := strings.Fields(st[0])[1]
		image = strings.ReplaceAll(image, "${GO_VERSION}", d.arg("GO_VERSION"))
		if err := imagePinned(image); err != nil {
			t.Errorf("Dockerfile: %s: %v", st[0], err)
		}
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := goDirective.FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	if d.arg("GO_VERSION") != string(m[1]) {
		t.Errorf("Dockerfile: ARG GO_VERSION=%s: keep it at go.mod's go version (%s)", d.arg("GO_VERSION"), m[1])
	}
	if !hasLine(stages[0], "RUN ", "CGO_ENABLED=0 go build", "./cmd/porch") {
		t.Error("Dockerfile: the build stage does not build ./cmd/porch with CGO_ENABLED=0: the binary must be static")
	}
	runtime := stages[len(stages)-1]
	if !hasLine(runtime, "RUN ", "python3", "python3-pandas") {
		t.Error("Dockerfile: the runtime image does not install python3 and python3-pandas: entry scripts and tabular inputs need them")
	}
	if !hasLine(runtime, "COPY --from=", "porch") {
		t.Error("Dockerfile: the runtime stage does not copy the porch binary from the build stage")
	}
	user := ""
	for _, l := range runtime {
		if u, ok := strings.CutPrefix(l, "USER "); ok {
			user = u
		}
	}
	if user == "" || user == "root" || strings.HasPrefix(user, "0") {
		t.Errorf("Dockerfile: the runtime image runs as %q: run as a non-root user", user)
	}
	if !hasLine(runtime, "ENV ", "PORCH_HOME=") || !hasLine(runtime, "VOLUME ", "/var/lib/porch") {
		t.Error("Dockerfile: want ENV PORCH_HOME and a VOLUME for it")
	}
	if !hasLine(runtime, "ENTRYPOINT ", "tini", "porch") {
		t.Error("Dockerfile: the entrypoint must run porch under tini (signals and orphan reaping)")
	}
}

// hasLine reports whether some instruction starts with prefix and
// contains every part.
func hasLine(lines []string, prefix string, parts ...string) bool {
	for _, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return true
		}
	}
	return false
}
