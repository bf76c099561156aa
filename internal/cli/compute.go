package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enums "go.temporal.io/api/enums/v1"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/compute"
	"github.com/porch-pipelines/porch/internal/fleet"
	"github.com/porch-pipelines/porch/quota"
	"github.com/porch-pipelines/porch/workflows"
)

func (a *app) computeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "compute",
		Short: "Register, list, show and delete compute targets (as az ml compute)",
	}
	cmd.AddCommand(
		a.createFileCommand("compute", func(ctx context.Context, file string, flags serverFlags) error {
			c, err := a.readCompute(ctx, file)
			if err != nil {
				return err
			}
			return a.register(ctx, flags, workflows.CatalogEntry{Compute: &c}, fmt.Sprintf("compute %q", c.Name))
		}),
		catalogCommand("list", "List registered computes", exactArgs(0, "no arguments"),
			func(ctx context.Context, _ []string, flags serverFlags) error {
				return a.catalog(ctx, flags, func(cat plan.Catalog, sess *session) error {
					if len(cat.Computes) == 0 {
						a.none(sess, "computes", "compute")
						return nil
					}
					var rows [][]string
					for _, c := range cat.Computes {
						rows = append(rows, []string{c.Name, c.Type, computeDetails(c), c.Description})
					}
					return a.printTable("NAME\tTYPE\tDETAILS\tDESCRIPTION", rows)
				})
			}),
		catalogCommand("show NAME", "Show a registered compute", exactArgs(1, "one compute name"),
			func(ctx context.Context, args []string, flags serverFlags) error {
				return a.catalog(ctx, flags, func(cat plan.Catalog, sess *session) error {
					c, ok := cat.FindCompute(args[0])
					if !ok {
						return fmt.Errorf("no compute %q is registered on %s: list them with `porch compute list`",
							args[0], sess.settings.Address)
					}
					a.fields(computeFields(c, &cat))
					a.fields(a.computeLive(ctx, sess, c, &cat))
					return nil
				})
			}),
		catalogCommand("delete NAME", "Delete a registered compute (its workers keep running)",
			exactArgs(1, "one compute name"),
			func(ctx context.Context, args []string, flags serverFlags) error {
				return a.remove(ctx, flags, workflows.CatalogRemoval{Kind: workflows.KindCompute, Name: args[0]},
					fmt.Sprintf("compute %q", args[0]))
			}),
	)
	return cmd
}

// readCompute reads and checks a compute file, printing its warnings; its
// errors are printed too and make the returned error.
func (a *app) readCompute(ctx context.Context, file string) (plan.Compute, error) {
	files, err := a.userFiles(ctx)
	if err != nil {
		return plan.Compute{}, err
	}
	data, err := files.read(file)
	if err != nil {
		return plan.Compute{}, err
	}
	c, diags := compute.ParseCompute(file, data)
	diags.Format(a.stderr)
	if diags.HasErrors() {
		return c, fmt.Errorf("%s: the compute has errors: fix them and create it again", file)
	}
	return c, nil
}

// computeDetails sums a compute up on one line for `porch compute list`.
func computeDetails(c plan.Compute) string {
	if c.Type == plan.ComputeKubernetes {
		s := "namespace " + c.Namespace
		if len(c.NodeSelector) > 0 {
			s += ", nodeSelector " + plan.LabelsString(c.NodeSelector)
		}
		return s
	}
	return fmt.Sprintf("%s, %s, %d-%d nodes, scale down after %ds", c.Size, c.Tier, c.MinInstances, c.MaxInstances,
		c.IdleTimeBeforeScaleDown)
}

// computeFields are the lines of `porch compute show`: the compute as its
// YAML names things, the task queue its workers serve, and for a
// kubernetes compute the instance types steps on it may use.
func computeFields(c plan.Compute, cat *plan.Catalog) [][2]string {
	f := [][2]string{{"name", c.Name}, {"type", c.Type}, {"description", c.Description}, {"location", c.Location}}
	if c.Type == plan.ComputeAML {
		f = append(f, [][2]string{{"size", c.Size}, {"tier", c.Tier},
			{"min_instances", strconv.Itoa(c.MinInstances)}, {"max_instances", strconv.Itoa(c.MaxInstances)},
			{"idle_time_before_scale_down", strconv.Itoa(c.IdleTimeBeforeScaleDown) + "s"}}...)
	} else {
		var types []string
		for _, t := range cat.AllInstanceTypes() {
			types = append(types, t.Name)
		}
		def := c.DefaultInstanceType
		if def == "" {
			def = plan.DefaultInstanceTypeName
		}
		f = append(f, [][2]string{{"namespace", c.Namespace}, {"resource_id", c.ResourceID},
			{"node_selector", plan.LabelsString(c.NodeSelector)}, {"default_instance_type", def},
			{"instance_types", strings.Join(types, ", ")}}...)
	}
	if c.Identity != nil {
		f = append(f, [2]string{"identity", strings.Join(append([]string{c.Identity.Type}, c.Identity.UserAssignedIdentities...), " ")})
	}
	queue := plan.TaskQueue(c.Name)
	if c.Type == plan.ComputeKubernetes {
		queue = plan.InstanceTaskQueue(c.Name, "<instance type>")
	}
	f = append(f, [2]string{"tags", plan.LabelsString(c.Tags)},
		[2]string{"task_queue", queue + " (serve it with `porch worker --compute " + c.Name + "`)"})
	return f
}

