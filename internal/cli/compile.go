package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/graph"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/spf13/cobra"
)

func (a *app) compileCommand() *cobra.Command {
	var output string
	var set []string
	var server serverFlags
	cmd := &cobra.Command{
		Use:   "compile FILE",
		Short: "Compile a pipeline job YAML file and print the plan porch runs",
		Args:  exactArgs(1, "one pipeline YAML file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains([]string{"json", "summary", "start-input", "mermaid", "dot"}, output) {
				return usageError("-o %q: expected json, summary, start-input, mermaid or dot", output)
			}
			overrides, err := parseSet(set)
			if err != nil {
				return err
			}
			// A start input is about to run: it is compiled as porch run
			// compiles what it submits.
			p, err := a.compile(cmd.Context(), args[0], overrides, server, output == "start-input")
			if err != nil {
				return err
			}
			var v any = p
			switch output {
			case "summary":
				writeSummary(a.stdout, p)
				return nil
			case "mermaid":
				_, err = io.WriteString(a.stdout, graph.Mermaid(graph.Of(p.Pipeline), nil))
				return err
			case "dot":
				_, err = io.WriteString(a.stdout, graph.DOT(p.Name, graph.Of(p.Pipeline), nil))
				return err
			case "start-input":
				p.Settings.SubmittedBy = submitter(a.getenv)
				v = workflows.NewPipelineInput(p, "")
			}
			data, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				return fmt.Errorf("encode the plan: %v", err)
			}
			_, err = fmt.Fprintf(a.stdout, "%s\n", data)
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "json", "output format: json (the plan), summary (one line per step), "+
		"start-input (the input of a Pipeline workflow, for temporal workflow start --input-file; the workflow id is the run id), "+
		"mermaid (the DAG as a Mermaid flowchart) or dot (the DAG for Graphviz)")
	cmd.Flags().StringArrayVar(&set, "set", nil, setUsage)
	server.register(cmd)
	return cmd
}

// compile compiles path and prints its diagnostics to stderr. Warnings do
// not stop it; errors end the command with exit code 1.
//
// azureml:<name>:<version> data and components resolve only through the
// catalogue of a porch server, and compute names are checked against its
// registered computes. A file that does not compile on its own, or that
// names a compute, is compiled again with the catalogue of the server
// porch knows of (flags, TEMPORAL_ADDRESS, config.yaml, else a running
// porch dev), so a file that needs none never waits on a server. A file
// about to run with serverless steps is too (run): the catalogue's
// instance types are what those steps choose from.
//
// A signal stops it at once, with ctx's error.
func (a *app) compile(ctx context.Context, path string, set map[string]string, server serverFlags, run bool) (*plan.Plan, error) {
	return a.compileAt(ctx, path, set, server, run, nil)
}

// compileAt is compile with the overrides written elsewhere than on the
// command line (a schedule's create_job): a problem with --set KEY is
// reported at at[KEY].
func (a *app) compileAt(ctx context.Context, path string, set map[string]string, server serverFlags, run bool, at map[string]plan.Pos) (*plan.Plan, error) {
	limits, err := compilerLimits(a.getenv)
	if err != nil {
		return nil, err
	}
	p, diags, err := compileFile(ctx, path, compiler.Options{Set: set, Limits: limits})
	if err != nil {
		return nil, err
	}
	if diags.HasErrors() || namesCompute(p) || run && p != nil && slices.Contains(p.Computes(), "") {
		if cat, dev := a.serverCatalog(ctx, server); cat != nil {
			p, diags, err = compileFile(ctx, path, compiler.Options{Set: set, Catalog: cat, Limits: limits, DevServer: dev})
			if err != nil {
				return nil, err
			}
		}
	}
	for i, d := range diags {
		if pos, ok := at[strings.TrimPrefix(d.Pos.File, "--set ")]; ok && strings.HasPrefix(d.Pos.File, "--set ") {
			diags[i].Pos = pos
		}
	}
	if len(diags) > 0 {
		diags.Format(a.stderr)
	}
	if diags.HasErrors() || p == nil {
		return nil, silentExit(ExitFailure)
	}
	return p, nil
}

// compileCatalogTimeout bounds reading the catalogue for a compilation: the
// catalogue answers only while a worker runs porch's workflows.
const compileCatalogTimeout = 10 * time.Second

// namesCompute reports whether a plan runs a step on a named compute, or
// a serverless step on an instance type only the catalogue knows (one that
// is no Azure VM size).
func namesCompute(p *plan.Plan) bool {
	return p != nil && (slices.ContainsFunc(p.Computes(), func(c string) bool { return c != "" }) || namesInstanceType(p.Pipeline))
}

func namesInstanceType(pl plan.Pipeline) bool {
	for _, s := range pl.Steps {
		var r *plan.Resources
		switch {
		case s.Command != nil:
			r = &s.Command.Resources
		case s.Parallel != nil:
			r = &s.Parallel.Resources
		}
		if s.Compute == "" && r != nil && r.InstanceType != "" && r.Serverless == nil && r.TaskQueue == "" {
			return true
		}
		if s.Pipeline != nil && namesInstanceType(*s.Pipeline) {
			return true
		}
	}
	return false
}

