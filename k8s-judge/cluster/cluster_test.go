// Package cluster runs the policy behind a real control plane in one Go test process:
// kube-apiserver on embedded etcd, kube-scheduler and the workload controllers, the policy as the
// cluster's mutating webhook (configured as Kubewarden's controller configures it from
// docs/node-aware.md's ClusterAdmissionPolicy, served by the test adapter on the embedded host, or
// by policy-server where installed). Random workloads and Pods are applied through the API; when
// the scheduler has settled, every bound Pod's Node must run all of its images, every refusal
// carry the policy's message, and no Pod be left Pending by a pin while a Node could run it.
package cluster

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/controlplane"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/oracle"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/policyhost"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/property"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/registry"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/report"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/webhook"
)

var seed uint64

func TestMain(m *testing.M) {
	flag.Parse()
	var err error
	if seed, err = strconv.ParseUint(os.Getenv("K8S_E2E_SEED"), 10, 64); err != nil || seed == 0 {
		seed = rand.Uint64()
	}
	report.Line("k8s-e2e", "seed %d (K8S_E2E_SEED=%d repeats this run)", seed, seed)
	os.Exit(m.Run())
}

// nodes are the cluster: amd64, arm64 and s390x Nodes, an arm64 pool tainted as GKE taints it,
// one Windows Node tainted as AKS and EKS guides taint them. Ready, no kubelet.
func nodes() []v1.Node {
	node := func(name, os, arch string, taints ...v1.Taint) v1.Node {
		labels := map[string]string{"kubernetes.io/arch": arch, "kubernetes.io/os": os, "kubernetes.io/hostname": name,
			"beta.kubernetes.io/arch": arch, "beta.kubernetes.io/os": os, "topology.kubernetes.io/zone": "a"}
		if os == "windows" {
			labels["node.kubernetes.io/windows-build"] = "10.0.20348"
		}
		capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("256Gi"),
			v1.ResourcePods: resource.MustParse("500")}
		return v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{Taints: taints},
			Status: v1.NodeStatus{Capacity: capacity, Allocatable: capacity,
				Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
					LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
				NodeInfo: v1.NodeSystemInfo{Architecture: arch, OperatingSystem: os}}}
	}
	arm := v1.Taint{Key: "kubernetes.io/arch", Value: "arm64", Effect: v1.TaintEffectNoSchedule}
	windows := v1.Taint{Key: "os", Value: "windows", Effect: v1.TaintEffectNoSchedule}
	return []v1.Node{
		node("amd64-1", "linux", "amd64"), node("amd64-2", "linux", "amd64"), node("arm64-1", "linux", "arm64"),
		node("s390x-1", "linux", "s390x"), node("arm64-pool-1", "linux", "arm64", arm), node("arm64-pool-2", "linux", "arm64", arm),
		node("windows-1", "windows", "amd64", windows),
	}
}

// resources are where each kind is created.
var resources = map[string]schema.GroupVersionResource{
	"Pod": {Version: "v1", Resource: "pods"}, "ReplicationController": {Version: "v1", Resource: "replicationcontrollers"},
	"Deployment": {Group: "apps", Version: "v1", Resource: "deployments"}, "StatefulSet": {Group: "apps", Version: "v1", Resource: "statefulsets"},
	"DaemonSet": {Group: "apps", Version: "v1", Resource: "daemonsets"}, "ReplicaSet": {Group: "apps", Version: "v1", Resource: "replicasets"},
	"Job": {Group: "batch", Version: "v1", Resource: "jobs"}, "CronJob": {Group: "batch", Version: "v1", Resource: "cronjobs"},
}

