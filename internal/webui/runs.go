package webui

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/porch-pipelines/porch/workflows"
)

// runView is a run as the page shows it.
type runView struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	Pipeline   string     `json:"pipeline"`
	Experiment string     `json:"experiment,omitempty"`
	User       string     `json:"user,omitempty"`
	Start      time.Time  `json:"start"`
	End        *time.Time `json:"end,omitempty"`
	Link       string     `json:"link,omitempty"`
}

// statusFilters are the run statuses the list filters by, each as a
// visibility query: porch's PorchStatus for how a run ended in porch's
// words, Temporal's ExecutionStatus for what porch does not set.
var statusFilters = map[string]string{
	"running":    "ExecutionStatus = 'Running'",
	"succeeded":  workflows.AttrStatus + " = 'succeeded'",
	"failed":     workflows.AttrStatus + " = 'failed'",
	"canceled":   workflows.AttrStatus + " = 'canceled'",
	"terminated": "ExecutionStatus = 'Terminated'",
	"timed_out":  "ExecutionStatus = 'TimedOut'",
}

// maxRunsPage bounds one page of the run list.
const maxRunsPage = 200

// runs lists root runs, newest first: workflows with PorchRun and no
// PorchStep, filtered by ?status= and ?experiment=, a page of ?limit= at
// a time from ?next=.
func (s *server) runs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query := fmt.Sprintf("%s IS NOT NULL AND %s IS NULL", workflows.AttrRun, workflows.AttrStep)
	if st := q.Get("status"); st != "" {
		f, ok := statusFilters[st]
		if !ok {
			apiError(w, http.StatusBadRequest, fmt.Sprintf("status %q: expected running, succeeded, failed, canceled, terminated or timed_out", st))
			return
		}
		query += " AND " + f
	}
	if exp := q.Get("experiment"); exp != "" {
		query += fmt.Sprintf(" AND %s = %s", workflows.AttrExperiment, strconv.Quote(exp))
	}
	limit := 50
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		limit = min(n, maxRunsPage)
	}
	token, err := base64.RawURLEncoding.DecodeString(q.Get("next"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "next: not a page token of this list")
		return
	}
	ctx, cancel := contextFor(r)
	defer cancel()
	resp, err := s.opts.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: s.opts.Namespace, PageSize: int32(limit), Query: query, NextPageToken: token,
	})
	if err != nil {
		apiError(w, http.StatusBadGateway, "list runs: "+err.Error()+attributesHint(err))
		return
	}
	out := struct {
		Runs []runView `json:"runs"`
		Next string    `json:"next,omitempty"`
	}{Runs: []runView{}, Next: base64.RawURLEncoding.EncodeToString(resp.GetNextPageToken())}
	for _, e := range resp.GetExecutions() {
		out.Runs = append(out.Runs, s.runOf(e))
	}
	writeJSON(w, out)
}

// attributesHint says what to do when porch's search attributes are not
// registered on the server.
func attributesHint(err error) string {
	if !strings.Contains(strings.ToLower(err.Error()), "search attribute") {
		return ""
	}
	return ": porch's search attributes are not registered on this server (porch job list prints the command that registers them)"
}

// runOf is a run's row from its visibility record.
func (s *server) runOf(e *workflowpb.WorkflowExecutionInfo) runView {
	sa := e.GetSearchAttributes()
	v := runView{
		ID: e.GetExecution().GetWorkflowId(), Status: runStatus(e.GetStatus(), keyword(sa, workflows.AttrStatus)),
		Pipeline: keyword(sa, workflows.AttrPipeline), Experiment: keyword(sa, workflows.AttrExperiment),
		User: keyword(sa, workflows.AttrUser), Start: e.GetStartTime().AsTime(),
	}
	if e.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING && e.GetCloseTime() != nil {
		end := e.GetCloseTime().AsTime()
		v.End = &end
	}
	v.Link = s.workflowLink(v.ID)
	return v
}

// runStatus is how a run stands in porch's words: PorchStatus once it
// ended and porch set it, else Temporal's status in lower case.
func runStatus(st enums.WorkflowExecutionStatus, porch string) string {
	if st == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return "running"
	}
	if porch != "" {
		return porch
	}
	name := strings.ToLower(strings.TrimPrefix(st.String(), "WORKFLOW_EXECUTION_STATUS_"))
	switch name {
	case "completed":
		return "succeeded"
	case "cancelled":
		return "canceled"
	}
	return name
}

// keyword decodes a keyword search attribute, "" when absent.
func keyword(sa *commonpb.SearchAttributes, name string) string {
	p, ok := sa.GetIndexedFields()[name]
	if !ok {
		return ""
	}
	var s string
	if converter.GetDefaultDataConverter().FromPayload(p, &s) != nil {
		return ""
	}
	return s
}

// notFound says whether err is Temporal's "no such workflow".
func notFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
