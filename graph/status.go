package graph

// Status is a step's state as the graph draws it: the steps query's
// statuses, with a step that has not started "queued" and a running one
// whose work no worker polls for "waiting".
type Status string

// Statuses, in the order a legend lists them.
const (
	Queued    Status = "queued"
	Waiting   Status = "waiting" // running, but no worker polls its task queue
	Running   Status = "running"
	Succeeded Status = "succeeded"
	Failed    Status = "failed"
	Canceled  Status = "canceled"
	Skipped   Status = "skipped"
	Reused    Status = "reused"
)

// Statuses lists every status in legend order.
var Statuses = []Status{Queued, Waiting, Running, Succeeded, Failed, Canceled, Skipped, Reused}

// StatusOf maps a status of the steps query (workflows.StepStatus) to the
// graph's: "waiting" there is a step that has not started, Queued here.
func StatusOf(stepStatus string) Status {
	if stepStatus == "waiting" {
		return Queued
	}
	return Status(stepStatus)
}

// Label is how a legend names the status.
func (s Status) Label() string {
	if s == Waiting {
		return "waiting for a worker"
	}
	return string(s)
}

// Colors are a status's fill and stroke colours, the same in the web
// page's stylesheet, Mermaid and DOT.
type Colors struct{ Fill, Stroke string }

// Palette gives each status its colours; a status not in it (none, for a
// compiled plan) is drawn plain.
var Palette = map[Status]Colors{
	Queued:    {"#f3f4f6", "#9ca3af"},
	Waiting:   {"#fef3c7", "#d97706"},
	Running:   {"#dbeafe", "#2563eb"},
	Succeeded: {"#dcfce7", "#16a34a"},
	Failed:    {"#fee2e2", "#dc2626"},
	Canceled:  {"#e5e7eb", "#4b5563"},
	Skipped:   {"#ffffff", "#9ca3af"},
	Reused:    {"#ede9fe", "#7c3aed"},
}
