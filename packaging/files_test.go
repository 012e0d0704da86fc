// Package packaging holds the tests of the files in packaging/: the container images
// (Dockerfile and Containerfile.local), built and run with podman, and the Kubernetes
// example. It has no code of its own.
package packaging

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// image is what a Containerfile's runtime stage says about the image it builds.
type image struct {
	from       string
	copies     map[string]string // destination -> --chown ("" when none)
	volumes    []string
	ports      []string
	user       string
	entrypoint []string
}

// parseContainerfile reads the last stage of a Dockerfile: FROM, COPY (destination and
// --chown), VOLUME (JSON or words), EXPOSE, USER and ENTRYPOINT (JSON). Continuation
// lines are joined; anything else in the stage fails the test, so that a new instruction
// is looked at here rather than ignored.
func parseContainerfile(t *testing.T, path string) image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	cont := ""
	for s.Scan() {
		l := strings.TrimSpace(s.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cont += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, cont+l)
		cont = ""
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	var img image
	for _, l := range lines {
		inst, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(inst) {
		case "FROM":
			img = image{from: strings.Fields(rest)[0], copies: map[string]string{}}
		case "COPY":
			chown := ""
			var args []string
			for _, a := range strings.Fields(rest) {
				switch {
				case strings.HasPrefix(a, "--chown="):
					chown = strings.TrimPrefix(a, "--chown=")
				case strings.HasPrefix(a, "--"):
				default:
					args = append(args, a)
				}
			}
			img.copies[args[len(args)-1]] = chown
		case "VOLUME":
			img.volumes = jsonOrWords(t, path, rest)
		case "EXPOSE":
			img.ports = append(img.ports, strings.Fields(rest)...)
		case "USER":
			img.user = rest
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &img.entrypoint); err != nil {
				t.Fatalf("%s: ENTRYPOINT is not exec form: %v", path, err)
			}
		case "WORKDIR", "RUN":
			if img.from == "" || strings.Contains(img.from, "golang") {
				continue // the build stage
			}
			t.Fatalf("%s: %s in the runtime stage: the other Containerfile cannot follow it", path, inst)
		default:
			t.Fatalf("%s: instruction %q not checked by this test", path, inst)
		}
	}
	return img
}

func jsonOrWords(t *testing.T, path, s string) []string {
	t.Helper()
	if strings.HasPrefix(s, "[") {
		var v []string
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%s: %q: %v", path, s, err)
		}
		return v
	}
	return strings.Fields(s)
}

// TestContainerfilesAgree checks that packaging/Containerfile.local builds the runtime
// image packaging/Dockerfile builds: the same files in the same places with the same
// owners, user, volumes, ports and entrypoint. Only the base differs (scratch, and a /tmp
// that distroless already has).
func TestContainerfilesAgree(t *testing.T) {
	dock := parseContainerfile(t, "Dockerfile")
	local := parseContainerfile(t, "Containerfile.local")
	if dock.from != "gcr.io/distroless/static-debian12:nonroot" || local.from != "scratch" {
		t.Errorf("bases: Dockerfile %q, Containerfile.local %q", dock.from, local.from)
	}
	// Podman refuses short names: every base of the Dockerfile is fully qualified.
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if f := strings.Fields(l); len(f) > 1 && strings.EqualFold(f[0], "FROM") {
			if host, _, ok := strings.Cut(f[1], "/"); !ok || !strings.Contains(host, ".") {
				t.Errorf("Dockerfile: FROM %s is not a fully qualified image name", f[1])
			}
		}
	}
	localCopies := maps.Clone(local.copies)
	if localCopies["/tmp"] != "" {
		t.Errorf("Containerfile.local: /tmp chowned to %q, want root's (distroless's /tmp)", localCopies["/tmp"])
	}
	delete(localCopies, "/tmp")
	want := map[string]string{
		"/usr/local/bin/zkd": "",
		"/conf":              "65532:65532",
		"/data":              "65532:65532",
		"/datalog":           "65532:65532",
	}
	if !reflect.DeepEqual(dock.copies, want) {
		t.Errorf("Dockerfile copies %v, want %v", dock.copies, want)
	}
	if !reflect.DeepEqual(localCopies, dock.copies) {
		t.Errorf("Containerfile.local copies %v, Dockerfile %v", localCopies, dock.copies)
	}
	for _, c := range []struct {
		what        string
		dock, local any
	}{
		{"VOLUME", dock.volumes, local.volumes},
		{"EXPOSE", dock.ports, local.ports},
		{"USER", dock.user, local.user},
		{"ENTRYPOINT", dock.entrypoint, local.entrypoint},
	} {
		if !reflect.DeepEqual(c.dock, c.local) {
			t.Errorf("%s: Dockerfile %v, Containerfile.local %v", c.what, c.dock, c.local)
		}
	}
	if !slices.Equal(dock.volumes, []string{"/data", "/datalog"}) || dock.user != "65532:65532" ||
		!slices.Equal(dock.entrypoint, []string{"/usr/local/bin/zkd", "--zoo-env"}) ||
		!slices.Equal(dock.ports, []string{"2181", "2888", "3888", "8080", "7000"}) {
		t.Errorf("Dockerfile: volumes %v, user %q, entrypoint %v, ports %v", dock.volumes, dock.user, dock.entrypoint, dock.ports)
	}
}
