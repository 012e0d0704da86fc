// Command zkd runs a ZooKeeper-compatible server.
//
//	zkd                       serve on 127.0.0.1:2181 with data in ./zkd-data
//	zkd --config zoo.cfg      read an Apache ZooKeeper config file; flags override it
//	zkd tool COMMAND ...      offline tools over data files (zkd tool help)
//	zkd --config-keys         print every zoo.cfg key with its default (docs/configuration.md)
//	zkd --version             the build: version, commit, Go version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkd-io/zkd/internal/buildinfo"
	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/gctune"
	"github.com/zkd-io/zkd/internal/metrics"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/server"
)

// failpointsEnv arms storage failpoints (storage.Failpoints) in this process: the
// disk-fault nemesis and its tests make a server's disk fail this way.
const failpointsEnv = "ZKD_FAILPOINTS"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "zkd:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "tool" {
		return runTool(args[1:], os.Stdout, os.Stderr)
	}
	fset, f := newFlagSet()
	cfgPath, logLevel, pprofAddr, zooEnv := f.cfgPath, f.logLevel, f.pprofAddr, f.zooEnv
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *f.version {
		_, err := fmt.Fprintln(os.Stdout, buildinfo.Line("zkd"))
		return err
	}
	if *f.configKeys {
		_, err := fmt.Fprint(os.Stdout, config.Markdown())
		return err
	}
	if fset.NArg() == 1 && *cfgPath == "" && strings.HasSuffix(fset.Arg(0), ".cfg") {
		// zkServer.sh style: the config file as the only argument.
		*cfgPath = fset.Arg(0)
	} else if fset.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fset.Args())
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	if *pprofAddr != "" {
		// /debug/pprof has no authentication and can stall the process (a long CPU
		// profile, a heap dump of a large tree): loopback only.
		if !loopbackHostPort(*pprofAddr) {
			return fmt.Errorf("--pprof %s: only a loopback address (127.0.0.1:PORT, [::1]:PORT, localhost:PORT) is allowed", *pprofAddr)
		}
		ln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			return fmt.Errorf("--pprof: %w", err)
		}
		// Started before recovery, so start-up itself can be profiled.
		go func() { _ = http.Serve(ln, nil) }()
	}
	// The collector's headroom follows the live heap (unless GOGC is set): a large tree
	// does not double its memory, a small one is not collected every few megabytes.
	gctune.Govern(gctune.DefaultPolicy)
	if *zooEnv {
		if *cfgPath != "" {
			return errors.New("--zoo-env and --config exclude each other")
		}
		p, err := prepareZooEnv(os.Getenv)
		if err != nil {
			return fmt.Errorf("--zoo-env: %w", err)
		}
		*cfgPath = p
	}
	cfg := config.Defaults()
	if *cfgPath != "" {
		var err error
		if cfg, err = config.Load(*cfgPath); err != nil {
			return err
		}
		cfg.LogIgnored(logger)
	}
	if err := applyFlags(fset, f, cfg); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := clientPortFromServers(cfg); err != nil {
		return err
	}
	var id int64
	if len(cfg.Servers) > 1 || cfg.Distributed() {
		// Like ZooKeeper: more than one server.N line (or one, with standaloneEnabled=false)
		// means an ensemble, and dataDir/myid says which member this is.
		var err error
		if id, err = readMyID(cfg.DataDir); err != nil {
			return err
		}
	}
	sc := server.FromConfig(cfg, id, logger)
	if spec := os.Getenv(failpointsEnv); spec != "" {
		ffs, err := storage.NewFaultFS(storage.OSFS{}, spec)
		if err != nil {
			return err
		}
		logger.Warn("storage failpoints armed: for fault-injection tests only", "env", failpointsEnv, "spec", spec)
		sc.FS = ffs
	}
	if err := applySecurity(cfg, &sc, logger); err != nil {
		return err
	}
	if err := applyAdminTLS(cfg, &sc, logger); err != nil {
		return err
	}
	if *cfgPath != "" {
		// The AdminServer's initial_configuration answers the file as written.
		text, err := os.ReadFile(*cfgPath)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		sc.InitialConfig = string(text)
	}
	if id != 0 {
		if err := persistReconfig(cfg, *cfgPath, &sc, logger); err != nil {
			return err
		}
	}

	if cfg.Metrics.Prometheus() {
		// Started before recovery, as ZooKeeper starts its provider: a port in use stops
		// start-up at once, and the process metrics cover loading.
		sc.Metrics = metrics.New(metrics.Options{ExportJvmInfo: cfg.Metrics.ExportJvmInfo()})
		ep, err := sc.Metrics.Serve(cfg.Metrics.HTTPAddr(), logger)
		if err != nil {
			return err
		}
		defer ep.Close()
	}
	srv, err := server.New(sc)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		srv.Close()
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "grace", shutdownGrace)
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if serr := srv.Shutdown(sctx); serr != nil {
			if !errors.Is(serr, context.DeadlineExceeded) {
				return serr
			}
			// The stop is complete; only the wait for requests in flight was cut short.
			logger.Warn("requests still in flight at the end of the grace period were dropped", "grace", shutdownGrace)
		}
		return nil
	case err = <-srv.Fatal():
	}
	if cerr := srv.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return err
}

