package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/controlplane"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/property"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/registry"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/report"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/settings"
)

// After admission (docs/design.md): on a sample of the settled bound Pods, kubectl debug's call
// (an ephemeral container through pods/ephemeralcontainers) and an image swap (an Update of
// spec.containers[0].image) go through the API server to the policy. Each answer is judged from
// the bound Node's labels and what the registry's catalog says the new image runs on, never from
// the policy's rules.

// The UPDATEs made.
const (
	callDebug = "kubectl debug"
	callSwap  = "image swap"
)

// maxUpdated: bound Pods sampled (each gets one call of each kind).
const maxUpdated = 60

// Why an answer is not judged (counted apart).
const (
	apartWasm = "a WebAssembly build (a shim may run it anywhere; which nodes have one is not known)"
	// An artifact (a Helm chart, a model, Spin's WebAssembly app), an empty index, attestations
	// only: no build a container runs; the policy's lookup outcome depends on the artifact type.
	apartPlatformless = "no runnable platform in the catalog (an artifact, an empty index, attestations only)"
	// apartBundle: an OLM bundle's config labels it (manifests, no binaries): it constrains
	// nothing (docs/design.md), whatever platform its config names.
	apartBundle = "an OLM bundle (manifests, no binaries: it constrains nothing)"
	// An entry with no os (the host cannot read an index entry without the field; the empty
	// string counts for every OS: the catalog does not tell them apart) or a nested index.
	apartUnreadable   = "an index entry the catalog does not describe (no os, or a nested index): the lookup may fail"
	apartNotInCatalog = "not in the catalog"
	// Static settings judge a Pod after admission on the OS its spec.os names; the kubelet
	// refuses it on a Node of another OS anyway.
	apartSpecOS = "static settings, the Pod bound to a Node of another OS than its spec.os"
	// Without pinWindowsBuild and readNodes the policy does not compare Windows builds: its
	// promise is the Node's OS and architecture.
	apartWindowsBuild = "accepted on a Windows Node whose build the image lacks (pinWindowsBuild and readNodes unset: builds are outside the contract)"
	apartGone         = "the Pod is gone"
	// The bound Node runs not an image the Pod keeps (a DaemonSet's Pod on a Node its images
	// lack, a Pod bound before the policy): it fails there already, whatever the UPDATE adds.
	// The policy judges a Pod where the images it keeps run (docs/design.md, After admission).
	apartBroken = "the bound Node runs not an image the Pod keeps: it fails there already"
)

// What a judged answer was.
const (
	verdictAccepted = "accepted"
	// verdictRefused: refused, and the bound Node runs the new image not (readNodes).
	verdictRefused = "refused"
	// verdictSettings: refused under static settings (the Node is not read): decided by the
	// settings' contract, judged only on its message naming the new image.
	verdictSettings = "refused by the settings' contract"
)

// isWasmPlatform: a WebAssembly build (docs/design.md, "WebAssembly workloads").
func isWasmPlatform(p registry.Platform) bool {
	return p.Architecture == "wasm" && slices.Contains([]string{"wasi", "wasip1", "wasip2"}, p.OS)
}

// catalogClass says why img cannot be judged from the catalog ("" when it can): WebAssembly,
// no runnable platform, or an entry the catalog does not describe.
func catalogClass(img registry.Image, found bool) string {
	if !found {
		return apartNotInCatalog
	}
	if slices.ContainsFunc(img.Platforms, isWasmPlatform) {
		return apartWasm
	}
	if _, bundle := img.Labels[property.OLMBundleLabel]; bundle {
		return apartBundle
	}
	runnable := 0
	for _, p := range img.Platforms {
		switch {
		case p.Attestation:
		case p.OS == "" || p.Architecture == "":
			return apartUnreadable
		default:
			runnable++
		}
	}
	if runnable == 0 {
		return apartPlatformless
	}
	return ""
}

