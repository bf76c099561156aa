package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/porch-pipelines/porch/activities/launch"
	"github.com/porch-pipelines/porch/compiler/plan"
	"github.com/porch-pipelines/porch/compute"
	"github.com/porch-pipelines/porch/internal/devserver"
	"github.com/porch-pipelines/porch/internal/fleet"
	"github.com/porch-pipelines/porch/worker"
	"github.com/porch-pipelines/porch/workflows"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
)

// devFlags are the flags of `porch dev`.
type devFlags struct {
	db, ip, namespace string
	// metrics and serverMetrics are the worker's and the server's
	// metrics addresses.
	metrics, serverMetrics string
	port, uiPort           int
	computes               []string
	fleet, insecure        bool
	// tlsCert, tlsKey and tlsCA are the frontend's TLS files: its
	// certificate, its key, and the CA of client certificates.
	tlsCert, tlsKey, tlsCA string
	// runtime is --runtime, for porch dev's worker and its fleet's;
	// resolved is what it resolved to.
	runtime  string
	resolved launch.Runtime
}

func (a *app) devCommand() *cobra.Command {
	var f devFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a Temporal development server with the web UI, a porch worker and a local fleet",
		Long: "Run a long-lived Temporal server (SQLite file), its web UI and a worker serving the default\n" +
			"queue and the listed computes. Other porch commands on this machine find it by themselves.\n\n" +
			"Each amlcompute compute in the catalogue (other than those listed) gets a local fleet: porch\n" +
			"worker processes started as its backlog grows, up to max_instances, at least min_instances,\n" +
			"each stopped after idle_time_before_scale_down idle seconds. Their logs are in $PORCH_HOME/fleet.\n\n" +
			"Without TLS the server has no authentication: it listens on 127.0.0.1, and an --ip that is not\n" +
			"loopback needs --insecure. With --tls-cert-path, --tls-key-path and --tls-ca-path its frontend\n" +
			"serves mutual TLS, and with --ui-port 0 it may listen on any --ip. Its internal services\n" +
			"(history, matching, worker, and with TLS an internal frontend without TLS, which porch dev's\n" +
			"own workers and the porch commands of this machine use) always listen on 127.0.0.1.",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runDev(cmd.Context(), f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.db, "db", "", "SQLite database file (default $PORCH_HOME/dev.db)")
	fl.StringVar(&f.ip, "ip", "127.0.0.1", "address the server's frontend and UI listen on (a loopback address unless --insecure)")
	fl.BoolVar(&f.insecure, "insecure", false, "allow an --ip (or metrics address) that is not loopback: the server, UI and metrics have no TLS "+
		"and no authentication, so whoever reaches them can run commands as you")
	fl.IntVar(&f.port, "port", 7233, "Temporal frontend gRPC port")
	fl.IntVar(&f.uiPort, "ui-port", 8233, "web UI port; 0 for no UI")
	fl.StringVar(&f.namespace, "namespace", defaultNamespace, "Temporal namespace, created when missing")
	fl.StringArrayVar(&f.computes, "compute", nil, "also serve this compute's steps (repeatable)")
	fl.StringVar(&f.metrics, "metrics-address", "", "serve the worker's Prometheus metrics at http://ADDRESS/metrics, with /healthz and /readyz, "+
		"and the Temporal server's on the next port (host:port, such as 127.0.0.1:9464; a loopback address unless --insecure)")
	fl.StringVar(&f.serverMetrics, "server-metrics-address", "", "serve the Temporal server's Prometheus metrics at http://ADDRESS/metrics "+
		"(default with --metrics-address: its host, its port + 1)")
	fl.BoolVar(&f.fleet, "fleet", true, "run a local fleet of workers for each amlcompute compute, scaled on its backlog")
	fl.StringVar(&f.tlsCert, "tls-cert-path", "", "serve TLS with this certificate, PEM (needs --tls-key-path)")
	fl.StringVar(&f.tlsKey, "tls-key-path", "", "the TLS certificate's private key, PEM")
	fl.StringVar(&f.tlsCA, "tls-ca-path", "", "require client certificates signed by this CA, PEM: mutual TLS")
	registerRuntime(fl, &f.runtime)
	return cmd
}