func (a *app) instanceTypeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "instance-type",
		Short: "Validate, apply, list and delete Kubernetes instance types (InstanceType, InstanceTypeList)",
	}
	cmd.AddCommand(a.instanceTypeValidateCommand(), a.instanceTypeApplyCommand(),
		catalogCommand("list", "List the instance types steps may name, defaultinstancetype included", exactArgs(0, "no arguments"),
			func(ctx context.Context, _ []string, flags serverFlags) error {
				return a.catalog(ctx, flags, func(cat plan.Catalog, _ *session) error {
					var rows [][]string
					for _, t := range cat.AllInstanceTypes() {
						rows = append(rows, instanceTypeRow(t))
					}
					return a.printTable("NAME\tNODE SELECTOR\tCPU REQUEST\tCPU LIMIT\tMEMORY REQUEST\tMEMORY LIMIT\tGPU", rows)
				})
			}),
		catalogCommand("delete NAME", "Delete an applied instance type (a deleted defaultinstancetype is the built-in one again)",
			exactArgs(1, "one instance type name"),
			func(ctx context.Context, args []string, flags serverFlags) error {
				return a.remove(ctx, flags, workflows.CatalogRemoval{Kind: workflows.KindInstanceType, Name: args[0]},
					fmt.Sprintf("instance type %q", args[0]))
			}),
	)
	return cmd
}

// instanceTypeRow is an instance type's line in `porch instance-type list`.
func instanceTypeRow(t plan.InstanceType) []string {
	limit := func(v int64, format func(int64) string) string {
		if v == 0 {
			return ""
		}
		return format(v)
	}
	gpu := ""
	if t.Limits.GPU > 0 {
		gpu = strconv.FormatInt(t.Limits.GPU, 10)
	}
	return []string{t.Name, plan.LabelsString(t.NodeSelector), plan.FormatCPU(t.Requests.MilliCPU),
		limit(t.Limits.MilliCPU, plan.FormatCPU), plan.FormatMemory(t.Requests.MemoryBytes),
		limit(t.Limits.MemoryBytes, plan.FormatMemory), gpu}
}