// catalogRuns says whether node runs img: a build (not an attestation) of the Node's
// kubernetes.io/os and kubernetes.io/arch, and, when builds count, of a Windows Node's
// node.kubernetes.io/windows-build (an entry with no os.version names no build). Nodes do not
// label a variant.
func catalogRuns(img registry.Image, node *v1.Node, builds bool) bool {
	nodeOS, arch := node.Labels["kubernetes.io/os"], node.Labels["kubernetes.io/arch"]
	for _, p := range img.Platforms {
		if p.Attestation || p.OS != nodeOS || p.Architecture != arch {
			continue
		}
		if builds && nodeOS == "windows" && p.OSVersion != "" && property.WindowsBuild(p.OSVersion) != node.Labels["node.kubernetes.io/windows-build"] {
			continue
		}
		return true
	}
	return false
}

// updateCall is one UPDATE: the Pod as read before it, its Node, the new image (a reference in
// the registry) and what the catalog says of it.
type updateCall struct {
	kind  string
	pod   *v1.Pod
	node  *v1.Node
	ref   string
	img   registry.Image
	found bool
	// kept: the catalog's entries of the images the Pod keeps (those found).
	kept []registry.Image
}

// judgeCall judges the policy's answer to call (refused with message, or accepted) from the
// bound Node's labels and the catalog: the verdict, or why it is counted apart, or a failure.
// Accepted: the Node runs the new image (both modes). Refused with readNodes: the Node runs it
// not. Refused under static settings: the message names the new image.
func judgeCall(s *settings.Settings, call updateCall, refused bool, message string) (verdict, apart, failure string) {
	if class := catalogClass(call.img, call.found); class != "" {
		return "", class, ""
	}
	nodeOS := call.node.Labels["kubernetes.io/os"]
	if specOS := call.pod.Spec.OS; !s.ReadNodes && specOS != nil && specOS.Name != "" && string(specOS.Name) != nodeOS {
		return "", apartSpecOS, ""
	}
	where := fmt.Sprintf("%s of Pod %s on Node %s (%s/%s, build %q): new image %s (%v)", call.kind, call.pod.Name, call.node.Name,
		nodeOS, call.node.Labels["kubernetes.io/arch"], call.node.Labels["node.kubernetes.io/windows-build"], call.ref, call.img.Platforms)
	// Windows builds count under pinWindowsBuild, and with readNodes (the policy keeps a
	// process-isolated Pod to its images' builds: docs/windows.md).
	builds := s.PinWindowsBuild || s.ReadNodes
	runs := catalogRuns(call.img, call.node, builds)
	switch {
	case refused && !strings.Contains(message, call.ref):
		return "", "", fmt.Sprintf("%s: refused without naming the new image: %s", where, message)
	case refused && !s.ReadNodes:
		return verdictSettings, "", ""
	case refused && runs:
		return "", "", fmt.Sprintf("%s: refused, but the bound Node runs the new image: %s", where, message)
	case refused:
		return verdictRefused, "", ""
	case !runs && !keptRun(call):
		return "", apartBroken, ""
	case !runs:
		return "", "", fmt.Sprintf("%s: accepted, but the bound Node does not run the new image", where)
	case nodeOS == "windows" && !builds && !catalogRuns(call.img, call.node, true):
		return "", apartWindowsBuild, ""
	}
	return verdictAccepted, "", ""
}

// keptRun says whether the bound Node runs every image the Pod keeps that the catalog can
// judge (a process-isolated container needs the Node's Windows build).
func keptRun(call updateCall) bool {
	for _, img := range call.kept {
		if catalogClass(img, true) == "" && !catalogRuns(img, call.node, true) {
			return false
		}
	}
	return true
}

