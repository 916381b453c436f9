package deploy

// The manifests test: every file under deploy/k8s is decoded strictly into
// the Kubernetes API types (k8s.io/api; unknown fields are errors), each
// overlay is rendered with kustomize (sigs.k8s.io/kustomize/api, the
// library kubectl uses) and its objects are decoded strictly too, then the
// cross-references are checked: selectors and labels, Secret and ConfigMap
// names and keys, ports and probes, the KEDA stream, consumer and lag
// threshold against the worker's configuration, the grace period against
// the drain timeout, and the flags in the ConfigMaps against `vfx`.
//
// KEDA's ScaledObject is decoded into scaledObject below, a local mirror
// of the keda.sh/v1alpha1 fields these manifests use (KEDA's own Go module
// pulls in a controller runtime; the mirror keeps the test light). Unknown
// fields are errors there too.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	ktypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/vfxrender/vfx/queue"
)

// uploadMargin is the time, beyond the drain timeout, a stopping worker
// may need for its last upload and settlement (the daemon's settle calls
// are bounded at 30 s; the upload of a 240-frame 1080p render takes well
// under a minute on a cluster network).
const uploadMargin = 2 * time.Minute

// externalSecrets are the Secrets the operator creates (docs/operations.md)
// with the keys the manifests read. The dev overlay generates them.
var externalSecrets = map[string][]string{
	"vfx-s3":  {"access-key", "secret-key"},
	"vfx-api": {"admin-token"},
}

// scaledObject mirrors the keda.sh/v1alpha1 ScaledObject fields in use.
type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		PollingInterval *int32 `json:"pollingInterval,omitempty"`
		CooldownPeriod  *int32 `json:"cooldownPeriod,omitempty"`
		MinReplicaCount *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount *int32 `json:"maxReplicaCount,omitempty"`
		Advanced        *struct {
			HorizontalPodAutoscalerConfig *struct {
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
			} `json:"horizontalPodAutoscalerConfig,omitempty"`
		} `json:"advanced,omitempty"`
		Triggers []struct {
			Type     string            `json:"type"`
			Name     string            `json:"name,omitempty"`
			Metadata map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
}

// objects is one rendered overlay, decoded.
type objects struct {
	deployments  map[string]*appsv1.Deployment
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	hpas         map[string]*autoscalingv2.HorizontalPodAutoscaler
	pdbs         map[string]*policyv1.PodDisruptionBudget
	scaled       map[string]*scaledObject
	namespaces   map[string]*corev1.Namespace
	namespaceOf  map[string]string // kind/name → namespace
	renderedYAML string
}

// decodeStrict decodes one YAML document into the typed object of its
// kind; unknown fields and unknown kinds are errors.
func decodeStrict(doc []byte, o *objects) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	_ = yaml.Unmarshal(doc, &meta)
	name := meta.Metadata.Name
	key := tm.Kind + "/" + name
	var target any
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		v := &appsv1.Deployment{}
		o.deployments[name], target = v, v
	case "v1 Service":
		v := &corev1.Service{}
		o.services[name], target = v, v
	case "v1 ConfigMap":
		v := &corev1.ConfigMap{}
		o.configMaps[name], target = v, v
	case "v1 Secret":
		v := &corev1.Secret{}
		o.secrets[name], target = v, v
	case "v1 Namespace":
		v := &corev1.Namespace{}
		o.namespaces[name], target = v, v
	case "autoscaling/v2 HorizontalPodAutoscaler":
		v := &autoscalingv2.HorizontalPodAutoscaler{}
		o.hpas[name], target = v, v
	case "policy/v1 PodDisruptionBudget":
		v := &policyv1.PodDisruptionBudget{}
		o.pdbs[name], target = v, v
	case "keda.sh/v1alpha1 ScaledObject":
		v := &scaledObject{}
		o.scaled[name], target = v, v
	default:
		return fmt.Errorf("%s %s: kind not expected in these manifests", tm.APIVersion, key)
	}
	if err := yaml.UnmarshalStrict(doc, target); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	o.namespaceOf[key] = meta.Metadata.Namespace
	return nil
}

func newObjects() *objects {
	return &objects{
		deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{}, pdbs: map[string]*policyv1.PodDisruptionBudget{},
		scaled: map[string]*scaledObject{}, namespaces: map[string]*corev1.Namespace{}, namespaceOf: map[string]string{},
	}
}

// splitDocs splits a multi-document YAML stream.
func splitDocs(b []byte) [][]byte {
	var out [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			out = append(out, []byte(d))
		}
	}
	return out
}

