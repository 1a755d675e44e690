package deploy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"github.com/tidegate/tidegate/session/proxy"
	"github.com/tidegate/tidegate/session/proxy/config"
)

// k8sObject is the part of a Kubernetes object the tests read: enough of a
// ConfigMap, Deployment, Service, PodDisruptionBudget and Kustomization.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data      map[string]string `yaml:"data"`      // ConfigMap
	Resources []string          `yaml:"resources"` // Kustomization
	Spec      struct {
		Replicas *int          `yaml:"replicas"`
		Selector labelSelector `yaml:"selector"` // Deployment and PodDisruptionBudget: matchLabels; Service: the labels
		Template struct {
			Metadata struct {
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		// Service
		Type                  string `yaml:"type"`
		ExternalTrafficPolicy string `yaml:"externalTrafficPolicy"`
		Ports                 []struct {
			Name       string    `yaml:"name"`
			Port       int       `yaml:"port"`
			TargetPort yaml.Node `yaml:"targetPort"`
			Protocol   string    `yaml:"protocol"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// labelSelector is a Deployment's or PDB's {matchLabels: ...}, or a
// Service's plain label map.
type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
	Plain       map[string]string `yaml:"-"`
}

// UnmarshalYAML implements yaml.Unmarshaler for both forms.
func (s *labelSelector) UnmarshalYAML(n *yaml.Node) error {
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		return err
	}
	if _, ok := m["matchLabels"]; ok {
		type plain labelSelector
		return n.Decode((*plain)(s))
	}
	return n.Decode(&s.Plain)
}

type podSpec struct {
	TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		EmptyDir *struct{} `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type container struct {
	Name           string          `yaml:"name"`
	Image          string          `yaml:"image"`
	Command        []string        `yaml:"command"`
	Args           []string        `yaml:"args"`
	Ports          []containerPort `yaml:"ports"`
	ReadinessProbe *probe          `yaml:"readinessProbe"`
	LivenessProbe  *probe          `yaml:"livenessProbe"`
	Lifecycle      struct {
		PreStop struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
			Exec *struct {
				Command []string `yaml:"command"`
			} `yaml:"exec"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []volumeMount `yaml:"volumeMounts"`
}

type containerPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
}

type probe struct {
	HTTPGet *struct {
		Path string    `yaml:"path"`
		Port yaml.Node `yaml:"port"`
	} `yaml:"httpGet"`
}

// k8sManifests decodes every YAML document of every file in kubernetes/,
// keyed by file.
func k8sManifests(t *testing.T) map[string][]k8sObject {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no kubernetes/*.yaml (%v)", err)
	}
	out := map[string][]k8sObject{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for i := 0; ; i++ {
			var o k8sObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			if o.Kind == "" || o.APIVersion == "" {
				t.Errorf("%s document %d: no kind or apiVersion", f, i)
			}
			out[filepath.Base(f)] = append(out[filepath.Base(f)], o)
		}
	}
	return out
}

// portOf resolves a probe's or a Service's port, a number or a container
// port's name, to a number (0 if it names no port of c).
func portOf(n yaml.Node, c container) int {
	if p, err := strconv.Atoi(n.Value); err == nil {
		return p
	}
	for _, p := range c.Ports {
		if p.Name == n.Value {
			return p.ContainerPort
		}
	}
	return 0
}

// flagValue is the value of --name (or -name) in args: "--name v" or
// "--name=v".
func flagValue(args []string, names ...string) string {
	for i, a := range args {
		for _, n := range names {
			if a == n && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v
			}
		}
	}
	return ""
}

// TestKubernetesManifests: the manifests are one ConfigMap, Deployment,
// Service and PodDisruptionBudget plus the Kustomization listing them; the
// proxy's configuration in the ConfigMap is valid (config.Parse and
// proxy.New, as at start) and is the file the container reads; the probes
// ask /readyz and /healthz on the metrics port, which listens on every
// address of the pod; the grace period covers the preStop sleep, the drain
// timeout of that configuration and the stop; the Service sends 25565 to
// the port the proxy listens on; and the pod is locked down with resources
// set and event loops that fit its CPU limit.
func TestKubernetesManifests(t *testing.T) {
	byFile := k8sManifests(t)
	kinds := map[string]k8sObject{}
	for file, objs := range byFile {
		for _, o := range objs {
			if _, dup := kinds[o.Kind]; dup {
				t.Errorf("%s: a second %s", file, o.Kind)
			}
			kinds[o.Kind] = o
			if o.Kind != "Kustomization" && (o.Metadata.Name == "" || o.Metadata.Labels["app.kubernetes.io/name"] != "tidegate") {
				t.Errorf("%s: %s %q: want a name and the label app.kubernetes.io/name: tidegate", file, o.Kind, o.Metadata.Name)
			}
		}
	}
	for _, k := range []string{"ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "Kustomization"} {
		if _, ok := kinds[k]; !ok {
			t.Fatalf("no %s in kubernetes/", k)
		}
	}
	var listed []string
	for file := range byFile {
		if file != "kustomization.yaml" {
			listed = append(listed, file)
		}
	}
	slices.Sort(listed)
	if res := slices.Sorted(slices.Values(kinds["Kustomization"].Resources)); !slices.Equal(res, listed) {
		t.Errorf("kustomization.yaml resources %v, want every other file: %v", res, listed)
	}

	dep, cm, svc, pdb := kinds["Deployment"], kinds["ConfigMap"], kinds["Service"], kinds["PodDisruptionBudget"]
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment: %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	podLabels := dep.Spec.Template.Metadata.Labels
	for what, sel := range map[string]map[string]string{
		"Deployment selector": dep.Spec.Selector.MatchLabels, "Service selector": svc.Spec.Selector.Plain,
		"PodDisruptionBudget selector": pdb.Spec.Selector.MatchLabels,
	} {
		if len(sel) == 0 {
			t.Errorf("%s is empty", what)
		}
		for k, v := range sel {
			if podLabels[k] != v {
				t.Errorf("%s %s=%s does not select the pods (labels %v)", what, k, v, podLabels)
			}
		}
	}

	// The configuration: the file the container reads, valid.
	args := append(slices.Clone(c.Command), c.Args...)
	if !slices.Contains(args, "proxy") {
		t.Fatalf("container runs %q, not the proxy", args)
	}
	cfgPath := flagValue(args, "-c", "--config")
	if cfgPath == "" {
		t.Fatalf("container args %q: no -c FILE", args)
	}
	mounted := false
	for _, vm := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil && v.ConfigMap.Name == cm.Metadata.Name && vm.MountPath == path.Dir(cfgPath) {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("the ConfigMap %s is not mounted at %s, where -c %s is read", cm.Metadata.Name, path.Dir(cfgPath), cfgPath)
	}
	text, ok := cm.Data[path.Base(cfgPath)]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s (-c %s)", cm.Metadata.Name, path.Base(cfgPath), cfgPath)
	}
	cfg, _, err := config.Parse("", []byte(text))
	if err != nil {
		t.Fatalf("ConfigMap %s %s: %v", cm.Metadata.Name, path.Base(cfgPath), err)
	}
	if _, err := proxy.New(cfg, zerolog.Nop()); err != nil {
		t.Fatalf("ConfigMap %s %s: proxy.New: %v", cm.Metadata.Name, path.Base(cfgPath), err)
	}

	// Metrics and probes.
	metrics := flagValue(args, "--metrics-listen")
	host, port, err := net.SplitHostPort(metrics)
	if err != nil {
		t.Fatalf("--metrics-listen %q: %v", metrics, err)
	}
	if host != "0.0.0.0" && host != "" && host != "::" {
		t.Errorf("--metrics-listen %s: the kubelet probes the pod's IP, so listen on 0.0.0.0", metrics)
	}
	metricsPort, _ := strconv.Atoi(port)
	hasPort := func(p int) bool {
		return slices.ContainsFunc(c.Ports, func(cp containerPort) bool { return cp.ContainerPort == p })
	}
	if !hasPort(metricsPort) {
		t.Errorf("the metrics port %d is not a container port", metricsPort)
	}
	for name, pr := range map[string]struct {
		p    *probe
		path string
	}{"readinessProbe": {c.ReadinessProbe, "/readyz"}, "livenessProbe": {c.LivenessProbe, "/healthz"}} {
		if pr.p == nil || pr.p.HTTPGet == nil {
			t.Errorf("%s: want an httpGet probe of %s", name, pr.path)
			continue
		}
		if pr.p.HTTPGet.Path != pr.path || portOf(pr.p.HTTPGet.Port, c) != metricsPort {
			t.Errorf("%s: GET %s on port %q, want %s on the metrics port %d", name, pr.p.HTTPGet.Path, pr.p.HTTPGet.Port.Value, pr.path, metricsPort)
		}
	}
	if a := dep.Spec.Template.Metadata.Annotations["prometheus.io/port"]; a != port {
		t.Errorf("prometheus.io/port annotation %q, want the metrics port %s", a, port)
	}

	// Stopping: preStop sleep, then the drain, within the grace period.
	sleep := 0
	switch ps := c.Lifecycle.PreStop; {
	case ps.Sleep != nil:
		sleep = ps.Sleep.Seconds
	case ps.Exec != nil && len(ps.Exec.Command) == 2 && path.Base(ps.Exec.Command[0]) == "sleep":
		sleep, _ = strconv.Atoi(ps.Exec.Command[1])
	}
	if sleep <= 0 {
		t.Errorf("preStop %+v: want a sleep, so the endpoints are updated before SIGTERM starts the drain", c.Lifecycle.PreStop)
	}
	if pod.TerminationGracePeriodSeconds == nil {
		t.Fatal("no terminationGracePeriodSeconds")
	}
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if need := time.Duration(sleep)*time.Second + cfg.Shutdown.DrainTimeout + drainMargin; grace <= need {
		t.Errorf("terminationGracePeriodSeconds %s: want more than the preStop sleep %ds + shutdown.drain_timeout %s + %s = %s",
			grace, sleep, cfg.Shutdown.DrainTimeout, drainMargin, need)
	}

	// The Service reaches the proxy's listener.
	if svc.Spec.Type != "LoadBalancer" && svc.Spec.Type != "NodePort" {
		t.Errorf("Service type %q, want LoadBalancer or NodePort", svc.Spec.Type)
	}
	if svc.Spec.ExternalTrafficPolicy != "Local" {
		t.Errorf("Service externalTrafficPolicy %q: want Local, so the proxy sees the players' addresses", svc.Spec.ExternalTrafficPolicy)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 25565 {
		t.Fatalf("Service ports %+v: want one, 25565", svc.Spec.Ports)
	}
	target := portOf(svc.Spec.Ports[0].TargetPort, c)
	if !hasPort(target) {
		t.Errorf("Service targetPort %q is not a container port", svc.Spec.Ports[0].TargetPort.Value)
	}
	listening := false
	for _, l := range cfg.Listeners {
		h, p, err := net.SplitHostPort(l.Listen)
		if err == nil && p == strconv.Itoa(target) && (h == "0.0.0.0" || h == "" || h == "::") {
			listening = true
		}
	}
	if !listening || target == metricsPort {
		t.Errorf("no listener of the configuration is on 0.0.0.0:%d, the Service's target", target)
	}

	// Locked down, with resources, and loops that fit the CPU limit.
	sc := c.SecurityContext
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("securityContext: want runAsNonRoot, no privilege escalation, a read-only root and every capability dropped")
	}
	if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem &&
		!slices.ContainsFunc(c.VolumeMounts, func(vm volumeMount) bool { return vm.MountPath == "/tmp" }) {
		t.Errorf("a read-only root needs a writable /tmp: the reactor makes gnet's placeholder socket there")
	}
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == "" || (r == "memory" && c.Resources.Limits[r] == "") {
			t.Errorf("resources: want requests.%s (and limits.memory)", r)
		}
	}
	if cpu := c.Resources.Limits["cpu"]; cpu != "" {
		cores, err := strconv.Atoi(cpu)
		if err != nil {
			t.Errorf("limits.cpu %q: want whole cores, to match loops", cpu)
		} else if cfg.Loops == 0 || cfg.Loops > cores {
			t.Errorf("loops %d with a CPU limit of %d: set loops to at most the limit (0 means one per core of the node)", cfg.Loops, cores)
		}
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas < 2 {
		t.Errorf("replicas: want at least 2, so a drain leaves a pod serving")
	}
}