// serverCatalog reads the catalogue of the server porch knows of; nil when
// there is none, or (with a warning) when it cannot be read. dev says the
// server is the running porch dev, whose worker runs the steps of
// unregistered computes.
func (a *app) serverCatalog(ctx context.Context, server serverFlags) (cat *plan.Catalog, dev bool) {
	s, err := a.serverSettings(server)
	if err != nil {
		return nil, false
	}
	sess, err := a.dial(ctx, s)
	if err != nil {
		fmt.Fprintf(a.stderr, "porch: warning: azureml: references stay unresolved: %v\n", err)
		return nil, false
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(ctx, compileCatalogTimeout)
	defer cancel()
	c, err := workflows.GetCatalog(ctx, sess.client)
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("no answer within %s: is a worker running porch's workflows (porch dev, or porch worker) on that server?",
			compileCatalogTimeout)
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "porch: warning: azureml: references stay unresolved: cannot read the catalogue on %s: %v\n", s.Address, err)
		return nil, false
	}
	return &c, isDevServer(s)
}

// readSource reads the pipeline file for the run's memo.
func (a *app) readSource(ctx context.Context, path string) ([]byte, error) {
	files, err := a.userFiles(ctx)
	if err != nil {
		return nil, err
	}
	return files.read(path)
}

// parseSet turns --set KEY=VALUE flags into compiler overrides; the
// compiler checks the keys. A key given twice takes its last value, as in
// az ml.
func parseSet(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	set := make(map[string]string, len(flags))
	for _, f := range flags {
		key, value, ok := strings.Cut(f, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, usageError("--set %q: expected KEY=VALUE, with KEY one of %s", f, compiler.SetForms)
		}
		set[key] = value
	}
	return set, nil
}

// countSteps counts the steps of p and of its nested pipelines.
func countSteps(p plan.Pipeline) int {
	n := 0
	for _, s := range p.Steps {
		n++
		if s.Pipeline != nil {
			n += countSteps(*s.Pipeline)
		}
	}
	return n
}

// writeSummary prints the plan one step a line, nested steps indented.
func writeSummary(w io.Writer, p *plan.Plan) {
	fmt.Fprintf(w, "pipeline %s (%d steps, datastore %s", p.Name, countSteps(p.Pipeline), p.Settings.DefaultDatastore)
	if p.Settings.ContinueOnStepFailure {
		fmt.Fprint(w, ", continue on step failure")
	}
	fmt.Fprintln(w, ")")
	for _, in := range p.Pipeline.Inputs {
		fmt.Fprintf(w, "input %s (%s) = %s\n", in.Name, in.Type, valueText(in.Value))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tTYPE\tCOMPUTE\tAFTER")
	writeSteps(tw, p.Pipeline, "")
	tw.Flush()
	writeParallel(w, p.Pipeline)
	writeSweeps(w, p.Pipeline)
	writeIdentities(w, p.Pipeline)
}

// writeIdentities prints one line per step that names an identity.
func writeIdentities(w io.Writer, p plan.Pipeline) {
	for _, s := range p.Steps {
		if s.Pipeline != nil {
			writeIdentities(w, *s.Pipeline)
		}
		if id := s.JobIdentity(); id != "" {
			fmt.Fprintf(w, "identity %s: %s\n", s.Path, id)
		}
	}
}

// writeParallel prints one line per parallel step, nested ones included:
// what it splits, how, with what concurrency, and which script runs.
func writeParallel(w io.Writer, p plan.Pipeline) {
	for _, s := range p.Steps {
		if s.Pipeline != nil {
			writeParallel(w, *s.Pipeline)
		}
		if s.Parallel != nil {
			fmt.Fprintf(w, "parallel %s: %s\n", s.Path, parallelText(s))
		}
	}
}

// parallelText describes a parallel step's settings on one line.
func parallelText(s plan.Step) string {
	par := s.Parallel
	typ := ""
	for _, in := range s.Inputs {
		if in.Name == par.InputData {
			typ = " (" + in.Type + ")"
		}
	}
	parts := []string{"input_data " + par.InputData + typ}
	switch {
	case len(par.PartitionKeys) > 0:
		parts = append(parts, "partition_keys "+strings.Join(par.PartitionKeys, ","))
	case par.MiniBatchSize != "":
		parts = append(parts, "mini_batch_size "+par.MiniBatchSize)
	default:
		parts = append(parts, "mini_batch_size default")
	}
	procs := "cores"
	if par.MaxConcurrencyPerInstance > 0 {
		procs = fmt.Sprint(par.MaxConcurrencyPerInstance)
	}
	parts = append(parts, fmt.Sprintf("%d instance(s) x %s processes", par.Resources.InstanceCount, procs),
		fmt.Sprintf("retries %d, timeout %ds", par.Retry.MaxRetries, par.Retry.TimeoutSeconds),
		"entry_script "+par.Task.EntryScript)
	if par.Task.AppendRowTo != "" {
		parts = append(parts, "append_row_to "+par.Task.AppendRowTo)
	}
	return strings.Join(parts, ", ")
}

func writeSteps(w io.Writer, p plan.Pipeline, indent string) {
	for _, s := range p.Steps {
		compute := s.Compute
		if compute == "" {
			compute = "-"
		}
		after := strings.Join(s.DependsOn, ",")
		if after == "" {
			after = "-"
		}
		fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\n", indent, s.Path, s.Type, compute, after)
		if s.Pipeline != nil {
			writeSteps(w, *s.Pipeline, indent+"  ")
		}
	}
}

// valueText shows a bound value briefly.
func valueText(v plan.Value) string {
	switch v.Kind {
	case plan.ValueLiteral:
		return v.Literal
	case plan.ValueData:
		if v.Data != nil {
			return v.Data.Path
		}
	case plan.ValueStepOutput:
		return v.Step + "." + v.Output
	case plan.ValueParentInput:
		return "parent." + v.Input
	}
	return "(unset)"
}