func (a *app) runDev(ctx context.Context, f devFlags) error {
	tlsOpts, err := f.tlsOptions()
	if err != nil {
		return err
	}
	if err := checkDevIP(f.ip, f.insecure || tlsOpts != nil && tlsOpts.ClientCAFile != "" && f.uiPort == 0); err != nil {
		return err
	}
	if f.serverMetrics, err = serverMetricsAddress(f.metrics, f.serverMetrics); err != nil {
		return err
	}
	if err := checkDevMetricsAddresses(f); err != nil {
		return err
	}
	home, err := resolveHome(a.getenv)
	if err != nil {
		return err
	}
	rt, err := a.resolveRuntime(f.runtime, home)
	if err != nil {
		return err
	}
	f.resolved = rt
	if f.db == "" {
		f.db = filepath.Join(home, "dev.db")
	}
	if err := os.MkdirAll(filepath.Dir(f.db), 0o755); err != nil {
		return fmt.Errorf("create the database folder: %v", err)
	}
	serverLog, err := openLog(home, "dev-server.log")
	if err != nil {
		return err
	}
	workerLog, err := openLog(home, "dev-worker.log")
	if err != nil {
		serverLog.Close()
		return err
	}
	sess := &session{settings: settings{Home: home, Namespace: f.namespace}, closers: []io.Closer{serverLog, workerLog}}
	defer sess.Close()
	metrics, err := startMetrics(f.metrics)
	if err != nil {
		return err
	}
	defer metrics.close()
	sess.settings.Metrics = metrics.handler()
	sess.server, err = devserver.Start(ctx, devserver.Options{
		DBFile: f.db, IP: f.ip, Insecure: f.insecure, Port: f.port, UIPort: f.uiPort, Namespace: f.namespace,
		SearchAttributes: workflows.SearchAttributes(), LogWriter: serverLog, TLS: tlsOpts, MetricsAddress: f.serverMetrics,
	})
	if err != nil {
		return fmt.Errorf("start the dev server: %v: is another server using port %d? choose others with --port "+
			"and --ui-port (server log: %s)", err, f.port, serverLog.Name())
	}
	// porch dev's own workers, and the porch commands of this machine,
	// use the local address, which has no TLS.
	sess.settings = sess.settings.local(sess.server.LocalAddress(), "porch dev")
	if sess.client, err = dialClient(ctx, sess.settings, sdkLogger(workerLog, slog.LevelInfo)); err != nil {
		return err
	}
	computes := append([]string{""}, normaliseComputes(f.computes)...)
	// GPU -1: the machine's GPUs, as nvidia-smi lists them.
	opts := worker.Options{Home: home, Computes: computes, Workflows: true, Capacity: plan.ResourceList{GPU: -1},
		Metrics: metrics.handler(), Runtime: rt}
	if sess.worker, err = worker.Start(sess.client, opts); err != nil {
		return fmt.Errorf("start the worker: %v", err)
	}
	metrics.ready(sess.client)
	banner := ""
	if !isLoopbackIP(f.ip) && f.insecure {
		banner = devserver.InsecureWarning(f.ip)
	}
	// Links go to the Temporal UI on the same origin.
	sess.server.ServePages(pageHandler(sess, "/", banner))
	st := devState{Address: sess.settings.Address, Namespace: f.namespace,
		UI: sess.server.UIAddress(), PID: os.Getpid(), Python: a.getenv(envPython)}
	if tlsOpts != nil {
		st.TLSAddress = sess.server.FrontendAddress()
	}
	removeState, err := writeDevState(home, st)
	if err != nil {
		return err
	}
	defer removeState()
	var nodes *fleet.Fleet
	if f.fleet {
		nodes, err = fleet.Start(fleet.Options{Client: sess.client, Address: sess.settings.Address, Namespace: f.namespace,
			Home: home, Skip: computes, Events: a.stdout, Metrics: metrics.handler(), Runtime: rt.Kind})
		if err != nil {
			return err
		}
	}
	if !isLoopbackIP(f.ip) && f.insecure {
		fmt.Fprintf(a.stderr, "porch dev: warning: %s (--insecure)\n", devserver.InsecureWarning(f.ip))
	}
	for _, addr := range []string{f.metrics, f.serverMetrics} {
		if addr != "" && !isLoopbackAddress(addr) {
			fmt.Fprintf(a.stderr, "porch dev: warning: metrics and health at %s have no authentication: anyone who can reach them reads "+
				"your experiments', computes' and task queues' names (--insecure)\n", addr)
		}
	}
	var metricsLine string
	if metrics != nil {
		metricsLine = fmt.Sprintf("worker http://%s/metrics (health: /healthz, /readyz), server http://%s/metrics",
			metrics.addr(), f.serverMetrics)
	}
	a.printDevBanner(sess, f.db, f, nodes, metricsLine, serverLog.Name(), workerLog.Name())
	<-ctx.Done()
	metrics.stopping()
	fmt.Fprintln(a.stdout, "porch dev: stopping")
	if nodes != nil {
		nodes.Stop()
	}
	return nil
}

