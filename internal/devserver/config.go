package devserver

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	clusterName = "active"
	storeName   = "sqlite-default"
	// retention of a namespace this package creates.
	defaultRetention = 7 * 24 * time.Hour
)

// tunedDynamicConfig lifts the limits that make a one-shard server on one
// machine slow. The server's defaults suit a cluster with hundreds of shards:
// each queue processor reads at most 20 times a second per shard, so with one
// shard a chain of activities waits ~50 ms a step for the transfer queue.
var tunedDynamicConfig = map[string]any{
	"history.transferProcessorMaxPollRPS":   10000,
	"history.timerProcessorMaxPollRPS":      10000,
	"history.visibilityProcessorMaxPollRPS": 10000,
	"history.outboundProcessorMaxPollRPS":   10000,
	// Rate limits sized for thousands of activities a second, each costing a
	// few frontend calls (poll, complete, workflow task) and persistence writes.
	"frontend.rps":                     100000,
	"frontend.namespaceRPS":            100000,
	"frontend.namespaceRPS.visibility": 1000,
	"frontend.persistenceMaxQPS":       100000,
	"history.rps":                      100000,
	"history.persistenceMaxQPS":        100000,
	"matching.rps":                     100000,
	"matching.persistenceMaxQPS":       100000,
	// One partition per task queue: on one host more partitions only add
	// forwarding between them. Measured with 32 activities in flight: 630-740
	// activities/s with one partition, 250-390 with the default four.
	"matching.numTaskqueueReadPartitions":  1,
	"matching.numTaskqueueWritePartitions": 1,
	// The history cache holds the mutable state of workflows, closed ones
	// too, for an hour: at the default 128,000 entries every step of a
	// 10,000-step run stayed cached, and the process held 1.2-1.3 GB.
	// Thousands cover the workflows one machine runs at once.
	"history.hostLevelCacheMaxSize": 4096,
}

// baseDynamicConfig holds settings the dev server needs whatever the tuning.
var baseDynamicConfig = map[string]any{
	// The scanners garbage-collect task queues and history branches of a
	// long-lived cluster; the parent-close-policy worker offloads closing
	// many children to a system workflow. The server never stops these SDK
	// workers: after Stop they would poll the dead frontend for the rest of
	// the process, and hold its shutdown for its full 1 s drain. Without the
	// worker, history applies parent close policies itself.
	"worker.taskQueueScannerEnabled":       false,
	"worker.historyScannerEnabled":         false,
	"system.enableParentClosePolicyWorker": false,
	// porch dev's fleet scales on the backlog DescribeTaskQueue reports,
	// which the server caches for 5 s by default: a second keeps a new
	// backlog from waiting that long for its first node.
	"matching.TaskQueueInfoByBuildIdTTL": time.Second,
	// A closed workflow is deleted (temporal workflow delete, or at the
	// end of retention) once its close task is acknowledged, as of the
	// transfer queue's state, saved every 30 s by default: saved every
	// second, on one shard, a deletion takes a second or two, not a minute.
	"history.transferProcessorUpdateAckInterval": time.Second,
}

func dynamicConfig(tuned bool) dynamicconfig.StaticClient {
	dc := make(dynamicconfig.StaticClient)
	for k, v := range baseDynamicConfig {
		dc[dynamicconfig.MakeKey(k)] = v
	}
	if tuned {
		for k, v := range tunedDynamicConfig {
			dc[dynamicconfig.MakeKey(k)] = v
		}
	}
	return dc
}

// ports are the listening ports of one server's services. The frontend's
// (gRPC and its HTTP API) listen on the server's IP; history, matching,
// worker and the internal frontend on its internal IP, a loopback address,
// whatever the server's IP: they trust every caller. With TLS on the
// frontend the server's services reach it through the internal frontend
// (0 without TLS), which serves the same API without TLS.
type ports struct {
	frontend, frontendHTTP, history, matching, worker int
	internalFrontend, internalFrontendHTTP            int
}

// internalIP is where the services other than the frontend listen: ip if it
// is a loopback address, else 127.0.0.1.
func internalIP(ip string) string {
	if parsed := net.ParseIP(ip); parsed != nil && parsed.IsLoopback() {
		return ip
	}
	return defaultIP
}

func allocatePorts(ip string, frontend int, internalFrontend bool) (ports, error) {
	p := ports{frontend: frontend}
	internal := internalIP(ip)
	type slot struct {
		dst *int
		ip  string
	}
	slots := []slot{{&p.frontend, ip}, {&p.frontendHTTP, ip}, {&p.history, internal}, {&p.matching, internal}, {&p.worker, internal}}
	if internalFrontend {
		slots = append(slots, slot{&p.internalFrontend, internal}, slot{&p.internalFrontendHTTP, internal})
	}
	for _, port := range slots {
		if *port.dst != 0 {
			continue
		}
		free, err := freePort(port.ip)
		if err != nil {
			return ports{}, err
		}
		*port.dst = free
	}
	return p, nil
}

