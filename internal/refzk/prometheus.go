package refzk

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/needs"
)

// ZooKeeper's Prometheus metrics provider is not in Debian (nor is the Prometheus Java client
// it needs) and Maven Central may be out of reach, so PrometheusJar compiles both from their
// sources, taken from git clones of their repositories at the releases Debian's ZooKeeper
// was built with: ZooKeeper 3.8.0's provider and client_java 0.9.0 (simpleclient, its text
// format, the hotspot exports and the servlet). Both are Apache License 2.0 projects, which
// allows building and running them here; the jar stays in a local cache and is not
// redistributed.
const (
	// EnvZooKeeperGit names a clone (bare or not) of github.com/apache/zookeeper.
	EnvZooKeeperGit = "ZKD_ZOOKEEPER_GIT"
	// EnvPrometheusJavaGit names a clone of github.com/prometheus/client_java.
	EnvPrometheusJavaGit = "ZKD_PROMETHEUS_JAVA_GIT"

	// PrometheusProviderClass is the zoo.cfg metricsProvider.className of the provider.
	PrometheusProviderClass = "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"

	zkProviderTag  = "release-3.8.0-1" // Debian's zookeeper 3.8.0
	promClientTag  = "parent-0.9.0"    // ZooKeeper 3.8's prometheus.version
	zkProviderPath = "zookeeper-metrics-providers/zookeeper-prometheus-metrics/src/main/java"

	// buildRecipe changes when the way the jar is built changes, so old cache entries are
	// not reused.
	buildRecipe = "1"
)

var defaultGitDirs = map[string]string{
	EnvZooKeeperGit:      "/work/.mirror/apache+zookeeper/repo",
	EnvPrometheusJavaGit: "/work/.mirror/prometheus+client_java/repo",
}

// promClientPaths are the client_java modules the provider needs, transitively: it uses
// CollectorRegistry and Summary (simpleclient), MetricsServlet (simpleclient_servlet, which
// writes with simpleclient_common's TextFormat) and DefaultExports (simpleclient_hotspot).
var promClientPaths = []string{
	"simpleclient/src/main/java", "simpleclient_common/src/main/java",
	"simpleclient_hotspot/src/main/java", "simpleclient_servlet/src/main/java",
}

// PrometheusJars are the Debian jars, beside debianJars, that the provider needs to compile
// and run: Jetty 9 and the servlet API (libjetty9-java, libservlet-api-java).
var PrometheusJars = []string{
	"jetty9-server.jar", "jetty9-servlet.jar", "jetty9-http.jar", "jetty9-io.jar",
	"jetty9-util.jar", "jetty9-security.jar", "servlet-api.jar",
}

func requirePrometheusJars(t testing.TB) {
	t.Helper()
	for _, jar := range PrometheusJars {
		if _, err := os.Stat(filepath.Join(javaDir, jar)); err != nil {
			needs.Missing(t, "Jetty 9 for ZooKeeper's Prometheus provider ("+jar+")", "libjetty9-java", err.Error())
		}
	}
}

// gitDir returns the clone named by env (or its default), ending the test through
// internal/needs when there is none; the message says how to make one.
func gitDir(t testing.TB, env, url string) string {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		dir = defaultGitDirs[env]
	}
	if _, err := os.Stat(dir); err != nil {
		needs.Missing(t, "a git clone of "+url+" at $"+env, "git && git clone --bare "+url+" $"+env, err.Error())
	}
	return dir
}

// jarBuilt remembers the jars this process found or built, for its later tests.
var (
	jarMu    sync.Mutex
	jarBuilt = map[string]string{} // cache key -> jar path
)