// tlsOptions are the frontend's TLS files, nil for none.
func (f devFlags) tlsOptions() (*devserver.TLSOptions, error) {
	if f.tlsCert == "" && f.tlsKey == "" {
		if f.tlsCA != "" {
			return nil, usageError("--tls-ca-path needs the server's certificate: add --tls-cert-path and --tls-key-path")
		}
		return nil, nil
	}
	if f.tlsCert == "" || f.tlsKey == "" {
		return nil, usageError("TLS needs both the certificate and its key: give --tls-cert-path and --tls-key-path")
	}
	if _, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey); err != nil {
		return nil, usageError("--tls-cert-path %s and --tls-key-path %s: %v: give a PEM certificate and its private key",
			f.tlsCert, f.tlsKey, err)
	}
	if f.tlsCA != "" {
		data, err := os.ReadFile(f.tlsCA)
		if err != nil {
			return nil, usageError("--tls-ca-path: %v", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(data) {
			return nil, usageError("--tls-ca-path %s holds no PEM certificate", f.tlsCA)
		}
	}
	return &devserver.TLSOptions{CertFile: f.tlsCert, KeyFile: f.tlsKey, ClientCAFile: f.tlsCA}, nil
}

// checkDevIP refuses an --ip that is not a loopback address unless
// clients must authenticate (mutual TLS, no UI) or the user says
// --insecure.
func checkDevIP(ip string, allowed bool) error {
	if net.ParseIP(ip) == nil {
		return usageError("--ip %q is not an IP address: give one such as 127.0.0.1", ip)
	}
	if isLoopbackIP(ip) || allowed {
		return nil
	}
	return usageError("--ip %s is not a loopback address: porch dev has no authentication, so anyone who "+
		"can reach %s could start runs, and so run commands, as the user who started porch dev; use --ip 127.0.0.1 "+
		"(reach it from elsewhere through an SSH tunnel), require client certificates with --tls-cert-path, "+
		"--tls-key-path, --tls-ca-path and --ui-port 0, or add --insecure on a network you trust", ip, ip)
}

// checkDevMetricsAddresses refuses metrics addresses of porch dev (its
// worker's and its server's) that are not loopback unless the user says
// --insecure: like the server without TLS, they have no authentication.
func checkDevMetricsAddresses(f devFlags) error {
	for _, a := range []struct{ flag, addr string }{{"--metrics-address", f.metrics}, {"--server-metrics-address", f.serverMetrics}} {
		if a.addr == "" || f.insecure || isLoopbackAddress(a.addr) {
			continue
		}
		return usageError("%s %s is not a loopback address: metrics and health have no authentication, so anyone who can "+
			"reach it reads the names of your experiments, computes and task queues; give one such as 127.0.0.1:9464 "+
			"(reach it from elsewhere through an SSH tunnel), or add --insecure on a network you trust", a.flag, a.addr)
	}
	return nil
}

// isLoopbackAddress reports whether host:port listens on loopback only: a
// loopback IP or localhost. An empty host is every interface.
func isLoopbackAddress(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && (host == "localhost" || isLoopbackIP(host))
}

// isLoopbackIP reports whether ip is a loopback address.
func isLoopbackIP(ip string) bool {
	parsed := net.ParseIP(ip)
	return parsed != nil && parsed.IsLoopback()
}

func (a *app) printDevBanner(sess *session, db string, f devFlags, nodes *fleet.Fleet, metrics string, logs ...string) {
	addr := sess.settings.Address
	w := a.stdout
	if f.tlsCert != "" {
		auth := "TLS"
		if f.tlsCA != "" {
			auth = "mutual TLS: clients need a certificate signed by " + f.tlsCA
		}
		fmt.Fprintf(w, "porch dev: temporal server at %s (%s), namespace %s\n", sess.server.FrontendAddress(), auth,
			sess.settings.Namespace)
		fmt.Fprintf(w, "  local:    %s (no TLS, for this machine)\n", addr)
	} else {
		fmt.Fprintf(w, "porch dev: temporal server at %s, namespace %s\n", addr, sess.settings.Namespace)
	}
	if ui := sess.server.UIAddress(); ui != "" {
		fmt.Fprintf(w, "  web UI:   %s\n", ui)
		fmt.Fprintf(w, "  porch UI: %s%s (runs, their live DAG, steps' logs and trials)\n", ui, devserver.PagesPrefix)
	}
	fmt.Fprintf(w, "  database: %s\n", db)
	fmt.Fprintf(w, "  worker:   task queues %s\n", strings.Join(sess.worker.Queues(), ", "))
	fmt.Fprintf(w, "  runtime:  %s (steps with an environment: run %s)\n", f.resolved, runtimeWhere(f.resolved))
	if nodes != nil {
		fmt.Fprintf(w, "  fleet:    on: workers for amlcompute computes, started on demand (logs: %s)\n", nodes.Dir())
	}
	fmt.Fprintf(w, "  logs:     %s\n", strings.Join(logs, ", "))
	if metrics != "" {
		fmt.Fprintf(w, "  metrics:  %s\n", metrics)
	}
	fmt.Fprintf(w, "run a pipeline:  porch run --address %s FILE\n", addr)
	fmt.Fprintf(w, "                 (porch job list/show/logs/cancel find this server without --address)\n")
	fmt.Fprintf(w, "temporal CLI:    temporal workflow list --address %s --namespace %s\n", addr, sess.settings.Namespace)
	fmt.Fprintf(w, "more computes:   porch worker --address %s --compute NAME\n", addr)
	fmt.Fprintln(w, "press Ctrl-C to stop")
}

func (a *app) workerCommand() *cobra.Command {
	var flags serverFlags
	var computes, instanceTypes []string
	var withWorkflows bool
	var python, node, advertise, labels, cpu, memory, statusFile, metricsAddr, runtime string
	var gpu int64
	var slots int
	var preemptible bool
	var planGrace time.Duration
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a worker: porch workflows and the steps of the given computes",
		Long: "Run a worker for a Temporal server. Without --compute it runs porch workflows and the steps\n" +
			"of the default compute; with --compute it serves those computes (add --workflows to run\n" +
			"workflows too).\n\n" +
			"On a kubernetes compute each instance type is a task queue of its own\n" +
			"(porch-compute-<compute>-<instance type>). The worker serves the instance types named with\n" +
			"--instance-type, or without it every applied one whose nodeSelector its --labels satisfy\n" +
			"and whose requests fit its capacity. It runs no more steps at once than its capacity fits:\n" +
			"a running step holds its instance type's CPU, memory and GPU requests. Capacity is this\n" +
			"machine's cores, memory and nvidia-smi GPUs unless --cpu, --memory or --gpu say otherwise.\n\n" +
			"A worker of the default compute (no --compute, or --compute serverless) also serves\n" +
			"porch-serverless-<instance type> for the instance types its labels and capacity allow (or\n" +
			"those named with --instance-type): a serverless step runs on the cheapest live one that fits.\n\n" +
			"A preemptible worker (--preemptible, the default on a low_priority amlcompute) serves the\n" +
			"spot variant of each queue (<queue>-spot), where steps with queue_settings.job_tier: spot\n" +
			"and the steps of low_priority computes run. On SIGTERM it stops at once, like a reclaimed\n" +
			"spot VM: its steps' processes are killed and the steps fail over by heartbeat timeout.\n" +
			"A step preempted 3 times moves to dedicated workers (--preemptible=false).\n\n" +
			"A worker started before its server, or whose server does not answer, waits for it,\n" +
			"trying again at most every 30 s; certificates or an API key the server refuses stop it.",
		Example: "  porch worker --compute k8s --instance-type gpu-small --labels accelerator=nvidia --gpu 1\n" +
			"  porch worker --compute serverless --instance-type large --cpu 8 --memory 32Gi\n" +
			"  porch worker --compute k8s --cpu 4 --memory 16Gi",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := worker.Options{Computes: normaliseComputes(computes), Workflows: withWorkflows, Python: python, Node: node,
				InstanceTypes: instanceTypes, Slots: slots, StatusFile: statusFile, AdvertiseAddress: advertise, PlanGrace: planGrace}
			if planGrace < 0 {
				return fmt.Errorf("--plan-grace %s is negative: give how long a stored plan stays once nothing holds it, such as 1h", planGrace)
			}
			var err error
			if opts.Labels, err = parseLabels(labels); err != nil {
				return err
			}
			if opts.Capacity, err = parseCapacity(cpu, memory, gpu); err != nil {
				return err
			}
			home, err := resolveHome(a.getenv)
			if err != nil {
				return err
			}
			if opts.Runtime, err = a.resolveRuntime(runtime, home); err != nil {
				return err
			}
			if slots < 0 {
				return fmt.Errorf("--slots %d is negative: give the number of activities to run at once, or 0 for no limit", slots)
			}
			if cmd.Flags().Changed("preemptible") {
				opts.Preemptible = &preemptible
			}
			if len(computes) == 0 {
				if len(instanceTypes) > 0 {
					return fmt.Errorf("--instance-type needs --compute: name the kubernetes compute whose instance types this worker serves")
				}
				opts.Computes, opts.Workflows = []string{""}, true
			}
			return a.runWorker(cmd.Context(), flags, opts, metricsAddr)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&computes, "compute", nil, "serve this compute's steps (repeatable; \"\" or serverless is the default queue)")
	f.BoolVar(&withWorkflows, "workflows", false, "also run porch workflows (the default without --compute)")
	f.StringVar(&python, "python", "", "the Python every step runs as python and python3, and entry scripts in (default $PORCH_PYTHON, else python3 on PATH)")
	f.StringVar(&node, "node", "", "name of this worker in parallel steps' logs (default <hostname>-<pid>)")
	f.StringVar(&advertise, "advertise-address", "", "address other workers reach this one at, for distributed steps' MASTER_ADDR (default: the first non-loopback IPv4 address)")
	f.StringSliceVar(&instanceTypes, "instance-type", nil, "serve this instance type of a kubernetes compute or of serverless (repeatable; default every one the labels and capacity allow)")
	f.StringVar(&labels, "labels", "", "this worker's node labels, k=v,k=v, matched against instance types' nodeSelector")
	f.StringVar(&cpu, "cpu", "", "CPUs this worker offers, a Kubernetes quantity such as 4 or 1500m (default: this machine's cores)")
	f.StringVar(&memory, "memory", "", "memory this worker offers, a Kubernetes quantity such as 16Gi (default: this machine's)")
	f.Int64Var(&gpu, "gpu", -1, "GPUs this worker offers (default: those nvidia-smi lists)")
	f.IntVar(&slots, "slots", 0, "run at most this many activities (steps, mini-batches) at once on each amlcompute queue (default: no limit)")
	f.StringVar(&statusFile, "status-file", "", "keep this file up to date with the worker's running activities (for porch dev's fleet)")
	f.StringVar(&metricsAddr, "metrics-address", "", "serve Prometheus metrics at http://ADDRESS/metrics, and health at /healthz and /readyz (host:port, such as :9464)")
	f.DurationVar(&planGrace, "plan-grace", workflows.DefaultPlanGrace, "how long a stored plan stays once no run or schedule holds it (see temporal.md)")
	registerRuntime(f, &runtime)
	f.BoolVar(&preemptible, "preemptible", false, "run spot steps, and stop at once on SIGTERM like a spot VM (default: true on a low_priority amlcompute)")
	flags.register(cmd)
	return cmd
}

