package packaging

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/zkd-io/zkd/internal/config"
)

// The parts of Kubernetes objects packaging/kubernetes/zkd.yaml uses that the test checks.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		// Service
		ClusterIP                string           `yaml:"clusterIP"`
		PublishNotReadyAddresses bool             `yaml:"publishNotReadyAddresses"`
		Selector                 yaml.Node        `yaml:"selector"` // a Service's map, or {matchLabels: ...}
		Ports                    []k8sServicePort `yaml:"ports"`
		// StatefulSet
		ServiceName string `yaml:"serviceName"`
		Replicas    *int   `yaml:"replicas"`
		Ordinals    struct {
			Start int `yaml:"start"`
		} `yaml:"ordinals"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				SecurityContext struct {
					RunAsUser  *int `yaml:"runAsUser"`
					RunAsGroup *int `yaml:"runAsGroup"`
					FSGroup    *int `yaml:"fsGroup"`
				} `yaml:"securityContext"`
				InitContainers []k8sContainer `yaml:"initContainers"`
				Containers     []k8sContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
		VolumeClaimTemplates []k8sClaim `yaml:"volumeClaimTemplates"`
	} `yaml:"spec"`
}

type k8sClaim struct {
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
}

type k8sServicePort struct {
	Name       string `yaml:"name"`
	Port       int    `yaml:"port"`
	TargetPort string `yaml:"targetPort"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	StartupProbe   *k8sProbe `yaml:"startupProbe"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type k8sProbe struct {
	Exec *struct {
		Command []string `yaml:"command"`
	} `yaml:"exec"`
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
	TCPSocket *struct {
		Port string `yaml:"port"`
	} `yaml:"tcpSocket"`
}

// honouredZooEnv is what zkd --zoo-env reads (cmd/zkd's prepareZooEnv and
// config.ZooEnvConfig): the official image's variables. TestKubernetesExample checks that
// each but ZOO_MY_ID and ZOO_CONF_DIR (which choose files, not zoo.cfg's text) changes the
// zoo.cfg zkd writes, so the list cannot name a variable zkd ignores.
var honouredZooEnv = []string{
	"ZOO_MY_ID", "ZOO_SERVERS", "ZOO_CONF_DIR", "ZOO_DATA_DIR", "ZOO_DATA_LOG_DIR",
	"ZOO_TICK_TIME", "ZOO_INIT_LIMIT", "ZOO_SYNC_LIMIT", "ZOO_MAX_CLIENT_CNXNS",
	"ZOO_STANDALONE_ENABLED", "ZOO_ADMINSERVER_ENABLED", "ZOO_AUTOPURGE_PURGEINTERVAL",
	"ZOO_AUTOPURGE_SNAPRETAINCOUNT", "ZOO_4LW_COMMANDS_WHITELIST", "ZOO_CFG_EXTRA",
}

func TestHonouredZooEnv(t *testing.T) {
	base := config.ZooEnvConfig(func(string) string { return "" })
	for _, name := range honouredZooEnv {
		if name == "ZOO_MY_ID" || name == "ZOO_CONF_DIR" {
			continue
		}
		v := "7"
		switch name {
		case "ZOO_SERVERS":
			v = "server.7=h:1:2;3"
		case "ZOO_CFG_EXTRA":
			v = "snapCount=7"
		case "ZOO_DATA_DIR", "ZOO_DATA_LOG_DIR":
			v = "/seven"
		}
		if got := config.ZooEnvConfig(func(k string) string {
			if k == name {
				return v
			}
			return ""
		}); got == base {
			t.Errorf("%s=%s does not change the zoo.cfg zkd --zoo-env writes", name, v)
		}
	}
}

// TestKubernetesExample reads packaging/kubernetes/zkd.yaml and checks it against the
// image and zkd --zoo-env: every variable it sets is one zkd honours, ZOO_MY_ID comes from
// the pod's ordinal and each pod's zoo.cfg (rendered as zkd renders it) names that pod's
// stable DNS name on the container's ports; the ports are the image's; the probes need no
// shell (the image is FROM scratch); the volumes are the image's, and the pods run as its
// user. No cluster is available to apply it.
func TestKubernetesExample(t *testing.T) {
	f, err := os.Open("kubernetes/zkd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	byKind := map[string][]*k8sObject{}
	for {
		var o k8sObject
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		byKind[o.Kind] = append(byKind[o.Kind], &o)
	}
	img := parseContainerfile(t, "Dockerfile")
	uid, _ := strconv.Atoi(strings.Split(img.user, ":")[0])

	if len(byKind["StatefulSet"]) != 1 {
		t.Fatalf("%d StatefulSets, want 1", len(byKind["StatefulSet"]))
	}
	sts := byKind["StatefulSet"][0]
	namespace := sts.Metadata.Namespace
	if namespace == "" {
		namespace = "default"
	}
	spec := sts.Spec
	pod := spec.Template.Spec
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("%d containers and %d init containers, want the zkd container alone", len(pod.Containers), len(pod.InitContainers))
	}
	c := pod.Containers[0]
	if len(c.Command) != 0 || len(c.Args) != 0 {
		t.Errorf("command %q args %q: the image's entrypoint (zkd --zoo-env) must run unchanged", c.Command, c.Args)
	}
	sc := pod.SecurityContext
	for what, v := range map[string]*int{"runAsUser": sc.RunAsUser, "runAsGroup": sc.RunAsGroup, "fsGroup": sc.FSGroup} {
		if v == nil || *v != uid {
			t.Errorf("securityContext.%s %v, want the image's user %d", what, v, uid)
		}
	}

	// Ports: the image's, by name.
	cport := map[string]int{}
	for _, p := range c.Ports {
		cport[p.Name] = p.ContainerPort
		if !slices.Contains(img.ports, strconv.Itoa(p.ContainerPort)) {
			t.Errorf("containerPort %s=%d is not one the image exposes (%v)", p.Name, p.ContainerPort, img.ports)
		}
	}
	for _, n := range []string{"client", "quorum", "election", "admin"} {
		if cport[n] == 0 {
			t.Errorf("no containerPort named %s", n)
		}
	}
	port := func(where, p string) int {
		t.Helper()
		if n, err := strconv.Atoi(p); err == nil {
			return n
		}
		if cport[p] == 0 {
			t.Errorf("%s: port %q names no container port", where, p)
		}
		return cport[p]
	}

	// The StatefulSet's and the disruption budget's selectors match the pods.
	for _, o := range append(byKind["PodDisruptionBudget"], sts) {
		var sel struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		}
		if err := o.Spec.Selector.Decode(&sel); err != nil || len(sel.MatchLabels) == 0 {
			t.Errorf("%s %s: no selector.matchLabels (%v)", o.Kind, o.Metadata.Name, err)
		}
		for k, v := range sel.MatchLabels {
			if spec.Template.Metadata.Labels[k] != v {
				t.Errorf("%s %s selects %s=%s, which the pods do not carry", o.Kind, o.Metadata.Name, k, v)
			}
		}
	}

	// Services: a headless one that the StatefulSet names, and the client one.
	var headless *k8sObject
	for _, s := range byKind["Service"] {
		var sel map[string]string
		if err := s.Spec.Selector.Decode(&sel); err != nil {
			t.Fatal(err)
		}
		for k, v := range sel {
			if spec.Template.Metadata.Labels[k] != v {
				t.Errorf("service %s selects %s=%s, which the pods do not carry", s.Metadata.Name, k, v)
			}
		}
		for _, p := range s.Spec.Ports {
			if got := port("service "+s.Metadata.Name, p.TargetPort); got != p.Port {
				t.Errorf("service %s: port %d goes to container port %d", s.Metadata.Name, p.Port, got)
			}
		}
		if s.Metadata.Name == spec.ServiceName {
			headless = s
		}
	}
	if headless == nil || headless.Spec.ClusterIP != "None" || !headless.Spec.PublishNotReadyAddresses {
		t.Fatalf("serviceName %q: want a headless service (clusterIP None) publishing not-ready addresses", spec.ServiceName)
	}

	// The environment: variables zkd honours, ZOO_MY_ID from the ordinal.
	env := map[string]string{}
	for _, e := range c.Env {
		if !slices.Contains(honouredZooEnv, e.Name) {
			t.Errorf("env %s is not a variable zkd --zoo-env honours", e.Name)
		}
		if e.Name == "ZOO_MY_ID" {
			if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
				e.ValueFrom.FieldRef.FieldPath != "metadata.labels['apps.kubernetes.io/pod-index']" {
				t.Errorf("ZOO_MY_ID must come from the pod-index label (the ordinal)")
			}
			continue
		}
		if e.ValueFrom != nil {
			t.Errorf("env %s from %+v: only ZOO_MY_ID is expected to come from the pod", e.Name, e.ValueFrom)
		}
		env[e.Name] = e.Value
	}
	if spec.Replicas == nil || *spec.Replicas < 3 || *spec.Replicas%2 == 0 {
		t.Fatalf("replicas %v, want an odd number from 3", spec.Replicas)
	}
	if spec.Ordinals.Start < 1 {
		t.Errorf("ordinals.start %d: myid is the ordinal and must be at least 1", spec.Ordinals.Start)
	}
	for ord := spec.Ordinals.Start; ord < spec.Ordinals.Start+*spec.Replicas; ord++ {
		podEnv := func(k string) string {
			if k == "ZOO_MY_ID" {
				return strconv.Itoa(ord)
			}
			return env[k]
		}
		text := config.ZooEnvConfig(podEnv)
		cfg, err := config.Parse(strings.NewReader(text))
		if err != nil {
			t.Fatalf("pod %d's zoo.cfg: %v\n%s", ord, err, text)
		}
		if len(cfg.Servers) != *spec.Replicas {
			t.Errorf("pod %d: %d servers, want one per replica (%d)", ord, len(cfg.Servers), *spec.Replicas)
		}
		me, ok := cfg.Servers[ord]
		if !ok {
			t.Errorf("pod %d: no server.%d line in ZOO_SERVERS", ord, ord)
			continue
		}
		wantHost := fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local", sts.Metadata.Name, ord, spec.ServiceName, namespace)
		if me.Host != wantHost || me.QuorumPort != cport["quorum"] || me.ElectionPort != cport["election"] || me.ClientPort != cport["client"] {
			t.Errorf("pod %d: server.%d=%s, want %s:%d:%d;%d", ord, ord, me, wantHost, cport["quorum"], cport["election"], cport["client"])
		}
		adminPort := cfg.AdminServerPort
		if adminPort == 0 {
			adminPort = 8080
		}
		if !cfg.AdminEnableServer || cfg.AdminServerAddress != "0.0.0.0" || adminPort != cport["admin"] {
			t.Errorf("pod %d: AdminServer enabled %v on %s:%d, want on 0.0.0.0:%d (the probe's port)", ord, cfg.AdminEnableServer, cfg.AdminServerAddress, adminPort, cport["admin"])
		}
	}

	// Probes: the image has no shell, nc or curl; the kubelet's own HTTP and TCP checks,
	// or zkd itself, are all there is.
	probes := 0
	for what, p := range map[string]*k8sProbe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
		if p == nil {
			continue
		}
		probes++
		switch {
		case p.Exec != nil:
			if len(p.Exec.Command) == 0 || p.Exec.Command[0] != img.entrypoint[0] {
				t.Errorf("%s probe runs %q: the image holds nothing but %s", what, p.Exec.Command, img.entrypoint[0])
			}
		case p.HTTPGet != nil:
			if got := port(what+" probe", p.HTTPGet.Port); got != cport["admin"] || p.HTTPGet.Path != "/commands/ruok" {
				t.Errorf("%s probe GETs %s on port %d, want /commands/ruok on the AdminServer (%d)", what, p.HTTPGet.Path, got, cport["admin"])
			}
		case p.TCPSocket != nil:
			port(what+" probe", p.TCPSocket.Port)
		default:
			t.Errorf("%s probe has no exec, httpGet or tcpSocket", what)
		}
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil {
		t.Errorf("the readiness probe must be ruok (httpGet /commands/ruok)")
	}

	// Volumes: the image's, each from a claim template.
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.MountPath)
		if !slices.ContainsFunc(spec.VolumeClaimTemplates, func(v k8sClaim) bool { return v.Metadata.Name == m.Name }) {
			t.Errorf("volume %s (%s) has no volumeClaimTemplate", m.Name, m.MountPath)
		}
	}
	if !slices.Equal(mounts, img.volumes) {
		t.Errorf("mounts %v, want the image's volumes %v", mounts, img.volumes)
	}
}