// applyFlags overrides the settings with the flags given on the command line.
func applyFlags(fset *flag.FlagSet, f *flagValues, cfg *config.Config) error {
	set := map[string]bool{}
	fset.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["port"] {
		cfg.ClientPort = *f.port
	}
	if set["addr"] {
		host, p, err := net.SplitHostPort(*f.addr)
		if err != nil {
			return fmt.Errorf("--addr: %w", err)
		}
		if cfg.ClientPort, err = strconv.Atoi(p); err != nil {
			return fmt.Errorf("--addr: bad port %q", p)
		}
		cfg.ClientPortAddress = host
	}
	if set["data-dir"] {
		cfg.SetDataDir(*f.dataDir)
	}
	if set["data-log-dir"] {
		cfg.DataLogDir = *f.dataLogDir
	}
	if set["tick-time"] {
		cfg.SetTickTime(*f.tick)
	}
	if set["extended-types"] {
		cfg.ExtendedTypesEnabled = *f.extended
	}
	if set["container-check-interval"] {
		cfg.ContainerCheckIntervalMs = int(f.containerCheck.Milliseconds())
	}
	return nil
}

// flagValues are the flags' values after parsing.
type flagValues struct {
	cfgPath, addr, dataDir, dataLogDir, logLevel, pprofAddr *string
	port, tick                                              *int
	extended, zooEnv, configKeys, version                   *bool
	containerCheck                                          *time.Duration
}

// newFlagSet defines zkd's flags. Their descriptions are config.Flags, which
// docs/configuration.md lists too.
func newFlagSet() (*flag.FlagSet, *flagValues) {
	fset := flag.NewFlagSet("zkd", flag.ContinueOnError)
	u := config.FlagUsage
	f := &flagValues{
		cfgPath:        fset.String("config", "", u("config")),
		addr:           fset.String("addr", "", u("addr")),
		port:           fset.Int("port", 0, u("port")),
		dataDir:        fset.String("data-dir", "", u("data-dir")),
		dataLogDir:     fset.String("data-log-dir", "", u("data-log-dir")),
		tick:           fset.Int("tick-time", 0, u("tick-time")),
		extended:       fset.Bool("extended-types", false, u("extended-types")),
		containerCheck: fset.Duration("container-check-interval", 0, u("container-check-interval")),
		logLevel:       fset.String("log-level", "info", u("log-level")),
		pprofAddr:      fset.String("pprof", "", u("pprof")),
		zooEnv:         fset.Bool("zoo-env", false, u("zoo-env")),
		configKeys:     fset.Bool("config-keys", false, u("config-keys")),
		version:        fset.Bool("version", false, u("version")),
	}
	fset.Usage = func() {
		out := fset.Output()
		fmt.Fprintf(out, "usage: zkd [flags] [zoo.cfg]\n       zkd tool COMMAND ...\n\nflags:\n")
		fset.PrintDefaults()
		fmt.Fprintf(out, "\nzoo.cfg keys, their defaults and descriptions: %s, or zkd --config-keys\n", config.DocsPath)
	}
	return fset, f
}

// shutdownGrace bounds a clean stop (SIGTERM, SIGINT): the wait for requests in flight and
// the final snapshot, which is skipped when it would not fit (the next start replays the
// log instead).
const shutdownGrace = 20 * time.Second

func readMyID(dataDir string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "myid"))
	if err != nil {
		return 0, fmt.Errorf("ensemble mode needs %s: %w", filepath.Join(dataDir, "myid"), err)
	}
	id, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || id <= 0 || id > 254 {
		return 0, fmt.Errorf("%s: %q is not a server id (1..254)", filepath.Join(dataDir, "myid"), strings.TrimSpace(string(b)))
	}
	return id, nil
}

// prepareZooEnv does what the official zookeeper image's docker-entrypoint.sh does before
// it starts the server: it writes $ZOO_CONF_DIR/zoo.cfg from the ZOO_* variables unless the
// file exists, and $ZOO_DATA_DIR/myid from ZOO_MY_ID (default 1) unless that exists. It
// returns the configuration file's path.
func prepareZooEnv(getenv func(string) string) (string, error) {
	confDir := config.ZooEnv(getenv, "ZOO_CONF_DIR")
	path := filepath.Join(confDir, "zoo.cfg")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(confDir, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(path, []byte(config.ZooEnvConfig(getenv)), 0o644); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	dataDir := config.ZooEnv(getenv, "ZOO_DATA_DIR")
	myid := filepath.Join(dataDir, "myid")
	if _, err := os.Stat(myid); errors.Is(err, fs.ErrNotExist) {
		id := getenv("ZOO_MY_ID")
		if id == "" {
			id = "1"
		}
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(myid, []byte(id+"\n"), 0o644); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	return path, nil
}

// clientPortFromServers takes the client port from this server's server.N line (its
// ";[host:]port" part) when clientPort is not set, as ZooKeeper does since 3.5: the only
// line for a standalone server, the line of myid in an ensemble.
func clientPortFromServers(cfg *config.Config) error {
	if cfg.ClientPort != 0 || len(cfg.Servers) == 0 {
		return nil
	}
	var spec config.Member
	if len(cfg.Servers) == 1 {
		for _, sp := range cfg.Servers {
			spec = sp
		}
	} else {
		id, err := readMyID(cfg.DataDir)
		if err != nil {
			return err
		}
		spec = cfg.Servers[int(id)]
	}
	if spec.ClientPort == 0 {
		return fmt.Errorf("clientPort is not set and the server line of this server has no client port")
	}
	cfg.ClientPort = spec.ClientPort
	if spec.ClientHost != "" && cfg.ClientPortAddress == "" {
		cfg.ClientPortAddress = spec.ClientHost
	}
	return nil
}

// loopbackHostPort reports whether addr names a loopback host (an empty host would mean
// every interface).
func loopbackHostPort(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