// parseLabels reads --labels k=v,k=v.
func parseLabels(s string) ([]plan.Label, error) {
	var out []plan.Label
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--labels: %q is not key=value: write --labels k=v,k2=v2", kv)
		}
		out = append(out, plan.Label{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)})
	}
	return out, nil
}

// parseCapacity reads --cpu, --memory and --gpu; what is not given stays
// zero, for the worker to detect.
func parseCapacity(cpu, memory string, gpu int64) (plan.ResourceList, error) {
	var r plan.ResourceList
	var err error
	if cpu != "" {
		if r.MilliCPU, err = compute.ParseQuantityUnits(cpu, 1000); err != nil || r.MilliCPU == 0 {
			return r, fmt.Errorf("--cpu %s: %v: give CPUs as a Kubernetes quantity above zero, such as 4 or 1500m", cpu, errOrZero(err))
		}
	}
	if memory != "" {
		if r.MemoryBytes, err = compute.ParseQuantityUnits(memory, 1); err != nil || r.MemoryBytes == 0 {
			return r, fmt.Errorf("--memory %s: %v: give memory as a Kubernetes quantity above zero, such as 16Gi or 1500Mi", memory, errOrZero(err))
		}
	}
	if gpu < -1 {
		return r, fmt.Errorf("--gpu %d is negative: give a number of GPUs, 0 or more", gpu)
	}
	r.GPU = gpu // -1: those nvidia-smi lists
	return r, nil
}

