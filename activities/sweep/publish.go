package sweep

import (
	"context"
	"errors"
	"fmt"

	"github.com/porch-pipelines/porch/activities/stepio"
	"go.temporal.io/sdk/temporal"
)

// OutputCopy is one output of a sweep that names a path: where the best
// trial wrote it, and where the sweep's output goes.
type OutputCopy struct {
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
}

// PublishSweepOutputsInput copies the best trial's outputs of a sweep.
type PublishSweepOutputsInput struct {
	StepPath string       `json:"step_path"`
	Trial    int          `json:"trial"`
	Outputs  []OutputCopy `json:"outputs"`
}

// PublishSweepOutputs copies the best trial's outputs to the paths the
// sweep's outputs name, replacing what is there, on local and s3
// datastores. An output the trial left empty is not copied. A retry copies
// again from the start.
func (a *Activities) PublishSweepOutputs(ctx context.Context, in PublishSweepOutputsInput) error {
	a.RefreshDatastores(ctx)
	stop := a.BeatWhile(ctx, func() any { return stepio.Beat{Phase: "publishing the best trial's outputs"} })
	defer stop()
	for _, o := range in.Outputs {
		if _, err := a.CopyData(ctx, o.From, o.To); err != nil {
			return copyError(fmt.Sprintf("step %q: copy output %q of the best trial (%d) to %s", in.StepPath, o.Name, in.Trial, o.To), err)
		}
	}
	return nil
}

// copyError prefixes err with what failed, keeping whether Temporal may
// retry it: an application error's type and retryability survive.
func copyError(what string, err error) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return temporal.NewApplicationErrorWithOptions(what+": "+ae.Error(), ae.Type(),
			temporal.ApplicationErrorOptions{NonRetryable: ae.NonRetryable()})
	}
	return fmt.Errorf("%s: %w", what, err)
}
