package reuse

import (
	"context"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/activities/launch/imagetest"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// TestKeyIsTheImageRun: a step's key holds the id of the image its
// environment names on this worker, not the environment as written: the
// tag moved to another image runs the step again.
func TestKeyIsTheImageRun(t *testing.T) {
	imagetest.RequirePodman(t)
	rt, err := launch.Resolve(launch.Podman, launch.LookPath)
	require.NoError(t, err)
	f := newFixture(t)
	f.a.Host.Runtime = rt
	busybox := imagetest.Busybox(t)
	other := imagetest.Derive(t, busybox, []string{"RUN echo other > /marker"}, nil)
	tag := "localhost/porch-test-moving:" + t.Name()
	t.Cleanup(func() { imagetest.Remove(t, tag) })
	retag := func(image string) {
		out, err := exec.Command("podman", "tag", image, tag).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	in := f.input("run1")
	in.Step.Command.Env = &plan.Environment{Image: tag}
	in.Step.Command.Environment = "image " + tag

	retag(busybox)
	d1, err := f.a.DecideReuse(context.Background(), in)
	require.NoError(t, err)
	f.succeed(t, d1, "run1")
	in.RunID = "run2"
	d2, err := f.a.DecideReuse(context.Background(), in)
	require.NoError(t, err)
	assert.NotNil(t, d2.Reused, "the same image is reused")

	retag(other)
	in.RunID = "run3"
	d3, err := f.a.DecideReuse(context.Background(), in)
	require.NoError(t, err)
	assert.Nil(t, d3.Reused, "the tag names another image")
	assert.NotEqual(t, d1.Key, d3.Key)
	assert.Contains(t, d3.Reason, "environment")
}