func errOrZero(err error) error {
	if err == nil {
		return fmt.Errorf("it is zero")
	}
	return err
}

func (a *app) runWorker(ctx context.Context, flags serverFlags, opts worker.Options, metricsAddr string) error {
	s, err := a.serverSettings(flags)
	if err != nil {
		return err
	}
	opts.Home = s.Home
	metrics, err := startMetrics(metricsAddr)
	if err != nil {
		return err
	}
	defer metrics.close()
	s.Metrics, opts.Metrics = metrics.handler(), metrics.handler()
	c, err := a.dialUntilAnswered(ctx, s)
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := worker.Start(c, opts)
	if err != nil {
		return fmt.Errorf("start the worker: %v", err)
	}
	metrics.ready(c)
	what := "steps on task queues " + strings.Join(w.Queues(), ", ")
	if opts.Workflows {
		what = "porch workflows and " + what
	}
	fmt.Fprintf(a.stdout, "porch worker: running %s at %s (namespace %s); Ctrl-C to stop\n", what, s.Address, s.Namespace)
	node := w.Node()
	if w.Preemptible() {
		node += " (preemptible: spot steps; stops at once on SIGTERM)"
	}
	fmt.Fprintf(a.stdout, "porch worker: node %s\n", node)
	if metrics != nil {
		fmt.Fprintf(a.stdout, "porch worker: metrics at http://%s/metrics, health at /healthz and /readyz\n", metrics.addr())
	}
	<-ctx.Done()
	metrics.stopping()
	if w.Preemptible() {
		fmt.Fprintln(a.stdout, "porch worker: preempted: stopping at once; running steps fail over by heartbeat timeout and retry elsewhere")
		w.Preempt()
		return nil
	}
	fmt.Fprintln(a.stdout, "porch worker: stopping (running steps are canceled and retried elsewhere)")
	w.Stop()
	return nil
}