func stripComments(s string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// TestManifestFilesStrict decodes every YAML file under k8s/ strictly:
// kustomization.yaml files into kustomize's Kustomization, the rest into
// the Kubernetes types of their kind (patches are partial objects of
// those types).
func TestManifestFilesStrict(t *testing.T) {
	n := 0
	err := filepath.WalkDir("k8s", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			t.Errorf("%s: not a YAML file in the manifests tree", path)
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		if d.Name() == "kustomization.yaml" {
			var k ktypes.Kustomization
			if err := yaml.UnmarshalStrict(b, &k); err != nil {
				t.Errorf("%s: %v", path, err)
			}
			// Every file it names exists.
			for _, f := range append(append([]string{}, k.Resources...), patchPaths(k)...) {
				if _, err := os.Stat(filepath.Join(filepath.Dir(path), f)); err != nil {
					t.Errorf("%s names %s: %v", path, f, err)
				}
			}
			return nil
		}
		o := newObjects()
		for _, doc := range splitDocs(b) {
			if err := decodeStrict(doc, o); err != nil {
				t.Errorf("%s: %v", path, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("only %d manifest files found under deploy/k8s", n)
	}
}

func patchPaths(k ktypes.Kustomization) []string {
	var out []string
	for _, p := range k.Patches {
		if p.Path != "" {
			out = append(out, p.Path)
		}
	}
	return out
}

// TestStrictDecodeRejectsUnknownFields: the decoder the tests rely on
// does fail on a misspelt field (so a pass means something).
func TestStrictDecodeRejectsUnknownFields(t *testing.T) {
	bad := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replica: 2\n")
	if err := decodeStrict(bad, newObjects()); err == nil || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("misspelt field accepted: %v", err)
	}
	badKEDA := []byte("apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata:\n  name: x\nspec:\n  trigers: []\n")
	if err := decodeStrict(badKEDA, newObjects()); err == nil {
		t.Fatal("misspelt ScaledObject field accepted")
	}
}

// render builds an overlay with kustomize and decodes its objects.
func render(t *testing.T, dir string) *objects {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := rm.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	o := newObjects()
	o.renderedYAML = string(out)
	for _, doc := range splitDocs(out) {
		if err := decodeStrict(doc, o); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
	}
	return o
}

// vfxEnvNames returns the VFX_* variables `vfx api` and `vfx worker` read,
// from the command's source (each flag names its variable).
func vfxEnvNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	re := regexp.MustCompile(`"(VFX_[A-Z0-9_]+)"`)
	for _, f := range []string{"api.go", "worker.go", "model.go"} {
		b, err := os.ReadFile(filepath.Join("..", "cmd", "vfx", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
	}
	if !names["VFX_CONCURRENCY"] || !names["VFX_ADMIN_TOKEN"] {
		t.Fatalf("could not read the flag variables from cmd/vfx: %v", names)
	}
	return names
}

// env resolves a container's environment: envFrom ConfigMaps then env
// (literal values; valueFrom entries map to "").
func env(o *objects, c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef != nil {
			if cm := o.configMaps[ef.ConfigMapRef.Name]; cm != nil {
				for k, v := range cm.Data {
					out[k] = v
				}
			}
		}
	}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

func container(t *testing.T, d *appsv1.Deployment, name string) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("deployment %s has no container %s", d.Name, name)
	return corev1.Container{}
}

func selects(sel *metav1.LabelSelector, labels map[string]string) bool {
	if sel == nil || len(sel.MatchLabels) == 0 {
		return false
	}
	for k, v := range sel.MatchLabels {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// portNumber resolves a probe or Service target port against the
// container's ports (by name or number); 0 when it names none.
func portNumber(c corev1.Container, p intstr.IntOrString) int32 {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	return 0
}

func listenPort(t *testing.T, what, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("%s %q: not host:port", what, addr)
	}
	return int32(n)
}

// TestOverlays renders base, dev and gpu and checks their cross-references.
func TestOverlays(t *testing.T) {
	envNames := vfxEnvNames(t)
	natsValues := readNATSValues(t)
	for _, dir := range []string{"k8s/base", "k8s/overlays/dev", "k8s/overlays/gpu"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			o := render(t, dir)
			checkCommon(t, o, envNames, natsValues)
			worker := container(t, o.deployments["vfx-worker"], "worker")
			startup := worker.StartupProbe
			switch filepath.Base(dir) {
			case "gpu":
				checkGPU(t, o)
			default:
				if startup == nil || startup.Exec == nil || !slices.Equal(startup.Exec.Command, []string{"vfx", "selftest", "--backend", "cpu"}) {
					t.Errorf("worker startupProbe %+v: want exec vfx selftest --backend cpu", startup)
				}
				if _, ok := worker.Resources.Limits["nvidia.com/gpu"]; ok {
					t.Error("a CPU worker asks for a GPU")
				}
			}
			if filepath.Base(dir) == "dev" {
				for name, keys := range externalSecrets {
					s := o.secrets[name]
					if s == nil {
						t.Errorf("dev: Secret %s not generated", name)
						continue
					}
					for _, k := range keys {
						if _, ok := s.Data[k]; !ok {
							t.Errorf("dev: Secret %s lacks key %s", name, k)
						}
					}
				}
			} else if len(o.secrets) != 0 {
				t.Errorf("%s renders Secrets: credentials belong to the operator, referenced only", dir)
			}
		})
	}
}

// checkCommon holds for every overlay.
func checkCommon(t *testing.T, o *objects, envNames map[string]bool, nats natsValues) {
	api, wk := o.deployments["vfx-api"], o.deployments["vfx-worker"]
	if api == nil || wk == nil || len(o.deployments) != 2 {
		t.Fatalf("deployments %v: want vfx-api and vfx-worker", keys(o.deployments))
	}
	// One namespace for everything namespaced.
	for key, ns := range o.namespaceOf {
		if !strings.HasPrefix(key, "Namespace/") && ns != "vfx" {
			t.Errorf("%s in namespace %q, want vfx", key, ns)
		}
	}
	// Selectors match their pod templates; the Service, PDB and HPA find the API.
	for _, d := range []*appsv1.Deployment{api, wk} {
		if !selects(d.Spec.Selector, d.Spec.Template.Labels) {
			t.Errorf("deployment %s: selector %v does not match template labels %v", d.Name, d.Spec.Selector, d.Spec.Template.Labels)
		}
		ps := d.Spec.Template.Spec
		if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot ||
			ps.SecurityContext.RunAsUser == nil || *ps.SecurityContext.RunAsUser == 0 {
			t.Errorf("deployment %s: pods must run as a non-root user", d.Name)
		}
		for _, c := range ps.Containers {
			if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s/%s: memory request and limit required", d.Name, c.Name)
			}
			if c.ReadinessProbe == nil || c.LivenessProbe == nil || c.StartupProbe == nil {
				t.Errorf("%s/%s: startup, readiness and liveness probes required", d.Name, c.Name)
			}
			if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
				t.Errorf("%s/%s: preStop hook required", d.Name, c.Name)
			}
			if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
				t.Errorf("%s/%s: read-only root filesystem expected", d.Name, c.Name)
			}
			checkRefs(t, o, d, c, envNames)
		}
	}
	svc := o.services["vfx-api"]
	if svc == nil {
		t.Fatal("no vfx-api Service")
	}
	if !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, api.Spec.Template.Labels) {
		t.Errorf("Service vfx-api selector %v does not select the API pods %v", svc.Spec.Selector, api.Spec.Template.Labels)
	}
	if selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, wk.Spec.Template.Labels) {
		t.Error("Service vfx-api also selects worker pods")
	}
	apiC := container(t, api, "api")
	apiEnv := env(o, apiC)
	listen := listenPort(t, "VFX_LISTEN", apiEnv["VFX_LISTEN"])
	for _, p := range svc.Spec.Ports {
		if n := portNumber(apiC, p.TargetPort); n != listen {
			t.Errorf("Service port %s targets %v = container port %d, want the API's VFX_LISTEN port %d", p.Name, p.TargetPort.String(), n, listen)
		}
	}
	for _, pr := range []*corev1.Probe{apiC.ReadinessProbe, apiC.LivenessProbe, apiC.StartupProbe} {
		if pr != nil && pr.HTTPGet != nil && portNumber(apiC, pr.HTTPGet.Port) != listen {
			t.Errorf("API probe %s on port %v, want %d", pr.HTTPGet.Path, pr.HTTPGet.Port.String(), listen)
		}
	}
	if pdb := o.pdbs["vfx-api"]; pdb == nil || !selects(pdb.Spec.Selector, api.Spec.Template.Labels) {
		t.Error("PodDisruptionBudget vfx-api missing or not selecting the API pods")
	}
	hpa := o.hpas["vfx-api"]
	if hpa == nil || hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != "vfx-api" {
		t.Error("HPA vfx-api missing or not targeting the API Deployment")
	}
	for name, h := range o.hpas {
		if h.Spec.ScaleTargetRef.Name == "vfx-worker" {
			t.Errorf("HPA %s targets the worker: KEDA owns its HPA", name)
		}
	}

	// Worker probes on its metrics listener.
	wc := container(t, wk, "worker")
	wEnv := env(o, wc)
	mport := listenPort(t, "VFX_HTTP_ADDR", wEnv["VFX_HTTP_ADDR"])
	for path, pr := range map[string]*corev1.Probe{"/readyz": wc.ReadinessProbe, "/livez": wc.LivenessProbe} {
		if pr == nil || pr.HTTPGet == nil || pr.HTTPGet.Path != path || portNumber(wc, pr.HTTPGet.Port) != mport {
			t.Errorf("worker probe %s: %+v, want httpGet %s on port %d (VFX_HTTP_ADDR)", path, pr, path, mport)
		}
	}

	// Grace period ≥ drain timeout + upload margin.
	drain, err := time.ParseDuration(wEnv["VFX_DRAIN_TIMEOUT"])
	if err != nil {
		t.Fatalf("VFX_DRAIN_TIMEOUT %q: %v", wEnv["VFX_DRAIN_TIMEOUT"], err)
	}
	grace := wk.Spec.Template.Spec.TerminationGracePeriodSeconds
	if grace == nil || time.Duration(*grace)*time.Second < drain+uploadMargin {
		t.Errorf("worker terminationGracePeriodSeconds %v < drain %v + upload margin %v", grace, drain, uploadMargin)
	}
	if mj, err := time.ParseDuration(wEnv["VFX_MAX_JOB_DURATION"]); err != nil || mj < drain {
		t.Errorf("VFX_MAX_JOB_DURATION %q: want a duration ≥ the drain timeout", wEnv["VFX_MAX_JOB_DURATION"])
	}

	// API and workers agree on the queue settings they both apply.
	for _, k := range []string{"VFX_NATS_URL", "VFX_ACK_WAIT", "VFX_MAX_DELIVER", "VFX_REPLICAS", "VFX_S3_BUCKET", "VFX_S3_ENDPOINT"} {
		if apiEnv[k] == "" || apiEnv[k] != wEnv[k] {
			t.Errorf("%s: API %q, worker %q; they must agree", k, apiEnv[k], wEnv[k])
		}
	}
	if r, _ := strconv.Atoi(wEnv["VFX_REPLICAS"]); r > nats.replicas {
		t.Errorf("VFX_REPLICAS %d > the NATS cluster's %d nodes", r, nats.replicas)
	}
	if !strings.Contains(wEnv["VFX_NATS_URL"], nats.serviceHost+":") {
		t.Errorf("VFX_NATS_URL %q does not name the chart's service %s", wEnv["VFX_NATS_URL"], nats.serviceHost)
	}

	// KEDA: the worker's stream, consumer and concurrency.
	so := o.scaled["vfx-worker"]
	if so == nil || len(o.scaled) != 1 {
		t.Fatal("want one ScaledObject, vfx-worker")
	}
	if so.Spec.ScaleTargetRef.Name != wk.Name || so.Spec.ScaleTargetRef.Kind != "Deployment" {
		t.Errorf("ScaledObject targets %+v, want Deployment %s", so.Spec.ScaleTargetRef, wk.Name)
	}
	if wk.Spec.Replicas != nil {
		t.Error("the worker Deployment sets replicas: KEDA owns them (a rollout would reset the count)")
	}
	if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "nats-jetstream" {
		t.Fatalf("triggers %+v: want one nats-jetstream", so.Spec.Triggers)
	}
	md := so.Spec.Triggers[0].Metadata
	if md["stream"] != queue.StreamJobs || md["consumer"] != queue.ConsumerWorkers {
		t.Errorf("KEDA stream/consumer %q/%q, want the worker's %q/%q", md["stream"], md["consumer"], queue.StreamJobs, queue.ConsumerWorkers)
	}
	if md["lagThreshold"] != wEnv["VFX_CONCURRENCY"] {
		t.Errorf("KEDA lagThreshold %q, want the worker's VFX_CONCURRENCY %q", md["lagThreshold"], wEnv["VFX_CONCURRENCY"])
	}
	if md["account"] != "$G" {
		t.Errorf("KEDA account %q: vfx uses the default account $G", md["account"])
	}
	host, port, err := net.SplitHostPort(md["natsServerMonitoringEndpoint"])
	if err != nil || port != strconv.Itoa(nats.monitorPort) || host != nats.headlessHost {
		t.Errorf("KEDA endpoint %q, want %s:%d (the chart's headless service and monitor port)", md["natsServerMonitoringEndpoint"], nats.headlessHost, nats.monitorPort)
	}
}