func create(ctx context.Context, client dynamic.Interface, kind, namespace string, object any) error {
	data, err := json.Marshal(object)
	if err != nil {
		return err
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(data); err != nil {
		return err
	}
	u.SetNamespace(namespace)
	_, err = client.Resource(resources[kind]).Namespace(namespace).Create(ctx, &u, metav1.CreateOptions{})
	return err
}

// serve starts what serves the policy: the test adapter on the embedded host, or policy-server
// (K8S_E2E_SERVER=policy-server).
func serve(t *testing.T, p policyhost.Builds, reg *registry.Registry, cp *controlplane.ControlPlane, policy *webhook.ClusterAdmissionPolicy) webhook.Server {
	switch name := os.Getenv("K8S_E2E_SERVER"); name {
	case "", "embedded":
		host, err := policyhost.StartEmbedded(p.EmbeddedHost, policyhost.Options{Module: p.Module, Sources: reg.Sources, Kubeconfig: cp.Kubeconfig})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = host.Close() })
		return webhook.Serve(host, policy.Spec.Settings)
	case "policy-server":
		server, err := webhook.StartPolicyServer(os.Getenv("POLICY_SERVER"), filepath.Join(p.Root, "annotated-policy.wasm"),
			reg.Sources, cp.Kubeconfig, policy, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return server
	default:
		t.Fatalf("K8S_E2E_SERVER is embedded or policy-server, not %q", name)
		return nil
	}
}

