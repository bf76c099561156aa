package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/compiler/plan"
)

func TestRunCommandPytorchRanks(t *testing.T) {
	env, a := newEnv(t)
	in := stepInput(tmpl(txt(`echo "$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $NODE_RANK $GROUP_RANK $MASTER_ADDR $MASTER_PORT" > outputs/rank_$RANK.txt; echo "hello from $RANK"`)))
	in.Command.Resources.InstanceCount = 2
	in.Command.Distribution = &plan.Distribution{Type: "pytorch"}
	in.Command.Environment = "azureml:AzureML-acpt:1"
	_, err := runStep(env, in)
	require.NoError(t, err)

	art := artifactsDir(a, in)
	var ports []string
	for rank, want := range []string{"0 2 0 1 0 0 127.0.0.1 ", "1 2 0 1 1 1 127.0.0.1 "} {
		got := readFile(t, filepath.Join(art, "outputs", "rank_"+[]string{"0", "1"}[rank]+".txt"))
		require.True(t, strings.HasPrefix(got, want), "rank %d saw %q", rank, got)
		ports = append(ports, strings.TrimSpace(strings.TrimPrefix(got, want)))
	}
	assert.NotEmpty(t, ports[0])
	assert.Equal(t, ports[0], ports[1], "every rank meets at the same MASTER_PORT")

	logs := filepath.Join(art, "user_logs")
	assert.Contains(t, readFile(t, filepath.Join(logs, "std_log_process_0.txt")), "hello from 0\n")
	assert.Contains(t, readFile(t, filepath.Join(logs, "std_log_process_1.txt")), "hello from 1\n")
	main := readFile(t, filepath.Join(logs, "std_log.txt"))
	assert.Contains(t, main, "pytorch distribution: 2 processes (2 instances x 1 per instance) run on this host")
	assert.Equal(t, 1, strings.Count(main, "compiled before porch ran environments"))
	assert.NotContains(t, readFile(t, filepath.Join(logs, "std_log_process_1.txt")), "compiled before porch ran environments")
}

func TestRunCommandDistributionFailureNamesRank(t *testing.T) {
	env, a := newEnv(t)
	in := stepInput(tmpl(txt(`if [ "$RANK" = 1 ]; then echo boom >&2; exit 4; fi; exec sleep 300`)))
	in.Command.Resources.InstanceCount = 2
	in.Command.Distribution = &plan.Distribution{Type: "pytorch"}
	_, err := runStep(env, in)
	appErr := appError(t, err)
	assert.Equal(t, CommandFailedType, appErr.Type())
	assert.Equal(t, "process 1 (rank 1): command exited with code 4; porch stopped the other processes\nboom", appErr.Message())
	var failure CommandFailure
	require.NoError(t, appErr.Details(&failure))
	assert.Equal(t, 4, failure.ExitCode)
	assert.Equal(t, []string{"boom"}, failure.StderrTail)
	assert.Equal(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log_process_1.txt"), failure.LogFile)
}

func TestRunCommandTensorflowConfig(t *testing.T) {
	env, a := newEnv(t)
	in := stepInput(tmpl(txt(`printf '%s' "$TF_CONFIG" > outputs/tf_$$.json`)))
	in.Command.Distribution = &plan.Distribution{Type: "tensorflow", WorkerCount: 2, ParameterServerCount: 1}
	_, err := runStep(env, in)
	require.NoError(t, err)

	files, err := filepath.Glob(filepath.Join(artifactsDir(a, in), "outputs", "tf_*.json"))
	require.NoError(t, err)
	require.Len(t, files, 3)
	var tasks []string
	var cluster tfCluster
	for _, f := range files {
		var cfg tfConfig
		require.NoError(t, json.Unmarshal([]byte(readFile(t, f)), &cfg), f)
		tasks = append(tasks, cfg.Task.Type+" "+string(rune('0'+cfg.Task.Index)))
		cluster = cfg.Cluster
	}
	sort.Strings(tasks)
	assert.Equal(t, []string{"ps 0", "worker 0", "worker 1"}, tasks)
	require.Len(t, cluster.Worker, 2)
	require.Len(t, cluster.PS, 1)
	addrs := map[string]bool{}
	for _, addr := range append(cluster.Worker, cluster.PS...) {
		assert.True(t, strings.HasPrefix(addr, "127.0.0.1:"), addr)
		addrs[addr] = true
	}
	assert.Len(t, addrs, 3, "every task has its own port")
}

func TestDistributeMPI(t *testing.T) {
	in := stepInput(tmpl(txt("true")))
	in.Command.Resources.InstanceCount = 2
	in.Command.Distribution = &plan.Distribution{Type: "mpi", ProcessCountPerInstance: 2}
	procs, _, err := distribute(in)
	require.NoError(t, err)
	require.Len(t, procs, 4)
	assert.Equal(t, "rank 3", procs[3].label)
	assert.Equal(t, []string{
		"RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=1", "NODE_RANK=1",
		"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=1",
		"OMPI_COMM_WORLD_LOCAL_SIZE=2", "OMPI_COMM_WORLD_NODE_RANK=1",
	}, procs[3].env)
}

func TestDistributeTensorflowDefaultsToInstanceCount(t *testing.T) {
	in := stepInput(tmpl(txt("true")))
	in.Command.Resources.InstanceCount = 3
	in.Command.Distribution = &plan.Distribution{Type: "tensorflow"}
	procs, _, err := distribute(in)
	require.NoError(t, err)
	require.Len(t, procs, 3)
	var cfg tfConfig
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(procs[2].env[0], "TF_CONFIG=")), &cfg))
	assert.Equal(t, tfTask{Type: "worker", Index: 2}, cfg.Task)
	assert.Len(t, cfg.Cluster.Worker, 3)
	assert.Empty(t, cfg.Cluster.PS)
}

func TestDistributeWithoutDistribution(t *testing.T) {
	in := stepInput(tmpl(txt("true")))
	in.Command.Resources.InstanceCount = 4
	procs, notes, err := distribute(in)
	require.NoError(t, err)
	assert.Len(t, procs, 1)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "instance_count is 4 but the step has no distribution: porch runs the command once")
}

func TestDistributeRejects(t *testing.T) {
	cases := map[string]struct {
		d         plan.Distribution
		instances int
		want      string
	}{
		"unknown type": {plan.Distribution{Type: "ray"}, 2, `distribution type "ray" is not supported: use pytorch, mpi or tensorflow`},
		"too many":     {plan.Distribution{Type: "pytorch", ProcessCountPerInstance: 8}, 16, "asks for 128 processes"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := stepInput(tmpl(txt("true")))
			in.Command.Resources.InstanceCount = c.instances
			in.Command.Distribution = &c.d
			_, _, err := distribute(in)
			appErr := appError(t, err)
			assert.True(t, appErr.NonRetryable())
			assert.Contains(t, appErr.Message(), c.want)
		})
	}
}

func TestRunCommandSingleProcessDistribution(t *testing.T) {
	env, a := newEnv(t)
	in := stepInput(tmpl(txt(`echo "$RANK/$WORLD_SIZE" > outputs/r.txt`)))
	in.Command.Distribution = &plan.Distribution{Type: "pytorch"}
	_, err := runStep(env, in)
	require.NoError(t, err)
	art := artifactsDir(a, in)
	assert.Equal(t, "0/1\n", readFile(t, filepath.Join(art, "outputs", "r.txt")))
	_, err = os.Stat(filepath.Join(art, "user_logs", "std_log_process_0.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "one process logs to std_log.txt")
}