// checkRefs: every ConfigMap and Secret a container reads exists (or is a
// documented operator Secret with that key), and every VFX_* variable is
// one `vfx` reads.
func checkRefs(t *testing.T, o *objects, d *appsv1.Deployment, c corev1.Container, envNames map[string]bool) {
	secretKey := func(name, key string) {
		if s := o.secrets[name]; s != nil {
			if _, ok := s.Data[key]; !ok {
				t.Errorf("%s/%s reads Secret %s key %s, which it lacks", d.Name, c.Name, name, key)
			}
			return
		}
		if !slices.Contains(externalSecrets[name], key) {
			t.Errorf("%s/%s reads Secret %s key %s: neither rendered nor a documented operator Secret", d.Name, c.Name, name, key)
		}
	}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			cm := o.configMaps[ef.ConfigMapRef.Name]
			if cm == nil {
				t.Errorf("%s/%s: ConfigMap %s not found", d.Name, c.Name, ef.ConfigMapRef.Name)
				continue
			}
			for k := range cm.Data {
				if !envNames[k] {
					t.Errorf("ConfigMap %s sets %s, which vfx does not read", cm.Name, k)
				}
			}
		case ef.SecretRef != nil:
			t.Errorf("%s/%s: envFrom Secret: name the keys instead", d.Name, c.Name)
		}
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "VFX_") && !envNames[e.Name] {
			t.Errorf("%s/%s sets %s, which vfx does not read", d.Name, c.Name, e.Name)
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			secretKey(e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
		}
		if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			if cm := o.configMaps[e.ValueFrom.ConfigMapKeyRef.Name]; cm == nil {
				t.Errorf("%s/%s: ConfigMap %s not found", d.Name, c.Name, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
		if e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.ContainerName != c.Name {
			t.Errorf("%s/%s: resourceFieldRef names container %q", d.Name, c.Name, e.ValueFrom.ResourceFieldRef.ContainerName)
		}
	}
	ev := env(o, c)
	for _, k := range []string{"VFX_CONCURRENCY", "VFX_MAX_DELIVER", "VFX_REPLICAS"} {
		if v, ok := ev[k]; ok {
			if n, err := strconv.Atoi(v); err != nil || n < 1 {
				t.Errorf("%s=%q: want a positive integer", k, v)
			}
		}
	}
	for _, k := range []string{"VFX_ACK_WAIT", "VFX_DRAIN_TIMEOUT", "VFX_SHUTDOWN_TIMEOUT", "VFX_MAX_JOB_DURATION"} {
		if v, ok := ev[k]; ok {
			if _, err := time.ParseDuration(v); err != nil {
				t.Errorf("%s=%q: %v", k, v, err)
			}
		}
	}
	if v, ok := ev["VFX_BACKEND"]; ok && v != "cpu" && v != "cuda" {
		t.Errorf("VFX_BACKEND=%q: want cpu or cuda", v)
	}
	if vol := c.VolumeMounts; len(vol) > 0 {
		for _, m := range vol {
			if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
				t.Errorf("%s/%s mounts volume %s, which the pod lacks", d.Name, c.Name, m.Name)
			}
		}
	}
	if td, ok := ev["VFX_TEMP_DIR"]; ok && !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == td }) {
		t.Errorf("VFX_TEMP_DIR %s is not a mounted volume (the root filesystem is read-only)", td)
	}
}