func TestPolicyInAControlPlane(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := time.Now()
	p, err := policyhost.ProjectBuilds("", "k8s-e2e")
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.Start(t, p.SeedRegistry)
	cp := controlplane.Start(t)
	for _, node := range nodes() {
		if err := cp.CreateNode(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	for name, handler := range property.RuntimeClasses {
		class := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
		if _, err := cp.Client.NodeV1().RuntimeClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cp.StartScheduler(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cp.StartControllers(ctx); err != nil {
		t.Fatal(err)
	}
	policy, err := webhook.ReadPolicy(filepath.Join(p.Root, "docs/node-aware.md"), "## Install")
	if err != nil {
		t.Fatal(err)
	}
	server := serve(t, p, reg, cp, policy)
	defer server.Close()
	configuration := policy.Configuration(server.URL(policy), server.CABundle())
	if _, err := cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, configuration, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForWebhook(ctx, t, cp, reg)
	report.Line("k8s-e2e", "control plane, registry and webhook ready in %v", time.Since(started).Round(time.Second))

	dyn := dynamic.NewForConfigOrDie(cp.Config)
	count := 200
	if n, err := strconv.Atoi(os.Getenv("K8S_E2E_OBJECTS")); err == nil && n > 0 {
		count = n
	}
	cases := map[string]*property.Case{}
	refused, volumes := 0, 0
	for i := 0; i < count; i++ {
		name := fmt.Sprintf("w%03d", i)
		c := property.Object(reg, nodes(), policy.Spec.Settings, name).Example(int(seed%1_000_000_007) + i)
		if len(property.ImageVolumes(c.Template)) > 0 {
			volumes++
		}
		err := create(ctx, dyn, c.Kind, "default", c.Object)
		switch {
		case err == nil:
			cases[name] = c
		case apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || apierrors.IsInvalid(err):
			refused++
			if !strings.Contains(err.Error(), "image-arch-affinity: ") {
				t.Errorf("%s %s refused without the policy's message: %v", c.Kind, name, err)
			}
		default:
			t.Fatalf("%s %s: %v", c.Kind, name, err)
		}
	}
	pods := settle(ctx, t, cp, "default")
	judge(t, cp, cases, pods, refused)
	report.Line("k8s-e2e", "%s: %d workloads and Pods applied (%d with an image volume), refused %d, settled and judged %v after the start",
		server.Name(), count, volumes, refused, time.Since(started).Round(time.Second))

	t.Run("a sidecar injected after the policy is not seen", func(t *testing.T) {
		sidecarInjectedAfter(ctx, t, cp, reg, server, policy)
	})
	t.Run("the webhook down under failurePolicy Ignore", func(t *testing.T) {
		webhookDown(ctx, t, cp, reg, server, policy)
	})
}

// sidecarInjectedAfter: a second mutating webhook, named after this policy's as Istio's injector
// is (the API server calls them in name order, and Kubewarden sets no reinvocationPolicy), adds an
// amd64-only proxy to the Pods of a namespace. An arm64-only app is pinned to arm64 without the
// proxy being looked up, and is bound to an arm64 Node the proxy cannot run on, as the README
// says; the background audit's request for the running Pod is refused, naming the proxy.
func sidecarInjectedAfter(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, reg *registry.Registry,
	server webhook.Server, policy *webhook.ClusterAdmissionPolicy) {
	proxy := reg.Ref("gen/linux-amd64:1.0")
	injector := webhook.Inject(v1.Container{Name: "proxy", Image: proxy})
	defer injector.Close()
	url, fail, none := injector.URL(), admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	configuration := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:              "sidecar-injector.istio.io",
			ClientConfig:      admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: injector.CABundle()},
			Rules:             []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"istio-injection": "enabled"}},
			FailurePolicy:     &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, configuration, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	namespace := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "meshed", Labels: map[string]string{"istio-injection": "enabled"}}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, namespace, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	app := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"app": "meshed"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: reg.Ref("gen/linux-arm64:1.0")}}}}
	deadline := time.Now().Add(30 * time.Second)
	for injector.Reviews.Load() == 0 { // the API server reads webhook configurations from an informer
		_, _ = cp.Client.CoreV1().Pods("meshed").Create(ctx, app, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if time.Now().After(deadline) {
			t.Fatal("the API server never called the injector")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := cp.Client.CoreV1().Pods("meshed").Create(ctx, app, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := settle(ctx, t, cp, "meshed")[0]
	if got := images(&pod); len(got) != 2 || got[1] != proxy {
		t.Fatalf("the injector did not add the proxy: %v", got)
	}
	if pin := pod.Annotations[pinAnnotation]; pin != "arm64" {
		t.Fatalf("want the app pinned to arm64 (the proxy unseen), annotation %q", pin)
	}
	node, err := cp.Client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the meshed Pod is not bound: %v (%s)", err, unschedulable(&pod))
	}
	if node.Labels["kubernetes.io/arch"] != "arm64" || property.RunsImage(reg, proxy, node) {
		t.Fatalf("want the Pod on an arm64 Node its amd64-only proxy cannot run on, got %s (%s)", node.Name, node.Labels["kubernetes.io/arch"])
	}
	report.Line("k8s-e2e", "sidecar: the arm64 app was pinned to arm64, the amd64-only proxy injected after it, and the Pod bound to %s: the proxy would fail there with exec format error", node.Name)

	// The audit scanner sends the running Pod as a CREATE request.
	pod.ManagedFields = nil
	object, _ := json.Marshal(pod)
	request, _ := json.Marshal(map[string]any{"uid": "audit", "operation": "CREATE", "name": pod.Name, "namespace": pod.Namespace,
		"kind": map[string]string{"group": "", "version": "v1", "kind": "Pod"}, "resource": map[string]string{"group": "", "version": "v1", "resource": "pods"},
		"userInfo": map[string]any{}, "object": json.RawMessage(object)})
	audit, err := server.Audit(policy, request)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`image-arch-affinity: the Pod is bound to node %q (linux/arm64), which its images have no build for: %q runs only on linux/amd64`, node.Name, proxy)
	if audit.Allowed || !strings.HasPrefix(audit.Message(), want) {
		t.Fatalf("the audit's answer: allowed=%v %q, want refused with %q", audit.Allowed, audit.Message(), want)
	}
	report.Line("k8s-e2e", "sidecar: the background audit refuses the running Pod: %s", audit.Message())
}

// webhookDown: under failurePolicy Ignore, with the policy's server gone, a Pod is created
// unpinned.
func webhookDown(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, reg *registry.Registry,
	server webhook.Server, policy *webhook.ClusterAdmissionPolicy) {
	if policy.Spec.FailurePolicy == nil || *policy.Spec.FailurePolicy != admissionregistrationv1.Ignore {
		t.Fatalf("docs/node-aware.md's policy has failurePolicy %v, not Ignore", policy.Spec.FailurePolicy)
	}
	server.Close()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "while-down"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: reg.Ref("gen/linux-arm64:1.0")}}}}
	created, err := cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a Pod must be created while the webhook is down (failurePolicy Ignore): %v", err)
	}
	if _, pinned := created.Annotations[pinAnnotation]; pinned || created.Spec.Affinity != nil {
		t.Fatalf("the Pod created while the webhook was down is pinned: %v %v", created.Annotations, created.Spec.Affinity)
	}
	report.Line("k8s-e2e", "webhook down: the arm64-only Pod was created unpinned (annotations %v, no node affinity)", created.Annotations)
}