// internalAddress is where the server's own clients reach its API: the
// internal frontend if there is one, else the frontend.
func (p ports) internalAddress(ip string) string {
	if p.internalFrontend != 0 {
		return net.JoinHostPort(internalIP(ip), strconv.Itoa(p.internalFrontend))
	}
	return net.JoinHostPort(ip, strconv.Itoa(p.frontend))
}

func (p ports) staticHosts(ip string) map[primitives.ServiceName]static.Hosts {
	host := func(ip string, port int) static.Hosts {
		return static.SingleLocalHost(net.JoinHostPort(ip, strconv.Itoa(port)))
	}
	internal := internalIP(ip)
	hosts := map[primitives.ServiceName]static.Hosts{
		primitives.FrontendService: host(ip, p.frontend),
		primitives.HistoryService:  host(internal, p.history),
		primitives.MatchingService: host(internal, p.matching),
		primitives.WorkerService:   host(internal, p.worker),
	}
	if p.internalFrontend != 0 {
		hosts[primitives.InternalFrontendService] = host(internal, p.internalFrontend)
	}
	return hosts
}

func serverConfig(opts Options, p ports, store *config.SQL) *config.Config {
	frontend := net.JoinHostPort(opts.IP, strconv.Itoa(p.frontend))
	internal := internalIP(opts.IP)
	service := func(ip string, port int) config.Service {
		var s config.Service
		s.RPC.GRPCPort = port
		s.RPC.BindOnIP = ip
		return s
	}
	var c config.Config
	c.Global.Membership.MaxJoinDuration = 30 * time.Second
	c.Global.Membership.BroadcastAddress = internal
	c.Persistence.DefaultStore = storeName
	c.Persistence.VisibilityStore = storeName
	c.Persistence.NumHistoryShards = 1
	c.Persistence.DataStores = map[string]config.DataStore{storeName: {SQL: store}}
	c.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontend,
				HTTPAddress:            net.JoinHostPort(opts.IP, strconv.Itoa(p.frontendHTTP)),
			},
		},
	}
	c.DCRedirectionPolicy.Policy = "noop"
	// The frontend's HTTP API serves Nexus; without it the server warns.
	fe := service(opts.IP, p.frontend)
	fe.RPC.HTTPPort = p.frontendHTTP
	c.Services = map[string]config.Service{
		string(primitives.FrontendService): fe,
		string(primitives.HistoryService):  service(internal, p.history),
		string(primitives.MatchingService): service(internal, p.matching),
		string(primitives.WorkerService):   service(internal, p.worker),
	}
	if opts.TLS != nil {
		withTLS(&c, *opts.TLS, p, service(internal, p.internalFrontend))
	}
	c.Archival.History.State = "disabled"
	c.Archival.Visibility.State = "disabled"
	c.NamespaceDefaults.Archival.History.State = "disabled"
	c.NamespaceDefaults.Archival.Visibility.State = "disabled"
	if opts.TLS == nil {
		// With TLS the server's services find the internal frontend
		// through membership; the server refuses a public client then.
		c.PublicClient.HostPort = frontend
	}
	if opts.MetricsAddress != "" {
		// Tally, the server's default framework, names metrics as
		// Temporal's published dashboards expect.
		c.Global.Metrics = &metrics.Config{Prometheus: &metrics.PrometheusConfig{
			ListenAddress: opts.MetricsAddress, HandlerPath: "/metrics", TimerType: "histogram",
		}}
	}
	return &c
}

// withTLS puts TLS on the frontend and adds the internal frontend, through
// which the server's system workers reach its API (with the internode TLS
// settings: none).
func withTLS(c *config.Config, t TLSOptions, p ports, internalFrontend config.Service) {
	c.Global.TLS.Frontend.Server = config.ServerTLS{CertFile: t.CertFile, KeyFile: t.KeyFile}
	if t.ClientCAFile != "" {
		c.Global.TLS.Frontend.Server.ClientCAFiles = []string{t.ClientCAFile}
		c.Global.TLS.Frontend.Server.RequireClientAuth = true
	}
	internalFrontend.RPC.HTTPPort = p.internalFrontendHTTP
	c.Services[string(primitives.InternalFrontendService)] = internalFrontend
}

// scratchDBs numbers the scratch databases of this process.
var scratchDBs atomic.Int64

// scratchDir is where a server without a database file keeps its scratch
// database: tmpfs when the machine has it.
func scratchDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "porch-probe-*"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return "/dev/shm"
		}
	}
	return os.TempDir()
}

// removeStaleScratch removes the scratch databases of porch processes that
// died without stopping their server (killed, crashed): on tmpfs they would
// hold memory until the machine restarts.
func removeStaleScratch(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "porch-temporal-*.db*"))
	for _, f := range files {
		var pid, n int
		if _, err := fmt.Sscanf(filepath.Base(f), "porch-temporal-%d-%d.db", &pid, &n); err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.Remove(f)
		}
	}
}