// dialUntilAnswered connects to the server, waiting for it while it does
// not answer: a fleet may start before its server, or the server restart,
// and a worker that waits is ready (/readyz) as soon as it answers instead
// of needing a restart. Settings the server refuses fail at once.
func (a *app) dialUntilAnswered(ctx context.Context, s settings) (client.Client, error) {
	wait := time.Second
	for {
		c, err := dialClient(ctx, s, sdkLogger(a.stderr, slog.LevelInfo))
		if err == nil || !notAnsweringYet(err) || ctx.Err() != nil {
			return c, err
		}
		fmt.Fprintf(a.stderr, "porch worker: %v; trying again in %s (Ctrl-C to stop)\n", err, wait)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, maxDialWait)
	}
}

// maxDialWait is the longest a worker waits between two tries to reach
// its server.
const maxDialWait = 30 * time.Second

// normaliseComputes maps compute names as Azure writes them to plan
// compute names: "azureml:gpu" is "gpu"; serverless and local are "".
func normaliseComputes(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		n = strings.TrimPrefix(strings.TrimSpace(n), "azureml:")
		if n == "serverless" || n == "local" {
			n = ""
		}
		out = append(out, n)
	}
	return out
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print porch's version",
		Args:  exactArgs(0, "no arguments"),
		Run: func(cmd *cobra.Command, args []string) {
			fmt.Fprintf(a.stdout, "porch %s\n", buildVersion())
		},
	}
}

// Version is porch's version, set at link time with
// -ldflags "-X github.com/porch-pipelines/porch/internal/cli.Version=v1.2.3";
// otherwise the module version, or "devel".
var Version = ""

func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	v := Version
	if v == "" && ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if v == "" {
		v = "devel"
	}
	if !ok {
		return v
	}
	extra := []string{info.GoVersion}
	for _, d := range info.Deps {
		if d.Path == "go.temporal.io/sdk" || d.Path == "go.temporal.io/server" {
			extra = append(extra, strings.TrimPrefix(d.Path, "go.temporal.io/")+" "+d.Version)
		}
	}
	return v + " (" + strings.Join(extra, ", ") + ")"
}
