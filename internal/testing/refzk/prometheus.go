package refzk

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/needs"
)

// ZooKeeper's Prometheus metrics provider is not in Debian (nor is the Prometheus Java client
// it needs) and Maven Central may be out of reach, so PrometheusJar compiles both from their
// sources, vendored in third_party/zookeeper-prometheus (its README says from which commits):
// ZooKeeper 3.8.0's provider and client_java 0.9.0 (simpleclient, its text format, the
// hotspot exports and the servlet: what the provider needs, transitively). Both are Apache
// License 2.0 projects; the jar stays in a local cache.
const (
	// PrometheusProviderClass is the zoo.cfg metricsProvider.className of the provider.
	PrometheusProviderClass = "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"

	// buildRecipe changes when the way the jar is built changes, so old cache entries are
	// not reused.
	buildRecipe = "2"
)

// prometheusSources is the vendored source tree, found from this file so that it is right
// wherever the repository is checked out.
func prometheusSources() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return filepath.Join("third_party", "zookeeper-prometheus")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "third_party", "zookeeper-prometheus")
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

// jarBuilt remembers the jars this process found or built, for its later tests.
var (
	jarMu    sync.Mutex
	jarBuilt = map[string]string{} // cache key -> jar path
)

// PrometheusJar returns the path of a jar holding ZooKeeper 3.8.0's PrometheusMetricsProvider
// and the Prometheus Java client 0.9.0, compiled with javac from their vendored sources
// against Debian's ZooKeeper and Jetty jars. The jar is kept in the user's cache directory
// under a key made of the sources' digest and the javac version, so it is built once per
// machine (per CI run). It ends the test through internal/needs when javac or a jar is
// missing, and fails it when the build fails.
func PrometheusJar(t testing.TB) string {
	t.Helper()
	Require(t)
	requirePrometheusJars(t)
	javac := needs.Command(t, "javac", "default-jdk-headless")
	src := prometheusSources()
	files, digest, err := javaSources(src)
	if err != nil {
		t.Fatalf("refzk: the vendored Prometheus provider sources: %v", err)
	}
	version, err := exec.Command(javac, "-version").CombinedOutput()
	if err != nil {
		t.Fatalf("refzk: javac -version: %v: %s", err, version)
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{buildRecipe, digest, strings.TrimSpace(string(version))}, "\n")))
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
	if err := buildPrometheusJar(javac, dir, path, files); err != nil {
		t.Fatalf("refzk: building ZooKeeper's Prometheus provider: %v", err)
	}
	t.Logf("refzk: built %s in %v", path, time.Since(start).Round(time.Millisecond))
	jarBuilt[key] = path
	return path
}

// javaSources lists the .java files under dir, sorted, with a digest of their names and
// contents.
func javaSources(dir string) (files []string, digest string, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".java") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if len(files) == 0 {
		return nil, "", errors.New("no Java sources in " + dir)
	}
	slices.Sort(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, "", err
		}
		rel, _ := filepath.Rel(dir, f)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(b))
		h.Write(b)
	}
	return files, hex.EncodeToString(h.Sum(nil)), nil
}

// buildPrometheusJar compiles the sources and writes the jar to path. It
// works in a temporary directory beside path and renames the jar into place last, so
// packages building at the same time never see half a jar.
func buildPrometheusJar(javac, dir, path string, files []string) error {
	work, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	classes := filepath.Join(work, "classes")
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
