package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/controlplane"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/policyhost"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/registry"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/report"
)

// Template decisions (docs/install.md, "Registry pull quotas"): with workloadTemplates mutate and
// templateDecisionSeconds, the Pods the Deployment and ReplicaSet controllers make from a pinned
// template, as the API server hands them to the webhook, reuse the template's decision. Judged
// without counting the policy's calls: the Deployment is created with no replica, then the
// registry is stopped and the host's 60 s cache of its lookups left to expire, and only then
// scaled up. Under onLookupFailure reject a Pod that was looked up would be refused; every Pod
// must be created and bound to a Node the registry's catalog says runs every image. A control
// shows the registry gone: a template with another image is refused for its failed lookup.

// decisionImages: a Linux index of five architectures and an arm64-only index (their common
// architecture: arm64).
var decisionImages = []string{"gen/linux-amd64-arm64-arm-ppc64le-s390x:1.0", "gen/linux-arm64:1.0"}

const decisionReplicas = 4

func TestTemplateDecisionsInAControlPlane(t *testing.T) {
	if os.Getenv("K8S_E2E_SETTINGS") != "node-aware" {
		t.Skip("runs with K8S_E2E_SETTINGS=node-aware (docs/node-aware.md's policy)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := policyhost.ProjectBuilds(os.Getenv("K8S_JUDGE_MODULE"), "k8s-e2e")
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.Start(t, p.SeedRegistry)
	cp := controlplane.Start(t)
	policy := startCluster(ctx, t, p, cp, nodes())
	policy.Spec.Settings.WorkloadTemplates = "mutate"
	policy.Spec.Settings.TemplateDecisionSeconds = 3600
	policy.Spec.Settings.OnLookupFailure = "reject"
	server := serve(t, p, reg, cp, policy)
	defer server.Close()
	register(ctx, t, cp, reg, server, policy, "gen/linux-arm64:1.0", "arm64")

	deployments := cp.Client.AppsV1().Deployments("default")
	created, err := deployments.Create(ctx, decisionDeployment(reg, decisionImages), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	record := created.Spec.Template.Annotations["image-arch-affinity.kubewarden.io/decision"]
	if record == "" {
		t.Fatalf("the template carries no decision record: %v", created.Spec.Template.Annotations)
	}
	reg.Stop()
	time.Sleep(61 * time.Second)
	// Scaled up: an UPDATE of the Deployment whose template is unchanged, accepted with no lookup.
	scale := fmt.Sprintf(`{"spec":{"replicas":%d}}`, decisionReplicas)
	if _, err := deployments.Patch(ctx, created.Name, types.MergePatchType, []byte(scale), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := waitForPods(ctx, t, cp, decisionReplicas)
	judgeDecisionPods(ctx, t, cp, reg, pods, record)

	// The control: another image in the template is looked up, and the lookup fails.
	other := decisionDeployment(reg, []string{"gen/linux-amd64:1.0"})
	other.Name = "other"
	_, err = deployments.Create(ctx, other, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "cannot tell which architectures") {
		t.Fatalf("a template of another image, the registry stopped: want a refused lookup, got %v", err)
	}
	report.Line("k8s-e2e", "template decisions: %d Pods of a pinned Deployment created and bound to Nodes running their images with the registry stopped and the host's cache expired; a template of another image refused for its lookup", len(pods))
}

// decisionDeployment is a Deployment of images, with no replica.
func decisionDeployment(reg *registry.Registry, images []string) *appsv1.Deployment {
	labels := map[string]string{"app": "decision"}
	var containers []v1.Container
	for i, image := range images {
		containers = append(containers, v1.Container{Name: "c" + string(rune('0'+i)), Image: reg.Ref(image)})
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "decision"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: v1.PodSpec{Containers: containers}}},
	}
}

// waitForPods waits for want Pods of app=decision, each bound to a Node.
func waitForPods(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, want int) []v1.Pod {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := cp.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=decision"})
		if err != nil {
			t.Fatal(err)
		}
		bound := 0
		for _, pod := range list.Items {
			if pod.Spec.NodeName != "" {
				bound++
			}
		}
		if bound == want && len(list.Items) == want {
			return list.Items
		}
		if time.Now().After(deadline) {
			events, _ := cp.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			var messages []string
			for _, e := range events.Items {
				messages = append(messages, e.Reason+": "+e.Message)
			}
			t.Fatalf("%d Pods of the pinned Deployment, %d bound, want %d bound; events: %v", len(list.Items), bound, want, messages)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// judgeDecisionPods: each Pod carries the template's record and is bound to a Node on which the
// catalog says every image runs.
func judgeDecisionPods(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, reg *registry.Registry, pods []v1.Pod, record string) {
	for _, pod := range pods {
		if got := pod.Annotations["image-arch-affinity.kubewarden.io/decision"]; got != record {
			t.Errorf("Pod %s: record %q, the template's %q", pod.Name, got, record)
		}
		node, err := cp.Client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, image := range decisionImages {
			if !catalogRuns(reg.Catalog[image], node, true) {
				t.Errorf("Pod %s on Node %s (%s/%s): %s does not run there", pod.Name, node.Name,
					node.Labels["kubernetes.io/os"], node.Labels["kubernetes.io/arch"], image)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }
