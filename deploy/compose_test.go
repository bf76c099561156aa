package deploy

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/workflows"
)

// composeFile is the part of the Compose specification docker-compose.yml
// uses. Decoding with KnownFields refuses anything else, so a misspelt key
// (depend_on, healthckeck) fails here rather than being ignored by docker.
type composeFile struct {
	Name     string                    `yaml:"name"`
	XPorch   yaml.Node                 `yaml:"x-porch"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]*struct{}      `yaml:"volumes"`
}

type composeService struct {
	Image           string                      `yaml:"image"`
	Build           *composeBuild               `yaml:"build"`
	Restart         string                      `yaml:"restart"`
	StopGracePeriod string                      `yaml:"stop_grace_period"`
	Environment     map[string]string           `yaml:"environment"`
	Volumes         []string                    `yaml:"volumes"`
	DependsOn       map[string]composeDependsOn `yaml:"depends_on"`
	Command         []string                    `yaml:"command"`
	Entrypoint      []string                    `yaml:"entrypoint"`
	Ports           []string                    `yaml:"ports"`
	Healthcheck     *composeHealthcheck         `yaml:"healthcheck"`
	Profiles        []string                    `yaml:"profiles"`
}

type composeBuild struct {
	Context    string            `yaml:"context"`
	Dockerfile string            `yaml:"dockerfile"`
	Args       map[string]string `yaml:"args"`
}

type composeDependsOn struct {
	Condition string `yaml:"condition"`
}

type composeHealthcheck struct {
	Test        []string `yaml:"test"`
	Interval    string   `yaml:"interval"`
	Timeout     string   `yaml:"timeout"`
	Retries     int      `yaml:"retries"`
	StartPeriod string   `yaml:"start_period"`
	Disable     bool     `yaml:"disable"`
}

// porchImage is the image the compose file builds from deploy/Dockerfile.
const porchImage = "porch:${PORCH_VERSION:-dev}"

func loadCompose(t *testing.T) *composeFile {
	t.Helper()
	f, err := os.Open("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	var c composeFile
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return &c
}

func TestComposeFile(t *testing.T) {
	c := loadCompose(t)
	for _, name := range sortedKeys(c.Services) {
		s := c.Services[name]
		where := "docker-compose.yml: service " + name
		if err := imagePinned(s.Image); err != nil {
			t.Errorf("%s: %v", where, err)
		}
		for _, dep := range sortedKeys(s.DependsOn) {
			target, ok := c.Services[dep]
			cond := s.DependsOn[dep].Condition
			switch {
			case !ok:
				t.Errorf("%s depends on %q, which is not a service", where, dep)
			case !slices.Contains([]string{"service_started", "service_healthy", "service_completed_successfully"}, cond):
				t.Errorf("%s: depends_on %s: unknown condition %q", where, dep, cond)
			case cond == "service_healthy" && target.Healthcheck == nil:
				t.Errorf("%s waits for %q to be healthy, but %q has no healthcheck", where, dep, dep)
			}
		}
		for _, v := range s.Volumes {
			checkComposeVolume(t, where, c, v)
		}
		for _, k := range sortedKeys(s.Environment) {
			if secretName.MatchString(k) && interpolation.FindStringSubmatch(s.Environment[k]) == nil {
				t.Errorf("%s: %s is written inline: take it from .env as ${NAME:?...}", where, k)
			}
		}
		if s.Image == porchImage {
			checkPorchService(t, where, s)
		}
	}
	if _, ok := c.Services["temporal-ui"]; !ok {
		t.Error("docker-compose.yml has no temporal-ui service")
	}
}

// checkPorchService checks a service running the porch image: its command
// line parses, and porch reads every variable set for it.
func checkPorchService(t *testing.T, where string, s composeService) {
	if s.Entrypoint != nil {
		t.Errorf("%s: keep the image's entrypoint (tini, then porch): give porch's arguments as command", where)
	}
	checkPorchArgs(t, where, s.Command)
	for _, k := range sortedKeys(s.Environment) {
		if !readsEnv(t, k) {
			t.Errorf("%s: sets %s, which porch does not read", where, k)
		}
	}
	if len(s.Command) == 0 || s.Command[0] != "worker" {
		return
	}
	if s.StopGracePeriod == "" {
		t.Errorf("%s: a worker needs stop_grace_period of at least %.0fs to drain (docker's default is 10s)", where, workerDrain.Seconds())
	}
	if got := flagValue(s.Command, "--metrics-address"); got != fmt.Sprintf(":%d", metricsPort) {
		t.Errorf("%s: want --metrics-address :%d (metrics and health), found %q", where, metricsPort, got)
	}
	if h := s.Healthcheck; h == nil || h.Disable || !strings.Contains(strings.Join(h.Test, " "), fmt.Sprintf(":%d/readyz", metricsPort)) {
		t.Errorf("%s: want a healthcheck on /readyz (port %d)", where, metricsPort)
	}
	if queues, _ := workerQueues(s.Command); len(queues) > 0 && queues[0] != plan.DefaultTaskQueue && flagValue(s.Command, "--slots") != "1" {
		t.Errorf("%s: a compute's worker runs one step at a time, as an Azure ML node: want --slots 1", where)
	}
}

// imagePinned says why an image reference is not pinned to a tag: none,
// latest, or a variable without a default. A tag from a variable counts
// when the variable's default is a tag.
func imagePinned(image string) error {
	if image == "" {
		return errors.New("no image")
	}
	ref := withDefaults(image)
	tag := ""
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		tag = ref[i+1:]
	}
	if tag == "" || tag == "latest" {
		return fmt.Errorf("image %q is not pinned to a tag", image)
	}
	return nil
}

// checkComposeVolume checks a volume: a named volume is declared, a bind
// mount of a file in this folder exists.
func checkComposeVolume(t *testing.T, where string, c *composeFile, v string) {
	src, _, ok := strings.Cut(v, ":")
	if !ok {
		return // an anonymous volume
	}
	switch {
	case strings.HasPrefix(src, "./"):
		if _, err := os.Stat(src); err != nil {
			t.Errorf("%s mounts %s: %v", where, src, err)
		}
	case strings.HasPrefix(src, "/") || strings.HasPrefix(src, "${"):
	default:
		if _, ok := c.Volumes[src]; !ok {
			t.Errorf("%s uses volume %q, which the top-level volumes do not declare", where, src)
		}
	}
}

// requiredVar is a compose variable that must be set: ${NAME:?message}.
var requiredVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*):\?`)

// TestComposeEnvExample checks that env.example sets every variable
// docker-compose.yml requires, so `cp env.example .env` gives a file that
// starts.
func TestComposeEnvExample(t *testing.T) {
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	f, err := os.Open("env.example")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, _, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			set[k] = true
		}
	}
	for _, m := range requiredVar.FindAllStringSubmatch(string(data), -1) {
		if !set[m[1]] {
			t.Errorf("docker-compose.yml requires %s, which env.example does not set", m[1])
		}
	}
}

// TestComposeSearchAttributes checks that the namespace setup registers
// exactly porch's search attributes.
func TestComposeSearchAttributes(t *testing.T) {
	script := filepath.Join("compose", "scripts", "setup-namespace.sh")
	data, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "for name in "); ok {
			list, _, _ := strings.Cut(rest, ";")
			got = strings.Fields(list)
		}
	}
	want := sortedKeys(workflows.SearchAttributes())
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s registers %q; porch's search attributes are %q", script, got, want)
	}
}

func TestImagePinned(t *testing.T) {
	for image, pinned := range map[string]bool{
		"postgres:16":                    true,
		"porch:${PORCH_VERSION:-dev}":    true,
		"localhost:5000/porch:v1":        true,
		"porch:${PORCH_VERSION:-}":       false,
		"porch:${PORCH_VERSION}":         false,
		"porch:${PORCH_VERSION:-latest}": false,
		"postgres":                       false,
		"temporalio/ui:latest":           false,
		"localhost:5000/porch":           false,
	} {
		if err := imagePinned(image); (err == nil) != pinned {
			t.Errorf("imagePinned(%q) = %v; want pinned %v", image, err, pinned)
		}
	}
}
