package command

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/affinity"
	"github.com/porch-pipelines/porch/activities/limits"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// testQueue is the task queue the SDK's activity test environment runs
// activities from.
const testQueue = "default-test-taskqueue"

// withInstanceType makes steps from the test queue run within t's limits.
func withInstanceType(a *Activities, t plan.InstanceType) {
	a.Devices = limits.NewDevices(map[string]plan.InstanceType{testQueue: t}, 0)
}

func smallType(milliCPU, memory int64) plan.InstanceType {
	return plan.InstanceType{
		Name:     "small",
		Requests: plan.ResourceList{MilliCPU: 100, MemoryBytes: 1 << 20},
		Limits:   plan.ResourceList{MilliCPU: milliCPU, MemoryBytes: memory},
	}
}

func TestAnInstanceAboveItsMemoryLimitFailsItsStepAsOOMKilled(t *testing.T) {
	env, a := newEnv(t)
	withInstanceType(a, smallType(1000, 64<<20))
	// 200Mi touched page by page (bytearray zeroes it), then a long sleep
	// the kill must cut short.
	in := stepInput(tmpl(txt(`/usr/bin/python3 -c 'import time; b = bytearray(200 << 20); time.sleep(60)'`)))

	_, err := runStep(env, in)
	appErr := appError(t, err)
	assert.Equal(t, CommandFailedType, appErr.Type())
	assert.True(t, appErr.NonRetryable())
	msg := appErr.Error()
	assert.Contains(t, msg, "instance 0 exceeded the instance type's memory limit 64Mi (peak ")
	assert.Contains(t, msg, "exit code 137, as Kubernetes' OOMKilled")
	var f CommandFailure
	require.NoError(t, appErr.Details(&f))
	assert.Equal(t, MemoryLimitExitCode, f.ExitCode)

	log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
	assert.Contains(t, log, `porch: instance 0 runs within instance type "small"'s limits: CPU 1 on cores`)
	assert.Contains(t, log, "memory 64Mi (porch kills the instance above it)")
	assert.Contains(t, log, "porch: instance 0 exceeded the instance type's memory limit 64Mi (peak ")
}

func TestAnInstanceWithinItsMemoryLimitSucceeds(t *testing.T) {
	env, a := newEnv(t)
	withInstanceType(a, smallType(1000, 512<<20))
	in := stepInput(tmpl(txt(`/usr/bin/python3 -c 'import time; b = bytearray(32 << 20); time.sleep(0.5)'`)))
	_, err := runStep(env, in)
	require.NoError(t, err)
}

// cpusAllowed reads the Cpus_allowed_list line a command wrote from
// /proc/self/status and counts its cores.
func cpusAllowed(t *testing.T, status string) int {
	t.Helper()
	for _, line := range strings.Split(status, "\n") {
		list, ok := strings.CutPrefix(line, "Cpus_allowed_list:")
		if !ok {
			continue
		}
		n := 0
		for _, part := range strings.Split(strings.TrimSpace(list), ",") {
			lo, hi, isRange := strings.Cut(part, "-")
			a, err := strconv.Atoi(lo)
			require.NoError(t, err)
			b := a
			if isRange {
				b, err = strconv.Atoi(hi)
				require.NoError(t, err)
			}
			n += b - a + 1
		}
		return n
	}
	t.Fatalf("no Cpus_allowed_list in %q", status)
	return 0
}