// checkGPU: the GPU overlay's worker.
func checkGPU(t *testing.T, o *objects) {
	wk := o.deployments["vfx-worker"]
	c := container(t, wk, "worker")
	ps := wk.Spec.Template.Spec
	if q, ok := c.Resources.Limits["nvidia.com/gpu"]; !ok || q.Value() != 1 {
		t.Errorf("worker nvidia.com/gpu limit %v, want 1", c.Resources.Limits)
	}
	if !slices.ContainsFunc(ps.Tolerations, func(tl corev1.Toleration) bool {
		return tl.Key == "nvidia.com/gpu" && tl.Operator == corev1.TolerationOpExists && tl.Effect == corev1.TaintEffectNoSchedule
	}) {
		t.Errorf("worker tolerations %+v lack nvidia.com/gpu", ps.Tolerations)
	}
	if ps.NodeSelector["nvidia.com/gpu.present"] != "true" {
		t.Errorf("worker nodeSelector %v: want nvidia.com/gpu.present=true", ps.NodeSelector)
	}
	if sp := c.StartupProbe; sp == nil || sp.Exec == nil || !slices.Equal(sp.Exec.Command, []string{"vfx", "selftest", "--backend", "cuda"}) {
		t.Errorf("GPU worker startupProbe %+v: want exec vfx selftest --backend cuda", sp)
	}
	if ev := env(o, c); ev["VFX_BACKEND"] != "cuda" {
		t.Errorf("GPU worker VFX_BACKEND %q, want cuda", ev["VFX_BACKEND"])
	}
	if !strings.Contains(c.Image, "vfx-gpu") {
		t.Errorf("GPU worker image %q, want the vfx-gpu image", c.Image)
	}
	if ac := container(t, o.deployments["vfx-api"], "api"); strings.Contains(ac.Image, "gpu") {
		t.Errorf("the API runs the GPU image %q", ac.Image)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// natsValues is what the manifests need from deploy/nats/values.yaml.
type natsValues struct {
	replicas                  int
	monitorPort               int
	serviceHost, headlessHost string
}

// readNATSValues decodes the chart values and checks a 3-node JetStream
// cluster with file storage and the monitoring port on (KEDA reads it).
func readNATSValues(t *testing.T) natsValues {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("nats", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		FullnameOverride  string `json:"fullnameOverride"`
		NamespaceOverride string `json:"namespaceOverride"`
		Config            struct {
			Cluster struct {
				Enabled  bool `json:"enabled"`
				Port     int  `json:"port"`
				Replicas int  `json:"replicas"`
			} `json:"cluster"`
			JetStream struct {
				Enabled   bool `json:"enabled"`
				FileStore struct {
					Enabled bool   `json:"enabled"`
					Dir     string `json:"dir"`
					PVC     struct {
						Enabled          bool    `json:"enabled"`
						Size             string  `json:"size"`
						StorageClassName *string `json:"storageClassName"`
					} `json:"pvc"`
				} `json:"fileStore"`
				MemoryStore struct {
					Enabled bool `json:"enabled"`
				} `json:"memoryStore"`
			} `json:"jetstream"`
			Monitor struct {
				Enabled bool `json:"enabled"`
				Port    int  `json:"port"`
			} `json:"monitor"`
			NATS struct {
				Port int `json:"port"`
			} `json:"nats"`
		} `json:"config"`
		Container   json.RawMessage `json:"container"`
		PodTemplate json.RawMessage `json:"podTemplate"`
		Service     struct {
			Ports struct {
				Monitor struct {
					Enabled bool `json:"enabled"`
				} `json:"monitor"`
			} `json:"ports"`
		} `json:"service"`
		NatsBox struct {
			Enabled bool `json:"enabled"`
		} `json:"natsBox"`
	}
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		t.Fatalf("nats/values.yaml: %v", err)
	}
	c := v.Config
	if !c.Cluster.Enabled || c.Cluster.Replicas != 3 {
		t.Errorf("NATS cluster enabled %v with %d replicas, want a 3-node cluster", c.Cluster.Enabled, c.Cluster.Replicas)
	}
	if !c.JetStream.Enabled || !c.JetStream.FileStore.Enabled || !c.JetStream.FileStore.PVC.Enabled || c.JetStream.FileStore.PVC.Size == "" {
		t.Error("NATS JetStream must be on with a file store on a PVC")
	}
	if !c.Monitor.Enabled || c.Monitor.Port == 0 || !v.Service.Ports.Monitor.Enabled {
		t.Error("the NATS monitoring port must be on (config.monitor and service.ports.monitor): KEDA reads it")
	}
	if v.FullnameOverride == "" || v.NamespaceOverride == "" || c.NATS.Port == 0 {
		t.Fatal("values must pin fullnameOverride, namespaceOverride and config.nats.port (the manifests name the service)")
	}
	if bytes.Contains(b, []byte("\t")) {
		t.Error("values.yaml contains tabs")
	}
	return natsValues{
		replicas: c.Cluster.Replicas, monitorPort: c.Monitor.Port,
		serviceHost:  fmt.Sprintf("%s.%s.svc.cluster.local", v.FullnameOverride, v.NamespaceOverride),
		headlessHost: fmt.Sprintf("%s-headless.%s.svc.cluster.local", v.FullnameOverride, v.NamespaceOverride),
	}
}
