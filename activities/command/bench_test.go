package command

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// BenchmarkRunCommand measures a trivial command step's activity outside
// Temporal (an output, an input, `true` in a real process) beside the
// baseline of the process alone, started as porch starts it: its ratio is
// what porch adds around the step's own process.
//
//	go test ./activities/command -run '^$' -bench RunCommand -benchtime 200x
func BenchmarkRunCommand(b *testing.B) {
	b.Run("step", func(b *testing.B) {
		a := &Activities{Host: &stepio.Host{Home: b.TempDir(), KillGrace: 2 * time.Second}}
		in := stepInput(tmpl(txt("true")))
		in.Inputs = []plan.Input{literal("x", "1")}
		in.Outputs = []plan.Output{{Name: "out", Type: "uri_folder", Path: plan.DefaultOutputURI("workspaceblobstore", "run1", "train", "out")}}
		ctx := context.Background()
		if _, err := a.RunCommand(ctx, in); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			// Each a new step of the run, as a chain's steps are.
			in.StepPath = "s" + strconv.Itoa(i)
			in.Outputs[0].Path = plan.DefaultOutputURI("workspaceblobstore", in.RunID, in.StepPath, "out")
			if _, err := a.RunCommand(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("process", func(b *testing.B) {
		for range b.N {
			r, w, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command("/bin/sh", "-c", "true")
			cmd.Stderr = w
			err = cmd.Start()
			w.Close()
			if err == nil {
				err = cmd.Wait()
			}
			r.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