// keptImages: the catalog's entries of the images pod keeps when its first container's image
// is swapped (swap) or an ephemeral container is added: its init, other and ephemeral
// containers' and its image volumes'.
func keptImages(reg *registry.Registry, pod *v1.Pod, swap bool) []registry.Image {
	var refs []string
	for _, c := range pod.Spec.InitContainers {
		refs = append(refs, c.Image)
	}
	for i, c := range pod.Spec.Containers {
		if !swap || i > 0 {
			refs = append(refs, c.Image)
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		refs = append(refs, c.Image)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Image != nil {
			refs = append(refs, v.Image.Reference)
		}
	}
	var kept []registry.Image
	for _, ref := range refs {
		if img, found := catalogEntry(reg, ref); found {
			kept = append(kept, img)
		}
	}
	return kept
}

// catalogEntry is the catalog's entry of ref, spelt `repository:tag`, `repository:tag@digest`
// (the tag names it) or `repository@digest` (the entry of that repository and digest).
func catalogEntry(reg *registry.Registry, ref string) (registry.Image, bool) {
	name, digest, byDigest := strings.Cut(strings.TrimPrefix(ref, reg.Addr+"/"), "@")
	if img, found := reg.Catalog[name]; found || !byDigest {
		return img, found
	}
	for key, img := range reg.Catalog {
		if strings.HasPrefix(key, name+":") && img.Digest == digest {
			return img, true
		}
	}
	return registry.Image{}, false
}

// policyRefusal says whether err is the API server relaying the policy's refusal (its message).
func policyRefusal(err error) bool {
	return (apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || apierrors.IsInvalid(err)) &&
		strings.Contains(err.Error(), "image-arch-affinity: ")
}

// updateCounts are what afterAdmission did: calls made, judged verdicts and what was counted
// apart, per kind.
type updateCounts struct {
	sampled, bound int
	made           map[string]int
	verdicts       map[string]map[string]int
	apart          map[string]map[string]int
	// outcomesApart: accepted or refused, of the calls counted apart.
	outcomesApart map[string]int
	// settingsRunsOnNode: static refusals of an image the bound Node runs (the settings'
	// contract: another platform the Pod admits lacks it).
	settingsRunsOnNode int
}

// imagePools are the catalog's images to draw new images from: the generated ones (gen/: every
// Linux subset of five architectures, Windows builds alone and with Linux, single images), and
// the other fixtures (drawn one time in eight: WebAssembly, artifacts, odd values, nested).
func imagePools(reg *registry.Registry) (generated, others []string) {
	for name := range reg.Catalog {
		if strings.HasPrefix(name, "gen/") {
			generated = append(generated, name)
		} else {
			others = append(others, name)
		}
	}
	sort.Strings(generated)
	sort.Strings(others)
	return generated, others
}

// drawNew draws a catalog image none of pod's containers, init containers and ephemeral
// containers runs, nor one of avoid.
func drawNew(rng *rand.Rand, reg *registry.Registry, generated, others []string, pod *v1.Pod, avoid ...string) string {
	runs := slices.Clone(avoid)
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		runs = append(runs, c.Image)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		runs = append(runs, c.Image)
	}
	for {
		pool := generated
		if rng.IntN(8) == 0 {
			pool = others
		}
		if ref := reg.Ref(pool[rng.IntN(len(pool))]); !slices.Contains(runs, ref) {
			return ref
		}
	}
}

