package command

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/porch-pipelines/porch/activities/stepio"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// MaxProcesses caps how many processes one distributed step may start on a
// worker's host.
const MaxProcesses = 64

// process is one process of a step: what the logs call it and the
// variables its framework reads.
type process struct {
	label string
	env   []string
	// instance is the instance (node) the process belongs to, whose
	// limits it shares.
	instance int
	// rank numbers the process in the whole step, on every host: its
	// log is std_log_process_<rank>.txt.
	rank int
}

// distribute says which processes run the step's command on this host, and
// what the step's log should say about it. Every process of a distributed
// step runs here, on loopback addresses.
func distribute(in RunCommandInput) ([]process, []string, error) {
	c := in.Command
	instances := max(1, c.Resources.InstanceCount)
	d := c.Distribution
	if d == nil {
		var notes []string
		if instances > 1 {
			notes = append(notes, fmt.Sprintf("porch: resources.instance_count is %d but the step has no distribution: porch runs the command once, on this host", instances))
		}
		return []process{{}}, notes, nil
	}
	switch kind := strings.ToLower(d.Type); kind {
	case "pytorch", "mpi":
		if in.Instance != nil {
			return distributeInstance(in.StepPath, kind, *in.Instance, max(1, d.ProcessCountPerInstance))
		}
		return distributeRanks(in.StepPath, kind, instances, max(1, d.ProcessCountPerInstance))
	case "tensorflow":
		return distributeTensorflow(in.StepPath, d, instances)
	default:
		return nil, nil, stepio.Invalid("step %q: distribution type %q is not supported: use pytorch, mpi or tensorflow", in.StepPath, d.Type)
	}
}

func checkCount(step string, n int) error {
	if n > MaxProcesses {
		return stepio.Invalid("step %q: the distribution asks for %d processes; porch runs them all on this host and allows at most %d: lower instance_count or process_count_per_instance", step, n, MaxProcesses)
	}
	return nil
}

// distributeRanks gives each process of a pytorch or mpi job its rank
// variables; processes fill one instance before the next.
func distributeRanks(step, kind string, instances, perInstance int) ([]process, []string, error) {
	world := instances * perInstance
	if err := checkCount(step, world); err != nil {
		return nil, nil, err
	}
	var port int
	if kind == "pytorch" {
		ports, err := stepio.FreePorts(1)
		if err != nil {
			return nil, nil, err
		}
		port = ports[0]
	}
	procs := make([]process, world)
	for r := range procs {
		procs[r] = rankProcess(kind, r, instances, perInstance, "127.0.0.1", port)
	}
	note := fmt.Sprintf("porch: %s distribution: %d processes (%d instances x %d per instance) run on this host", kind, world, instances, perInstance)
	return procs, []string{note}, nil
}

// SpreadDistributions are the distribution types whose instances porch
// spreads over workers: their processes find each other through
// MASTER_ADDR (pytorch) or need only their ranks (mpi).
func SpreadDistributions() []string { return []string{"pytorch", "mpi"} }

// distributeInstance gives the processes of one instance of a step whose
// instances run on several workers their ranks; instance 0's address is
// the master.
func distributeInstance(step, kind string, in InstanceAssignment, perInstance int) ([]process, []string, error) {
	if err := checkCount(step, perInstance); err != nil {
		return nil, nil, err
	}
	procs := make([]process, perInstance)
	for l := range procs {
		procs[l] = rankProcess(kind, in.Index*perInstance+l, in.Count, perInstance, in.MasterAddr, in.MasterPort)
		// One instance runs here: its processes share its limits.
		procs[l].instance = 0
	}
	note := fmt.Sprintf("porch: %s distribution: instance %d of %d runs here, %d processes; instance 0 at %s:%d",
		kind, in.Index, in.Count, perInstance, in.MasterAddr, in.MasterPort)
	return procs, []string{note}, nil
}

// rankProcess is process r of a pytorch or mpi job of instances x
// perInstance processes.
func rankProcess(kind string, r, instances, perInstance int, masterAddr string, port int) process {
	world := instances * perInstance
	node, local := r/perInstance, r%perInstance
	env := []string{
		"RANK=" + strconv.Itoa(r),
		"WORLD_SIZE=" + strconv.Itoa(world),
		"LOCAL_RANK=" + strconv.Itoa(local),
		"NODE_RANK=" + strconv.Itoa(node),
	}
	if kind == "pytorch" {
		env = append(env,
			"LOCAL_WORLD_SIZE="+strconv.Itoa(perInstance),
			"GROUP_RANK="+strconv.Itoa(node),
			"MASTER_ADDR="+masterAddr,
			"MASTER_PORT="+strconv.Itoa(port))
	} else {
		env = append(env,
			"OMPI_COMM_WORLD_RANK="+strconv.Itoa(r),
			"OMPI_COMM_WORLD_SIZE="+strconv.Itoa(world),
			"OMPI_COMM_WORLD_LOCAL_RANK="+strconv.Itoa(local),
			"OMPI_COMM_WORLD_LOCAL_SIZE="+strconv.Itoa(perInstance),
			"OMPI_COMM_WORLD_NODE_RANK="+strconv.Itoa(node))
	}
	return process{label: "rank " + strconv.Itoa(r), env: env, instance: node, rank: r}
}

// tfConfig is the TF_CONFIG variable TensorFlow's cluster resolver reads.
type tfConfig struct {
	Cluster tfCluster `json:"cluster"`
	Task    tfTask    `json:"task"`
}

type tfCluster struct {
	Worker []string `json:"worker"`
	PS     []string `json:"ps,omitempty"`
}

type tfTask struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// distributeTensorflow gives each worker and parameter server a TF_CONFIG
// naming the whole cluster on distinct loopback ports.
func distributeTensorflow(step string, d *plan.Distribution, instances int) ([]process, []string, error) {
	workers := d.WorkerCount
	if workers <= 0 {
		workers = instances
	}
	ps := max(0, d.ParameterServerCount)
	if err := checkCount(step, workers+ps); err != nil {
		return nil, nil, err
	}
	ports, err := stepio.FreePorts(workers + ps)
	if err != nil {
		return nil, nil, err
	}
	var cluster tfCluster
	for i, p := range ports {
		addr := "127.0.0.1:" + strconv.Itoa(p)
		if i < workers {
			cluster.Worker = append(cluster.Worker, addr)
		} else {
			cluster.PS = append(cluster.PS, addr)
		}
	}
	procs := make([]process, 0, workers+ps)
	for i := range workers + ps {
		task := tfTask{Type: "worker", Index: i}
		if i >= workers {
			task = tfTask{Type: "ps", Index: i - workers}
		}
		b, err := json.Marshal(tfConfig{Cluster: cluster, Task: task})
		if err != nil {
			return nil, nil, fmt.Errorf("encode TF_CONFIG: %w", err)
		}
		label := task.Type + " " + strconv.Itoa(task.Index)
		// Workers and parameter servers fill the instances in turn.
		procs = append(procs, process{label: label, env: []string{"TF_CONFIG=" + string(b)}, instance: i % instances, rank: i})
	}
	note := fmt.Sprintf("porch: tensorflow distribution: %d workers and %d parameter servers run on this host", workers, ps)
	return procs, []string{note}, nil
}