// pinAnnotation records what the policy computed.
const pinAnnotation = "image-arch-affinity.kubewarden.io/architectures"

// waitForWebhook waits until the API server calls the webhook (it reads configurations from an
// informer): a dry-run arm64-only Pod comes back pinned.
func waitForWebhook(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, reg *registry.Registry) {
	probe := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: reg.Ref("gen/linux-arm64:1.0")}}}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		pod, err := cp.Client.CoreV1().Pods("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil && pod.Annotations[pinAnnotation] == "arm64" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server never called the webhook (last: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// settle waits until the controllers and the scheduler are done: the Pods stop changing, and
// each is bound or marked unschedulable.
func settle(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, namespace string) []v1.Pod {
	var last string
	stable := 0
	deadline := time.Now().Add(5 * time.Minute)
	for {
		list, err := cp.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		state := make([]string, 0, len(list.Items))
		decided := true
		for _, pod := range list.Items {
			scheduled := ""
			for _, condition := range pod.Status.Conditions {
				if condition.Type == v1.PodScheduled {
					scheduled = string(condition.Status) + condition.Reason
				}
			}
			if pod.Spec.NodeName == "" && scheduled == "" {
				decided = false
			}
			state = append(state, pod.Name+"="+pod.Spec.NodeName+"/"+scheduled)
		}
		sort.Strings(state)
		now := strings.Join(state, ",")
		if now == last && decided {
			stable++
		} else {
			stable = 0
		}
		if stable >= 5 {
			return list.Items
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not settle in 5 minutes: %d Pods", len(list.Items))
		}
		last = now
		time.Sleep(time.Second)
	}
}

// owner is the name of the object a Pod comes from (app label).
func owner(pod *v1.Pod) string { return pod.Labels["app"] }

func judge(t *testing.T, cp *controlplane.ControlPlane, cases map[string]*property.Case, pods []v1.Pod, refused int) {
	byName := map[string]*v1.Node{}
	list, err := cp.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cluster := list.Items
	for i := range cluster {
		byName[cluster[i].Name] = &cluster[i]
	}
	bound, pending, otherOS := 0, 0, 0
	for i := range pods {
		pod := &pods[i]
		c, ok := cases[owner(pod)]
		if !ok {
			t.Errorf("Pod %s comes from no applied object", pod.Name)
			continue
		}
		if pod.Spec.NodeName != "" {
			bound++
			node := byName[pod.Spec.NodeName]
			if node.Labels["kubernetes.io/os"] != c.OS() {
				otherOS++
				continue
			}
			if !c.RunsOn(node) {
				t.Errorf("Pod %s (%s %s) is bound to %s, which does not run all of its images: %v", pod.Name, c.Kind, owner(pod), node.Name, images(pod))
			}
			continue
		}
		pending++
		for _, node := range cluster {
			if admits, _ := oracle.Admits(c.Template, &node); admits && c.RunsOn(&node) {
				t.Errorf("Pod %s (%s %s) is Pending (%s), but node %s admits the applied Pod and runs all of its images; the Pod: %s",
					pod.Name, c.Kind, owner(pod), unschedulable(pod), node.Name, affinity(pod))
				break
			}
		}
	}
	report.Line("k8s-e2e", "Nodes %d; objects created %d, refused %d; Pods %d: bound %d (on a node of another OS than the policy placed them for: %d), pending %d",
		len(cluster), len(cases), refused, len(pods), bound, otherOS, pending)
}

// unschedulable is the scheduler's message on a Pending Pod.
func unschedulable(pod *v1.Pod) string {
	for _, condition := range pod.Status.Conditions {
		if condition.Type == v1.PodScheduled {
			return condition.Reason + ": " + condition.Message
		}
	}
	return "not scheduled yet"
}

// images are the images of pod's containers, then of its image volumes.
func images(pod *v1.Pod) []string {
	var out []string
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		out = append(out, c.Image)
	}
	return append(out, property.ImageVolumes(pod)...)
}

func affinity(pod *v1.Pod) string {
	data, _ := json.Marshal(map[string]any{"nodeSelector": pod.Spec.NodeSelector, "affinity": pod.Spec.Affinity, "tolerations": pod.Spec.Tolerations})
	return string(data)
}