// afterAdmission makes kubectl debug's call and an image swap on up to maxUpdated bound Pods
// (a sample drawn from the seed) and judges each answer (judgeCall).
func afterAdmission(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, reg *registry.Registry, s *settings.Settings, pods []v1.Pod) updateCounts {
	n := updateCounts{made: map[string]int{}, outcomesApart: map[string]int{},
		verdicts: map[string]map[string]int{callDebug: {}, callSwap: {}}, apart: map[string]map[string]int{callDebug: {}, callSwap: {}}}
	list, err := cp.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*v1.Node{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	var bound []string
	namespace := map[string]string{}
	for _, pod := range pods {
		if pod.Spec.NodeName != "" {
			bound = append(bound, pod.Name)
			namespace[pod.Name] = pod.Namespace
		}
	}
	sort.Strings(bound)
	n.bound = len(bound)
	rng := rand.New(rand.NewPCG(seed, 0x61667465722d6164)) // "after-ad"
	rng.Shuffle(len(bound), func(i, j int) { bound[i], bound[j] = bound[j], bound[i] })
	bound = bound[:min(len(bound), maxUpdated)]
	n.sampled = len(bound)
	generated, others := imagePools(reg)

	for i, name := range bound {
		pods := cp.Client.CoreV1().Pods(namespace[name])
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			n.apart[callDebug][apartGone]++
			n.apart[callSwap][apartGone]++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if node := byName[pod.Spec.NodeName]; node != nil {
			// What the Pod's kubelet would report: the policy reads it after admission.
			pod.Status = property.KubeletStatus(pod, func(ref string) bool {
				img, found := catalogEntry(reg, ref)
				return found && catalogRuns(img, node, true)
			})
			if pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("status of Pod %s: %v", name, err)
			}
		}
		debugImage := drawNew(rng, reg, generated, others, pod)
		swapImage := drawNew(rng, reg, generated, others, pod, debugImage)
		changes := []struct {
			kind, ref string
			apply     func(pod *v1.Pod) error
		}{
			{callDebug, debugImage, func(pod *v1.Pod) error {
				pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, v1.EphemeralContainer{
					EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: fmt.Sprintf("debugger-%d", i), Image: debugImage, Stdin: true, TTY: true},
					TargetContainerName:      pod.Spec.Containers[0].Name,
				})
				_, err := pods.UpdateEphemeralContainers(ctx, name, pod, metav1.UpdateOptions{})
				return err
			}},
			{callSwap, swapImage, func(pod *v1.Pod) error {
				pod.Spec.Containers[0].Image = swapImage
				_, err := pods.Update(ctx, pod, metav1.UpdateOptions{})
				return err
			}},
		}
		for _, change := range changes {
			// Any error but the policy's refusal (a conflict with a controller's write): once
			// more from a fresh Get.
			var before *v1.Pod
			var err error
			for attempt := 0; attempt < 2; attempt++ {
				if before, err = pods.Get(ctx, name, metav1.GetOptions{}); err != nil {
					break
				}
				if err = change.apply(before.DeepCopy()); err == nil || policyRefusal(err) {
					break
				}
			}
			if apierrors.IsNotFound(err) {
				n.apart[change.kind][apartGone]++
				continue
			}
			if err != nil && !policyRefusal(err) {
				t.Errorf("%s of Pod %s (new image %s): %v", change.kind, name, change.ref, err)
				continue
			}
			n.made[change.kind]++
			image, found := reg.Catalog[strings.TrimPrefix(change.ref, reg.Addr+"/")]
			call := updateCall{kind: change.kind, pod: before, node: byName[before.Spec.NodeName], ref: change.ref, img: image, found: found,
				kept: keptImages(reg, before, change.kind == callSwap)}
			if call.node == nil {
				t.Fatalf("Pod %s is bound to %s, which is not a Node of the cluster", name, before.Spec.NodeName)
			}
			message := ""
			if err != nil {
				message = err.Error()
			}
			verdict, apart, failure := judgeCall(s, call, err != nil, message)
			switch {
			case failure != "":
				spec, _ := json.Marshal(before.Spec)
				t.Errorf("%s\n\tthe Pod's spec before: %s", failure, spec)
			case apart != "":
				n.apart[change.kind][apart]++
				n.outcomesApart[map[bool]string{true: "refused", false: "accepted"}[err != nil]]++
			default:
				n.verdicts[change.kind][verdict]++
				if verdict == verdictSettings && catalogRuns(image, call.node, s.PinWindowsBuild || s.ReadNodes) {
					n.settingsRunsOnNode++
				}
			}
		}
	}
	for _, kind := range []string{callDebug, callSwap} {
		v := n.verdicts[kind]
		report.Line("k8s-e2e", "after admission, %s on %d of %d bound Pods: %d calls; accepted %d (the bound Node runs the new image), refused %d (readNodes: the bound Node runs it not), refused by the settings' contract %d (static: the message names the new image); counted apart %s",
			kind, n.sampled, n.bound, n.made[kind], v[verdictAccepted], v[verdictRefused], v[verdictSettings], apartText(n.apart[kind]))
	}
	report.Line("k8s-e2e", "after admission: of the calls counted apart, accepted %d, refused %d; of the refusals by the settings' contract, the bound Node runs the new image in %d (another platform the Pod admits lacks it)",
		n.outcomesApart["accepted"], n.outcomesApart["refused"], n.settingsRunsOnNode)
	return n
}

