package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"

	"go.temporal.io/api/serviceerror"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// runNamePattern is what porch takes as a run name given with --set
// name=: letters, digits, '-' and '_', starting with a letter or a digit,
// as Azure ML takes a job name. It is the run's workflow id and its
// folder in the datastore, so it holds no '/'.
var runNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,254}$`)

// runName is the run id --set name= asks for, "" when none is given:
// as az ml job create does with a job name, porch uses it exactly, not
// as a prefix. It takes the key out of set: the name is the run's, and
// the pipeline keeps its own (the file's name:, else its display_name or
// file name), which its steps' reuse records are kept under.
func runName(set map[string]string) (string, error) {
	name, ok := set["name"]
	if !ok {
		return "", nil
	}
	delete(set, "name")
	if !runNamePattern.MatchString(name) {
		return "", usageError("--set name=%s: a run name has letters, digits, '-' and '_' only, starts with a "+
			"letter or a digit and has at most 255 of them, as an Azure ML job name", name)
	}
	return name, nil
}

// checkNameFree refuses a run name that is in use, as az ml refuses a job
// name in use: a run of that id on the server, or a run folder of that
// name in the run's default datastore (an embedded run's, whose server is
// gone). The server refuses the start too, which covers a run started
// between the check and the start.
func (a *app) checkNameFree(ctx context.Context, sess *session, name, datastore string) error {
	desc, err := sess.client.DescribeWorkflowExecution(ctx, name, "")
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return nameInUse(name, fmt.Sprintf("run %s on %s is %s", name, sess.settings.Address,
			statusName(desc.GetWorkflowExecutionInfo().GetStatus())))
	case !errors.As(err, &nf):
		return fmt.Errorf("check whether run name %q is in use on %s: %v", name, sess.settings.Address, err)
	}
	if datastore == "" {
		datastore = plan.DefaultDatastore
	}
	dir, err := sess.paths(ctx)(runFolderURI(datastore, name))
	if err != nil {
		return nil
	}
	if _, err := os.Stat(dir); err == nil {
		return nameInUse(name, fmt.Sprintf("the datastore folder %s holds the outputs and logs of an earlier run %s", dir, name))
	}
	return nil
}

// nameInUse is the error of a run name in use: why, and what to do.
func nameInUse(name, why string) error {
	return fmt.Errorf("run name %q is in use: %s: give another name with --set name=, or leave it out for a fresh one", name, why)
}

// runFolderURI is the folder of a run in a datastore, where its steps'
// outputs and logs, and its record, land by default.
func runFolderURI(datastore, runID string) string {
	return plan.DatastoreURI(datastore, "azureml/"+runID+"/")
}