func (a *app) instanceTypeValidateCommand() *cobra.Command {
	var file string
	var computes []string
	cmd := &cobra.Command{
		Use:   "validate -f FILE [--compute COMPUTE.yml ...]",
		Short: "Check an InstanceType or InstanceTypeList file offline (and against kubernetes compute files)",
		Args:  exactArgs(0, "no arguments: name the file with -f"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageError("instance-type validate needs the file: porch instance-type validate -f FILE")
			}
			var cs []plan.Compute
			for _, cf := range computes {
				c, err := a.readCompute(cmd.Context(), cf)
				if err != nil {
					return err
				}
				cs = append(cs, c)
			}
			f, err := a.readInstanceTypes(cmd.Context(), file, cs, "validate")
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s: ok (%s)\n", file, typeNames(f.Types))
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the InstanceType or InstanceTypeList YAML file")
	cmd.Flags().StringArrayVar(&computes, "compute", nil, "a kubernetes compute YAML file whose nodeSelector the types must fit")
	return cmd
}

func (a *app) instanceTypeApplyCommand() *cobra.Command {
	var file string
	var flags serverFlags
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Apply an InstanceType or InstanceTypeList file to the server (as kubectl apply)",
		Args:  exactArgs(0, "no arguments: name the file with -f"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageError("instance-type apply needs the file: porch instance-type apply -f FILE")
			}
			// Checked offline first, so a bad file needs no server.
			if _, err := a.readInstanceTypes(cmd.Context(), file, nil, "apply"); err != nil {
				return err
			}
			return a.withCatalog(cmd.Context(), flags, func(ctx context.Context, sess *session) error {
				cat, err := workflows.GetCatalog(ctx, sess.client)
				if err != nil {
					return fmt.Errorf("read the catalogue on %s: %v", sess.settings.Address, err)
				}
				f, err := a.readInstanceTypes(ctx, file, cat.Computes, "apply")
				if err != nil {
					return err
				}
				res, err := workflows.RegisterCatalogEntry(ctx, sess.client, workflows.CatalogEntry{InstanceTypes: f.Types})
				if err != nil {
					return err
				}
				for _, t := range f.Types {
					verb := "created"
					if slices.Contains(res.ReplacedInstanceTypes, t.Name) {
						verb = "replaced"
					}
					fmt.Fprintf(a.stdout, "instance type %q %s on %s (namespace %s)\n", t.Name, verb, sess.settings.Address, sess.settings.Namespace)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the InstanceType or InstanceTypeList YAML file")
	flags.register(cmd)
	return cmd
}

// readInstanceTypes reads and checks an instance-type file, against the
// kubernetes computes' nodeSelectors too, printing the diagnostics.
func (a *app) readInstanceTypes(ctx context.Context, file string, computes []plan.Compute, verb string) (*compute.InstanceTypes, error) {
	files, err := a.userFiles(ctx)
	if err != nil {
		return nil, err
	}
	data, err := files.read(file)
	if err != nil {
		return nil, err
	}
	f, diags := compute.ParseInstanceTypes(file, data)
	if !diags.HasErrors() {
		diags = append(diags, f.CheckSelectors(computes)...)
	}
	diags.Format(a.stderr)
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s: %s: fix them and %s it again", file, errorCount(diags), verb)
	}
	return f, nil
}

func errorCount(d compiler.Diagnostics) string {
	n := 0
	for _, x := range d {
		if x.Severity == compiler.Error {
			n++
		}
	}
	if n == 1 {
		return "1 error"
	}
	return strconv.Itoa(n) + " errors"
}

func typeNames(ts []plan.InstanceType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	noun := "instance types"
	if len(ts) == 1 {
		noun = "instance type"
	}
	return fmt.Sprintf("%d %s: %s", len(ts), noun, strings.Join(names, ", "))
}

// computeLive are the lines of `porch compute show` read from the server
// rather than the catalogue: the nodes polling the compute's task queue
// (porch worker --compute NAME, named by --node) and the compute's and its
// size's quotas.
func (a *app) computeLive(ctx context.Context, sess *session, c plan.Compute, cat *plan.Catalog) [][2]string {
	var f [][2]string
	queues := []string{plan.TaskQueue(c.Name)}
	if c.Type == plan.ComputeKubernetes {
		queues = nil
		for _, t := range cat.AllInstanceTypes() {
			queues = append(queues, plan.InstanceTaskQueue(c.Name, t.Name))
		}
	}
	var names []string
	// Preemptible workers (porch worker --preemptible) poll each queue's
	// spot variant.
	for _, q := range spotQueues(queues) {
		resp, err := sess.client.DescribeTaskQueue(ctx, q.name, enums.TASK_QUEUE_TYPE_ACTIVITY)
		if err != nil {
			f = append(f, [2]string{"nodes", "unknown: " + err.Error()})
			return f
		}
		for _, p := range resp.GetPollers() {
			seen := time.Since(p.GetLastAccessTime().AsTime()).Round(time.Second)
			name := p.GetIdentity()
			if q.spot {
				name += " preemptible"
			}
			if len(queues) > 1 {
				name += " on " + q.name
			}
			names = append(names, fmt.Sprintf("%s (polled %s ago)", name, seen))
		}
	}
	nodes := "none: start one with `porch worker --compute " + c.Name + "`"
	if len(names) > 0 {
		sort.Strings(names)
		nodes = fmt.Sprintf("%d: %s", len(names), strings.Join(names, ", "))
	}
	f = append(f, [2]string{"nodes", nodes})
	if line, ok := a.fleetLine(sess, c); ok {
		f = append(f, [2]string{"fleet", line})
	}
	pools := []quota.Pool{{Kind: quota.Compute, Name: c.Name}}
	if c.Size != "" {
		pools = append(pools, quota.Pool{Kind: quota.Size, Name: c.Size})
	}
	for _, p := range pools {
		if q, ok, err := workflows.GetQuota(ctx, sess.client, p); err == nil && ok {
			line := q.Describe()
			if n := len(q.Waiters); n > 0 {
				line += fmt.Sprintf(", %d waiting", n)
			}
			f = append(f, [2]string{"quota (" + string(p.Kind) + ")", line})
		}
	}
	return f
}

// fleetLine describes the nodes porch dev's fleet runs for c, when a
// porch dev for this server runs on this machine: each busy, idle (for
// how long) or stopping.
func (a *app) fleetLine(sess *session, c plan.Compute) (string, bool) {
	st, ok, err := fleet.ReadState(sess.settings.Home)
	if err != nil || !ok || st.Address != sess.settings.Address || st.Namespace != sess.settings.Namespace {
		return "", false
	}
	cs, ok := st.Compute(c.Name)
	if !ok {
		return "", false
	}
	var nodes []string
	for _, n := range cs.Nodes {
		what := "busy"
		switch {
		case n.Stopping:
			what = "stopping"
		case !n.Busy:
			what = "idle " + time.Since(n.IdleSince).Round(time.Second).String()
		}
		nodes = append(nodes, fmt.Sprintf("%s (pid %d, %s)", n.Name, n.PID, what))
	}
	line := fmt.Sprintf("%d of at most %d nodes (porch dev)", len(nodes), cs.Max)
	if len(nodes) > 0 {
		line += ": " + strings.Join(nodes, ", ")
	}
	return line, true
}

// liveQueue is a task queue `porch compute show` asks for pollers.
type liveQueue struct {
	name string
	spot bool
}

// spotQueues are queues followed by their spot variants.
func spotQueues(queues []string) []liveQueue {
	out := make([]liveQueue, 0, 2*len(queues))
	for _, q := range queues {
		out = append(out, liveQueue{name: q})
	}
	for _, q := range queues {
		out = append(out, liveQueue{name: plan.SpotTaskQueue(q), spot: true})
	}
	return out
}