// PrometheusJar returns the path of a jar holding ZooKeeper 3.8.0's PrometheusMetricsProvider
// and the Prometheus Java client 0.9.0, compiled with javac from git clones of their sources
// (EnvZooKeeperGit, EnvPrometheusJavaGit) against Debian's ZooKeeper and Jetty jars. The jar
// is kept in the user's cache directory under a key made of the two source commits and the
// javac version, so it is built once per machine (per CI run). It ends the test through
// internal/needs when javac, git, a clone or a jar is missing, and fails it when the build
// fails.
func PrometheusJar(t testing.TB) string {
	t.Helper()
	Require(t)
	requirePrometheusJars(t)
	javac := needs.Command(t, "javac", "default-jdk-headless")
	needs.Command(t, "git", "git")
	zkGit := gitDir(t, EnvZooKeeperGit, "https://github.com/apache/zookeeper")
	promGit := gitDir(t, EnvPrometheusJavaGit, "https://github.com/prometheus/client_java")

	zkCommit, err := gitCommit(zkGit, zkProviderTag)
	if err != nil {
		t.Fatalf("refzk: %v", err)
	}
	promCommit, err := gitCommit(promGit, promClientTag)
	if err != nil {
		t.Fatalf("refzk: %v", err)
	}
	version, err := exec.Command(javac, "-version").CombinedOutput()
	if err != nil {
		t.Fatalf("refzk: javac -version: %v: %s", err, version)
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{buildRecipe, zkCommit, promCommit, strings.TrimSpace(string(version))}, "\n")))
	key := hex.EncodeToString(sum[:8])

	jarMu.Lock()
	defer jarMu.Unlock()
	if path, ok := jarBuilt[key]; ok {
		return path
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir() // no $HOME (some CI users): still shared by the run's packages
	}
	dir := filepath.Join(cache, "zkd", "refzk-prometheus")
	path := filepath.Join(dir, "zookeeper-prometheus-"+key+".jar")
	if _, err := os.Stat(path); err == nil {
		jarBuilt[key] = path
		return path
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("refzk: %v", err)
	}
	start := time.Now()
	if err := buildPrometheusJar(javac, dir, path, []gitSource{
		{zkGit, zkCommit, []string{zkProviderPath}},
		{promGit, promCommit, promClientPaths},
	}); err != nil {
		t.Fatalf("refzk: building ZooKeeper's Prometheus provider: %v", err)
	}
	t.Logf("refzk: built %s in %v", path, time.Since(start).Round(time.Millisecond))
	jarBuilt[key] = path
	return path
}

type gitSource struct {
	dir, commit string
	paths       []string
}

func gitCommit(dir, tag string) (string, error) {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--verify", tag+"^{commit}").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git -C %s rev-parse %s: %w: %s", dir, tag, err, bytes.TrimSpace(out))
	}
	return strings.TrimSpace(string(out)), nil
}

// buildPrometheusJar extracts the sources, compiles them and writes the jar to path. It
// works in a temporary directory beside path and renames the jar into place last, so
// packages building at the same time never see half a jar.
func buildPrometheusJar(javac, dir, path string, sources []gitSource) error {
	work, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	src, classes := filepath.Join(work, "src"), filepath.Join(work, "classes")
	for _, s := range sources {
		if err := gitExtract(s, src); err != nil {
			return err
		}
	}
	var files []string
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".java") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return errors.New("no Java sources extracted")
	}
	slices.Sort(files)
	argFile := filepath.Join(work, "sources.txt")
	if err := os.WriteFile(argFile, []byte(strings.Join(files, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	cp := []string{}
	for _, jar := range append(append([]string(nil), debianJars...), PrometheusJars...) {
		cp = append(cp, filepath.Join(javaDir, jar))
	}
	// Java 8 bytecode, as ZooKeeper 3.8 and client_java 0.9.0 are built; -nowarn because
	// their sources are not ours to fix.
	cmd := exec.Command(javac, "-nowarn", "-encoding", "UTF-8", "--release", "8", "-d", classes,
		"-cp", strings.Join(cp, string(os.PathListSeparator)), "@"+argFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("javac: %w\n%s", err, out)
	}
	tmpJar := filepath.Join(work, "out.jar")
	if err := writeJar(tmpJar, classes); err != nil {
		return err
	}
	return os.Rename(tmpJar, path)
}

// gitExtract writes s's paths at s.commit under dst, reading `git archive`'s tar stream.
func gitExtract(s gitSource, dst string) error {
	cmd := exec.Command("git", append([]string{"-C", s.dir, "archive", "--format=tar", s.commit}, s.paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	tr := tar.NewReader(out)
	var extractErr error
	for extractErr == nil {
		var h *tar.Header
		h, extractErr = tr.Next()
		if extractErr != nil {
			break
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := filepath.Join(dst, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, dst+string(filepath.Separator)) {
			extractErr = fmt.Errorf("git archive: entry %q outside the tree", h.Name)
			break
		}
		extractErr = writeFileFrom(name, tr)
	}
	if errors.Is(extractErr, io.EOF) {
		extractErr = nil
	}
	if extractErr != nil {
		io.Copy(io.Discard, out) // let git finish writing before Wait
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git -C %s archive %s: %w: %s", s.dir, s.commit, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return extractErr
}

func writeFileFrom(name string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeJar zips the class tree; a jar needs no manifest to sit on a class path.
func writeJar(path, classes string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(classes, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(classes, p)
		if err != nil {
			return err
		}
		w, err := zw.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
