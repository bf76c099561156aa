package workflows

import (
	"context"
	"errors"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// RegisterCatalogEntry registers e in the namespace's catalogue, starting
// the catalogue workflow if it is not running. A refused entry's error is
// the workflow's own message.
func RegisterCatalogEntry(ctx context.Context, c client.Client, e CatalogEntry) (RegisterResult, error) {
	var res RegisterResult
	err := updateCatalog(ctx, c, RegisterUpdate, e, &res)
	return res, err
}

// RemoveCatalogEntry removes a datastore, data asset version or component
// version from the namespace's catalogue.
func RemoveCatalogEntry(ctx context.Context, c client.Client, r CatalogRemoval) error {
	return updateCatalog(ctx, c, RemoveUpdate, r, nil)
}

// updateCatalog sends an update with start: the first update of a
// namespace starts the catalogue workflow, later ones reach the running one.
func updateCatalog(ctx context.Context, c client.Client, name string, arg, result any) error {
	start := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       CatalogWorkflowID,
		TaskQueue:                plan.DefaultTaskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, CatalogName, CatalogInput{})
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			UpdateName:   name,
			Args:         []any{arg},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err == nil {
		err = h.Get(ctx, result)
	}
	return plainError(err)
}

// plainError unwraps the workflow's own message from an application error,
// which the SDK decorates with its type and retry state.
func plainError(err error) error {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return errors.New(app.Message())
	}
	return err
}

// GetCatalog returns the namespace's catalogue: empty when nothing was ever
// registered.
func GetCatalog(ctx context.Context, c client.Client) (plan.Catalog, error) {
	var cat plan.Catalog
	v, err := c.QueryWorkflow(ctx, CatalogWorkflowID, "", CatalogQuery)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return cat, nil
	}
	if err != nil {
		return cat, err
	}
	err = v.Get(&cat)
	return cat, err
}