// sqlConfig describes the SQLite store and returns a function that removes
// what the store leaves behind. With no file the store is a scratch file,
// removed at Stop: SQLite's in-memory mode keeps its rollback journal in
// 64 KiB chunks that the pure-Go allocator maps and unmaps on every write
// transaction, which made visibility writes cost about a third of the
// server's CPU (BenchmarkChain: 46 ms a step in memory, 36 ms on a tmpfs
// file in WAL mode). A new file gets its schema here.
func sqlConfig(dbFile string) (*config.SQL, func(), error) {
	c := &config.SQL{PluginName: sqliteplugin.PluginName}
	cleanup := func() {}
	scratch := dbFile == ""
	if scratch {
		dir := scratchDir()
		removeStaleScratch(dir)
		dbFile = filepath.Join(dir, fmt.Sprintf("porch-temporal-%d-%d.db", os.Getpid(), scratchDBs.Add(1)))
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(dbFile + suffix)
		}
		cleanup = func() {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				os.Remove(dbFile + suffix)
			}
		}
		// A scratch database dies with the server: no fsync at all.
		c.ConnectAttributes = map[string]string{"synchronous": "off"}
	} else {
		// WAL with synchronous=normal syncs at checkpoints rather than on
		// every commit and stays consistent across a crash.
		c.ConnectAttributes = map[string]string{"synchronous": "normal"}
	}
	abs, err := filepath.Abs(dbFile)
	if err != nil {
		return nil, nil, fmt.Errorf("database file %q: %w", dbFile, err)
	}
	c.DatabaseName = abs
	c.ConnectAttributes["mode"] = "rwc"
	c.ConnectAttributes["journal_mode"] = "wal"
	c.ConnectAttributes["busy_timeout"] = "10000"
	_, err = os.Stat(abs)
	switch {
	case err == nil:
		if err := keepPrivate(abs); err != nil {
			return nil, nil, fmt.Errorf("database file %q: %w", dbFile, err)
		}
		return c, cleanup, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("database file: %w", err)
	}
	if _, err := os.Stat(filepath.Dir(abs)); err != nil {
		return nil, nil, fmt.Errorf("database file %q: directory: %w", dbFile, err)
	}
	// Created empty with mode 0600 before SQLite opens it: SQLite gives
	// its -wal and -shm files the database's mode.
	if err := createPrivate(abs); err != nil {
		return nil, nil, fmt.Errorf("database file %q: %w", dbFile, err)
	}
	if err := sqliteschema.SetupSchema(c); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("database file %q: create schema: %w", dbFile, err)
	}
	if scratch {
		if err := dropVisibilityIndexes(abs); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("database file %q: %w", dbFile, err)
		}
	}
	return c, cleanup, nil
}

// privateMode is the mode of a database file and its -wal and -shm
// files: they hold every run's inputs, commands and outputs, readable by
// their user only.
const privateMode = 0o600

// createPrivate creates the empty file path with privateMode.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, privateMode)
	if err != nil {
		return err
	}
	return f.Close()
}

// keepPrivate gives an existing database file, and its -wal and -shm
// files where they exist, privateMode unless only their user may read
// them already: an earlier porch made them 0644.
func keepPrivate(path string) error {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		st, err := os.Stat(path + suffix)
		if errors.Is(err, fs.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(path+suffix, privateMode); err != nil {
			return fmt.Errorf("make it readable by its user only: %w", err)
		}
	}
	return nil
}

// dropVisibilityIndexes drops the secondary indexes of a scratch database's
// visibility table. Temporal's SQLite schema keeps 58 of them, one per
// search attribute slot, and every workflow start, upsert and close updates
// them all: in BenchmarkChain that was a third of the server's CPU. A
// scratch database lives for one run, so its visibility queries scan a few
// thousand rows at most and need no index; a kept database keeps them.
func dropVisibilityIndexes(file string) error {
	db, err := sql.Open("sqlite", file)
	if err != nil {
		return fmt.Errorf("open to drop visibility indexes: %w", err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL`)
	if err != nil {
		return fmt.Errorf("list visibility indexes: %w", err)
	}
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("list visibility indexes: %w", err)
		}
		names = append(names, name)
	}
	rows.Close()
	for _, name := range names {
		if _, err := db.Exec(`DROP INDEX "` + name + `"`); err != nil {
			return fmt.Errorf("drop visibility index %s: %w", name, err)
		}
	}
	return nil
}

// createNamespace adds the namespace, with its search attributes, straight to
// the store before the server starts; it does nothing if the namespace exists.
func createNamespace(store *config.SQL, opts Options) error {
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, opts.Namespace, false, opts.SearchAttributes)
	if err != nil {
		return fmt.Errorf("namespace %q: %w", opts.Namespace, err)
	}
	ns.Detail.Config.Retention = durationpb.New(defaultRetention)
	if err := sqliteschema.CreateNamespaces(store, ns); err != nil {
		return fmt.Errorf("namespace %q: %w", opts.Namespace, err)
	}
	return nil
}