func TestTheCPULimitShowsInTheProcess(t *testing.T) {
	env, a := newEnv(t)
	withInstanceType(a, smallType(500, 0))
	in := stepInput(tmpl(txt(`grep Cpus_allowed_list /proc/self/status > outputs/status.txt && echo "$OMP_NUM_THREADS $MKL_NUM_THREADS $OPENBLAS_NUM_THREADS" > outputs/threads.txt`)))
	_, err := runStep(env, in)
	require.NoError(t, err)
	out := filepath.Join(artifactsDir(a, in), "outputs")
	assert.Equal(t, 1, cpusAllowed(t, readFile(t, filepath.Join(out, "status.txt"))), "500m of CPU is one core")
	assert.Equal(t, "1 1 1\n", readFile(t, filepath.Join(out, "threads.txt")))
	log := readFile(t, filepath.Join(artifactsDir(a, in), "user_logs", "std_log.txt"))
	assert.Contains(t, log, "CPU 500m on cores ")
	assert.Contains(t, log, "no memory limit")
}

func TestTheStepsOwnThreadCountWins(t *testing.T) {
	env, a := newEnv(t)
	withInstanceType(a, smallType(1000, 0))
	in := stepInput(tmpl(txt(`echo "$OMP_NUM_THREADS $MKL_NUM_THREADS" > outputs/threads.txt`)))
	in.Command.EnvironmentVariables = map[string]string{"OMP_NUM_THREADS": "7"}
	_, err := runStep(env, in)
	require.NoError(t, err)
	assert.Equal(t, "7 1\n", readFile(t, filepath.Join(artifactsDir(a, in), "outputs", "threads.txt")))
}

func TestAStepWithoutAnInstanceTypeRunsUnlimited(t *testing.T) {
	if os.Getenv("OMP_NUM_THREADS") != "" {
		t.Skip("the test's own environment sets OMP_NUM_THREADS")
	}
	env, a := newEnv(t)
	in := stepInput(tmpl(txt(`grep Cpus_allowed_list /proc/self/status > outputs/status.txt && echo "[$OMP_NUM_THREADS]" > outputs/threads.txt`)))
	_, err := runStep(env, in)
	require.NoError(t, err)
	out := filepath.Join(artifactsDir(a, in), "outputs")
	assert.Equal(t, len(affinity.Cores()), cpusAllowed(t, readFile(t, filepath.Join(out, "status.txt"))))
	assert.Equal(t, "[]\n", readFile(t, filepath.Join(out, "threads.txt")))
}

func TestDistributedInstancesGetTheirOwnCoresAndGPUs(t *testing.T) {
	if len(affinity.Cores()) < 2 {
		t.Skip("needs two cores")
	}
	env, a := newEnv(t)
	typ := smallType(1000, 0)
	typ.Limits.GPU = 1
	a.Devices = limits.NewDevices(map[string]plan.InstanceType{testQueue: typ}, 2)
	in := stepInput(tmpl(txt(`grep Cpus_allowed_list /proc/self/status > outputs/cpus-$RANK.txt && echo "$CUDA_VISIBLE_DEVICES $OMP_NUM_THREADS" > outputs/gpus-$RANK.txt`)))
	in.Command.Resources.InstanceCount = 2
	in.Command.Distribution = &plan.Distribution{Type: "pytorch", ProcessCountPerInstance: 1}
	_, err := runStep(env, in)
	require.NoError(t, err)
	out := filepath.Join(artifactsDir(a, in), "outputs")
	cpus0, cpus1 := readFile(t, filepath.Join(out, "cpus-0.txt")), readFile(t, filepath.Join(out, "cpus-1.txt"))
	assert.Equal(t, 1, cpusAllowed(t, cpus0))
	assert.Equal(t, 1, cpusAllowed(t, cpus1))
	assert.NotEqual(t, cpus0, cpus1, "the two instances share a core while another is free")
	assert.Equal(t, "0 1\n", readFile(t, filepath.Join(out, "gpus-0.txt")))
	assert.Equal(t, "1 1\n", readFile(t, filepath.Join(out, "gpus-1.txt")))
}

func TestApproxMemory(t *testing.T) {
	assert.Equal(t, "2.3Gi", approxMemory(2469606195))
	assert.Equal(t, "64.0Mi", approxMemory(64<<20))
	assert.Equal(t, "512", approxMemory(512))
}