// apartText is reasons with their counts, sorted.
func apartText(reasons map[string]int) string {
	if len(reasons) == 0 {
		return "none"
	}
	out := make([]string, 0, len(reasons))
	for reason, count := range reasons {
		out = append(out, fmt.Sprintf("%d: %s", count, reason))
	}
	sort.Strings(out)
	return "[" + strings.Join(out, "; ") + "]"
}

// Minimums after admission (asserted from minimumsFrom objects up, as counts.assertMinimums).
// With 30 Pods sampled, K8S_E2E_SEED 1, 42, 2026, 123456789 and 9751824112567513266 gave 30
// calls of each kind; judged acceptances of each kind static 3-7, readNodes 10-16; judged
// refusals of each kind on the bound Node with readNodes 12-17, else by the settings' contract
// 20-25. With 60 sampled (9751824112567513266): static acceptances 7 and 5 of 60 (about 10%), so
// under static settings the acceptances of both kinds together are asserted (fewer than 2 of
// about 110 calls at 10%: about one run in 8,000; of one kind alone, one run in 50).
const (
	minUpdateCalls    = 15
	minUpdateAccepted = 2
	minUpdateRefused  = 7
)

// assertMinimums fails a vacuous run after admission.
func (n updateCounts) assertMinimums(t *testing.T, objects int, readNodes bool) {
	if objects < minimumsFrom {
		report.Line("k8s-e2e", "after admission: minimums not asserted: %d objects, fewer than %d", objects, minimumsFrom)
		return
	}
	refused := verdictSettings
	if readNodes {
		refused = verdictRefused
	}
	for _, kind := range []string{callDebug, callSwap} {
		if n.made[kind] < minUpdateCalls {
			t.Errorf("vacuous run after admission: %d %s calls made, want at least %d", n.made[kind], kind, minUpdateCalls)
		}
		if got := n.verdicts[kind][verdictAccepted]; readNodes && got < minUpdateAccepted {
			t.Errorf("vacuous run after admission: %s accepted %d times (judged), want at least %d", kind, got, minUpdateAccepted)
		}
		if got := n.verdicts[kind][refused]; got < minUpdateRefused {
			t.Errorf("vacuous run after admission: %s %s %d times, want at least %d", kind, refused, got, minUpdateRefused)
		}
	}
	if got := n.verdicts[callDebug][verdictAccepted] + n.verdicts[callSwap][verdictAccepted]; !readNodes && got < minUpdateAccepted {
		t.Errorf("vacuous run after admission: %d acceptances judged of both kinds, want at least %d", got, minUpdateAccepted)
	}
	report.Line("k8s-e2e", "after admission, minimums: calls %d/%d (min %d each), accepted %d/%d (min %d each with readNodes, of both kinds without), %s %d/%d (min %d each)",
		n.made[callDebug], n.made[callSwap], minUpdateCalls, n.verdicts[callDebug][verdictAccepted], n.verdicts[callSwap][verdictAccepted], minUpdateAccepted,
		refused, n.verdicts[callDebug][refused], n.verdicts[callSwap][refused], minUpdateRefused)
}
