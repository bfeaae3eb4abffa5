package property

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/karpenter"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/registry"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/settings"
)

var (
	// nodeArches are the architectures of the generated clusters' Linux nodes.
	nodeArches = []string{"amd64", "arm64", "arm", "ppc64le", "s390x"}
	// everyArch are the architectures the policy knows (Go's GOARCH names, its
	// platform::KNOWN_ARCHITECTURES): where no setting says which nodes exist, a node of each may.
	everyArch = []string{"386", "amd64", "arm", "arm64", "loong64", "mips", "mips64", "mips64le", "mipsle", "ppc64",
		"ppc64le", "riscv64", "s390x", "wasm"}
	// windowsBuilds are the builds of the generated Windows nodes (and of the gen/windows-*
	// images: 10.0.17763.x, 10.0.20348.x, 10.0.26100.x).
	windowsBuilds = []string{"10.0.17763", "10.0.20348", "10.0.26100"}
	zones         = []string{"a", "b"}
	// armTaint is how GKE taints arm64 nodes; windowsTaint how AKS and EKS guides taint Windows
	// nodes; gpuTaint a dedicated pool.
	armTaint     = v1.Taint{Key: archLabel, Value: "arm64", Effect: v1.TaintEffectNoSchedule}
	windowsTaint = v1.Taint{Key: "os", Value: "windows", Effect: v1.TaintEffectNoSchedule}
	gpuTaint     = v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoExecute}
	spotTaint    = v1.Taint{Key: "spot", Value: "true", Effect: v1.TaintEffectPreferNoSchedule}
)

// Case is one (cluster, Pod or workload) pair and the policy's settings.
type Case struct {
	Nodes    []v1.Node
	Settings settings.Settings
	Kind     string
	// Object is the Pod or workload as the request carries it.
	Object any
	// Template is the Pod (or the workload's Pod template, as a Pod) the judge reads.
	Template *v1.Pod
	// NodePools are Karpenter's NodePools of the cluster (readNodes; pools.go).
	NodePools []karpenter.Pool
	images    map[string]image
	// probes of each OS, made once (see probes).
	probes map[string][]v1.Node
	// poolArches of each OS, read once (see poolArches).
	poolArches map[string][]string
	// afterAdmission: the Pod is judged on an UPDATE (its new images are not pinned).
	afterAdmission bool
	// gatedPin: a gated Pod's UPDATE pinned as on CREATE: Karpenter reads the Pod only once its
	// gates are removed, so no NodePool counts for one its provisioner ignores
	// (ignoredByKarpenter), as for a Pod being created.
	gatedPin bool
	// Update: a Pod case that, once admitted, is updated (update.go); nil: none.
	Update *updatePlan
	// WorkloadUpdate: a workload case that, once admitted, is updated (workload_update.go).
	WorkloadUpdate bool
	// Old: the workload as stored, for the UPDATE of it Object is (workload_update.go); nil: a
	// CREATE.
	Old json.RawMessage
	// Virtual: a virtual-kubelet Node of the cluster besides Nodes (virtualNode); nil: none.
	Virtual *v1.Node
}

func (c *Case) readNodes() bool { return c.Settings.ReadNodes }

// clusterNodes are the cluster's Nodes: Nodes, and the virtual-kubelet one.
func (c *Case) clusterNodes() []v1.Node {
	if c.Virtual == nil {
		return c.Nodes
	}
	return append(slices.Clone(c.Nodes), *c.Virtual)
}

func (c *Case) schedulable() []string { return c.Settings.SchedulableArchitectures }

func (c *Case) pools(os string) []string { return c.Settings.Pools(os) }

func (c *Case) defaultOS() string { return c.Settings.DefaultOS() }

func (c *Case) wasmRuntimeClasses() []string { return c.Settings.WasmRuntimeClasses }

// builds says whether a Windows Node's OS build counts: a process-isolated container runs only
// on a Node of its image's build (the kubelet's runtime refuses it elsewhere). The policy keeps a
// Pod to its images' builds under pinWindowsBuild, and with readNodes (docs/windows.md; the
// generated Pods name no RuntimeClass of Hyper-V isolation); elsewhere builds are outside its
// contract.
func (c *Case) builds() bool { return c.Settings.PinWindowsBuild || c.Settings.ReadNodes }

// templateMode is how the policy treats the case's object: "pod", or a workload's "validate" or
// "mutate".
func (c *Case) templateMode() string {
	switch c.Kind {
	case "Pod":
		return "pod"
	case "DaemonSet":
		if c.Settings.DaemonSetTemplates == "mutate" {
			return "mutate"
		}
	}
	if c.Settings.WorkloadTemplates == "mutate" {
		return "mutate"
	}
	return "validate"
}

// drawNode draws a Node; untaintedWindows: an untainted Windows one.
func drawNode(t *rapid.T, index int, untaintedWindows bool) v1.Node {
	windows := untaintedWindows || chance(t, "windows", 10)
	os, arch, winBuild := "linux", rapid.SampledFrom(nodeArches).Draw(t, "arch"), ""
	if windows {
		os, arch, winBuild = "windows", "amd64", rapid.SampledFrom(windowsBuilds).Draw(t, "build")
		// Windows on Arm: one Windows Node in four (the control plane has windows-arm64-1). Of
		// the catalog only multi/empty-os (an empty os) and WebAssembly images run there.
		if chance(t, "windows arm64", 4) {
			arch = "arm64"
		}
	}
	name := fmt.Sprintf("%s-%s-%d", os, arch, index)
	labels := map[string]string{
		archLabel: arch, osLabel: os, hostLabel: name,
		zoneLabel: rapid.SampledFrom(zones).Draw(t, "zone"),
	}
	if !chance(t, "no beta labels", 3) {
		labels[betaArchLabel], labels[betaOSLabel] = arch, os
	}
	if tier := rapid.IntRange(0, 3).Draw(t, "tier"); tier > 0 {
		labels["tier"] = fmt.Sprint(tier)
	}
	if windows {
		labels[buildLabel] = winBuild
	}
	var taints []v1.Taint
	if arch == "arm64" && !windows && rapid.Bool().Draw(t, "gke arm64 taint") {
		taints = append(taints, armTaint)
	}
	if windows && !untaintedWindows && !chance(t, "windows untainted", 5) {
		taints = append(taints, windowsTaint)
	}
	for _, taint := range []v1.Taint{gpuTaint, spotTaint} {
		if chance(t, "taint "+taint.Key, 10) {
			taints = append(taints, taint)
		}
	}
	node := v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{Taints: taints}}
	node.Status = v1.NodeStatus{
		Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"}},
		NodeInfo:   v1.NodeSystemInfo{Architecture: arch, OperatingSystem: os},
		Capacity:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110")},
	}
	node.Status.Allocatable = node.Status.Capacity
	// Cordoned (spec.unschedulable, with the taint the node lifecycle controller adds) or NotReady
	// (its not-ready taint), one time in twelve each: the policy counts them like the others
	// (docs/node-aware.md: cordons come and go); the taint filter keeps Pods off them unless
	// they tolerate it (the blanket Exists toleration).
	if chance(t, "cordoned", 12) {
		node.Spec.Unschedulable = true
		node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule})
	}
	if chance(t, "not ready", 12) {
		node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady"}}
		node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule})
	}
	return node
}

// drawCluster draws 1 to 6 Nodes; one time in six a cluster of several Nodes ends with an
// untainted Windows one, so that Pods that state no OS whose images run on both OSes are judged
// on the Nodes of both (an untainted Windows Node is otherwise one in fifty).
func drawCluster(t *rapid.T) []v1.Node {
	count := rapid.IntRange(1, 6).Draw(t, "nodes")
	if chance(t, "a large cluster", 20) {
		count = rapid.IntRange(7, 50).Draw(t, "nodes of a large cluster")
	}
	nodes := make([]v1.Node, count)
	windows := count > 1 && chance(t, "an untainted Windows Node", 6)
	for i := range nodes {
		nodes[i] = drawNode(t, i, windows && i == count-1)
	}
	return nodes
}

// untaintedWindows says whether nodes have a Windows Node with no taint.
func untaintedWindows(nodes []v1.Node) bool {
	return slices.ContainsFunc(nodes, func(n v1.Node) bool { return n.Labels[osLabel] == "windows" && len(n.Spec.Taints) == 0 })
}

// chance draws true one time in n; false is the simpler case the shrinker moves to.
func chance(t *rapid.T, label string, n int) bool {
	return rapid.IntRange(0, n-1).Draw(t, label) == n-1
}

func subset(t *rapid.T, from []string, label string) []string {
	var out []string
	for _, value := range from {
		if rapid.Bool().Draw(t, label+" "+value) {
			out = append(out, value)
		}
	}
	if len(out) == 0 {
		out = []string{rapid.SampledFrom(from).Draw(t, label)}
	}
	return out
}

// drawSettings draws settings that describe the cluster truthfully: readNodes, or
// schedulableArchitectures listing its nodes' architectures exactly, or none (any); without
// readNodes, clusterOperatingSystems listing its nodes' OSes (and defaultOperatingSystem).
func drawSettings(t *rapid.T, nodes []v1.Node, reg *registry.Registry) settings.Settings {
	var s settings.Settings
	switch rapid.SampledFrom([]string{"any", "schedulableArchitectures", "readNodes"}).Draw(t, "architectures from") {
	case "readNodes":
		s.ReadNodes = true
		if chance(t, "autoscaled", 4) {
			s.AutoscaledArchitectures = []settings.AutoscaledPools{{OS: "linux", Architectures: subset(t, nodeArches, "pool")}}
		}
	case "schedulableArchitectures":
		var arches []string
		for _, node := range nodes {
			arches = appendNew(arches, node.Labels[archLabel])
		}
		slices.Sort(arches)
		s.SchedulableArchitectures = arches
	}
	// Settings that name architectures name schedulable ones (the policy refuses others at load).
	allowed := nodeArches[:2]
	if list := s.SchedulableArchitectures; len(list) > 0 {
		allowed = list[:min(2, len(list))]
	}
	s.OnNoCommonArchitecture = rapid.SampledFrom([]string{"reject", "reject", "reject", "reject", "accept"}).Draw(t, "onNoCommonArchitecture")
	s.OnLookupFailure = rapid.SampledFrom([]string{"ignoreImage", "ignoreImage", "ignoreImage", "accept", "reject"}).Draw(t, "onLookupFailure")
	if s.OnLookupFailure == "ignoreImage" && chance(t, "fallback", 10) {
		s.FallbackArchitectures = subset(t, allowed, "fallback")
	}
	if chance(t, "imagePlatforms", 4) {
		s.ImagePlatforms = []settings.ImagePlatforms{{Image: reg.Addr + "/legacy/*", Architectures: subset(t, nodeArches, "legacy")}}
		if chance(t, "imagePlatforms operatingSystems", 2) {
			s.ImagePlatforms[0].OperatingSystems = rapid.SampledFrom([][]string{{"linux"}, {"windows"}, {"linux", "windows"}, {"windows", "linux"}}).Draw(t, "legacy OSes")
		}
	}
	if chance(t, "registryMirrors", 4) {
		// A registry host no DNS resolves, mirrored to the fixture registry; half the time Docker
		// Hub too, so that Pods may name images by short name (spell), and otherwise a second
		// such host mirrored with a path prefix, as a Harbor proxy project is (prefixedHost: no
		// draw of its own, so that the other draws of a seed stay as they were).
		s.RegistryMirrors = map[string]string{mirrorHost: reg.Addr}
		if rapid.Bool().Draw(t, "Docker Hub mirrored") {
			s.RegistryMirrors["docker.io"] = reg.Addr
		} else {
			s.RegistryMirrors[prefixedHost] = reg.Addr + "/" + mirrorPrefix
		}
	}
	if chance(t, "lookupBudgetMilliseconds", 4) {
		// Budgets the fixture registry's lookups fit in (a smaller one makes lookups fail by
		// timing, which the judge cannot know).
		s.LookupBudgetMilliseconds = ptr.To(rapid.SampledFrom([]int64{1500, 6000, 30000}).Draw(t, "lookupBudgetMilliseconds"))
	}
	if chance(t, "preferred", 5) {
		for i, arch := range subset(t, allowed, "preferred") {
			s.PreferredArchitectures = append(s.PreferredArchitectures, settings.WeightedArchitecture{Architecture: arch, Weight: int64(80 - 60*i)})
		}
	}
	if chance(t, "tolerations", 3) {
		s.ArchitectureTolerations = map[string][]v1.Toleration{"arm64": {{Key: archLabel, Operator: v1.TolerationOpEqual, Value: "arm64", Effect: v1.TaintEffectNoSchedule}}}
	}
	if chance(t, "matchNodeLabels", 2) {
		s.MatchNodeLabels = []string{zoneLabel}
	}
	if chance(t, "pinWindowsBuild", 5) {
		s.PinWindowsBuild = true
	}
	if chance(t, "wasmRuntimeClasses", 2) {
		s.WasmRuntimeClasses = []string{wasmRuntimeClass}
	}
	s.WorkloadTemplates = rapid.SampledFrom([]string{"validate", "mutate", "mutate"}).Draw(t, "workloadTemplates")
	s.DaemonSetTemplates = rapid.SampledFrom([]string{"validate", "mutate"}).Draw(t, "daemonSetTemplates")
	if chance(t, "windows default", 20) {
		s.DefaultOperatingSystem = "windows"
	}
	if !s.ReadNodes {
		s.ClusterOperatingSystems = drawClusterOperatingSystems(t, nodes, s.DefaultOS())
	}
	return s
}

// drawClusterOperatingSystems draws clusterOperatingSystems (static settings) as the cluster has
// them: the OSes of its nodes and defaultOS (the policy refuses a list without it), in a drawn
// order; omitted half the time when that is one OS ("the Pods' own only": the judge does not
// judge a Pod of another OS on such a cluster's nodes, see skipNoNodeHere).
func drawClusterOperatingSystems(t *rapid.T, nodes []v1.Node, defaultOS string) []string {
	oses := []string{defaultOS}
	for _, node := range nodes {
		oses = appendNew(oses, node.Labels[osLabel])
	}
	if len(oses) == 1 && rapid.Bool().Draw(t, "clusterOperatingSystems omitted") {
		return nil
	}
	if len(oses) > 1 && rapid.Bool().Draw(t, "clusterOperatingSystems reversed") {
		slices.Reverse(oses)
	}
	return oses
}

// imagePool is what a container's image is drawn from: every generated image, the e2e fixtures
// the host reads (an OCI index with attestations, a Docker list, single images, Windows,
// values no node reports), an image the registry does not have, imagePlatforms images, an
// OLM bundle (data only, built on amd64), and indexes that nest indexes (2 deep, and 4: the
// policy follows 3).
func imagePool(reg *registry.Registry) []string {
	var pool []string
	for name := range reg.Catalog {
		if strings.HasPrefix(name, "gen/") {
			pool = append(pool, name)
		}
	}
	slices.Sort(pool)
	return append(pool, "multi/oci-index:1.0", "multi/docker-list:1.0", "single/arm64-oci:1.0",
		"single/amd64-docker:1.0", "single/armv7:1.0", "multi/windows-linux:1.0", "multi/windows-only:1.0",
		"multi/s390x-only:1.0", "multi/odd-values:1.0", "multi/windows-odd-build:1.0",
		"missing/image:1.0", "legacy/app:1.0", "legacy/tool:2.0", "single/olm-bundle:1.0",
		"nested/index:1.0", "nested/too-deep:1.0")
}

// bothOSesPool is what every image of a Pod is drawn from one time in four on a cluster with an
// untainted Windows Node (one time in twelve elsewhere): the images that run on Linux and on
// Windows, an index of Windows builds and linux/amd64 (multi/windows-linux), those of Windows
// builds with linux/amd64 and arm64 (gen/windows-<builds>-linux-amd64-arm64), and an index whose
// entries' os is the empty string, which counts for every OS (multi/empty-os; multi/no-os, whose
// entries have no os field, is an index the host cannot parse: a failed lookup).
func bothOSesPool(reg *registry.Registry) []string {
	var pool []string
	for name := range reg.Catalog {
		if name == "multi/windows-linux:1.0" || name == "multi/empty-os:1.0" ||
			strings.HasPrefix(name, "gen/windows-") && strings.Contains(name, "-linux-") {
			pool = append(pool, name)
		}
	}
	slices.Sort(pool)
	return pool
}

// legacyImages are the images imagePlatforms configures (the registry has none of them).
var legacyImages = []string{"legacy/app:1.0", "legacy/tool:2.0"}

// webAssemblyImages are the WebAssembly images (an index with native builds twice): drawn one
// time in eight, so that Pods of them alone, and mixed indexes under RuntimeClasses, come up.
var webAssemblyImages = []string{"wasm/single:1.0", "wasm/index:1.0", "wasm/native-wasm:1.0", "wasm/native-wasm:1.0", spinArtifact}

// spinArtifact is the fixture of a Spin application: an artifact whose config names no
// platform, which the policy knows for WebAssembly by its config media type.
const spinArtifact = "wasm/spin:1.0"

// wasmRuntimeClass is the RuntimeClass of a WebAssembly shim that Pods name and
// wasmRuntimeClasses lists (when drawn); runc is one that is never listed.
const wasmRuntimeClass = "wasmtime-spin-v2"

// RuntimeClasses are the RuntimeClasses generated Pods name, with their handlers: a cluster the
// Pods are created in must have them (the API server's RuntimeClass admission plugin refuses a
// Pod naming one it lacks).
var RuntimeClasses = map[string]string{wasmRuntimeClass: "spin", "runc": "runc"}

// hostile are the images whose index entries carry values no node reports (a space, selector
// syntax, 64 characters, an unknown name; a Windows os.version with selector syntax): drawn one
// time in eight, so that Pods made of them alone come up.
var hostile = []string{"multi/odd-values:1.0", "multi/windows-odd-build:1.0"}

func drawImage(t *rapid.T, c *Case, reg *registry.Registry, pool []string) string {
	from := pool
	switch {
	case chance(t, "hostile image", 8):
		from = hostile
	case chance(t, "WebAssembly image", 8):
		from = webAssemblyImages
	case len(c.Settings.ImagePlatforms) > 0 && chance(t, "imagePlatforms image", 4):
		// Configured images one time in four where the settings configure some (their OS
		// counts where the cluster has an untainted Windows Node).
		from = legacyImages
	}
	return useImage(t, c, reg, rapid.SampledFrom(from).Draw(t, "image"))
}

// useImage spells the catalog image name (spell; the legacy images keep the registry's address)
// and records what the judge knows of it. It returns the reference.
func useImage(t *rapid.T, c *Case, reg *registry.Registry, name string) string {
	ref := reg.Ref(name)
	if !strings.HasPrefix(name, "legacy/") {
		// imagePlatforms' pattern names the registry's address: legacy images keep it.
		ref = spell(t, c, reg, name)
	}
	img := image{ref: ref}
	switch {
	case strings.HasPrefix(name, "legacy/"):
		if platforms := c.Settings.ImagePlatforms; len(platforms) > 0 {
			img.configured = platforms[0].Architectures
			img.configuredOS = platforms[0].OperatingSystems
			if len(img.configuredOS) == 0 {
				img.configuredOS = []string{c.Settings.DefaultOS()}
			}
		} else {
			img.missing = true
		}
	case name == "missing/image:1.0":
		img.missing = true
	case !strings.Contains(ref, "/"):
		// A single name: the registry's library/ copy is what is looked up.
		img = catalogImage(reg, officialName(name))
		img.ref = ref
	default:
		img = catalogImage(reg, name)
		img.ref = ref
	}
	c.images[ref] = img
	return ref
}

// mirrorHost is a registry host registryMirrors maps to the fixture registry: no DNS resolves it
// (.invalid).
const mirrorHost = "mirror.invalid"

// prefixedHost is mirrored, where Docker Hub is not, to the fixture registry with the path prefix
// mirrorPrefix, its gen/ repositories: prefixed.invalid/<name> is the registry's gen/<name>.
const (
	prefixedHost = "prefixed.invalid"
	mirrorPrefix = "gen"
)

// spell writes the catalog image name (`repository:tag`) as Pods write references: in the
// registry by tag (most often), by digest (the catalog's), by tag and digest, and, where the
// settings mirror them to the registry (registryMirrors), on mirrorHost (prefixedHost for one
// under gen/ where the settings have it) or as a Docker Hub short name (`repository:tag`, which
// is docker.io's) or, for an image the registry also keeps as an official one (officialName), a
// single name (`name:tag`, docker.io/library/'s). The judge knows each spelling for the image it
// names (Case.images).
func spell(t *rapid.T, c *Case, reg *registry.Registry, name string) string {
	repository, tag, _ := strings.Cut(name, ":")
	digest := reg.Catalog[name].Digest
	spellings := []string{"tag", "tag", "tag", "tag"}
	if digest != "" {
		spellings = append(spellings, "digest", "tag and digest")
	}
	if _, mirrored := c.Settings.RegistryMirrors[mirrorHost]; mirrored {
		spellings = append(spellings, "mirror", "mirror")
	}
	if _, mirrored := c.Settings.RegistryMirrors["docker.io"]; mirrored {
		spellings = append(spellings, "short name", "short name")
		if _, official := reg.Catalog[officialName(name)]; official {
			spellings = append(spellings, "single name", "single name")
		}
	}
	switch rapid.SampledFrom(spellings).Draw(t, "spelling") {
	case "digest":
		return reg.Addr + "/" + repository + "@" + digest
	case "tag and digest":
		return reg.Addr + "/" + repository + ":" + tag + "@" + digest
	case "mirror":
		// Through the prefixed mirror where the settings have it and the image is under its
		// prefix.
		if rest, ok := strings.CutPrefix(name, mirrorPrefix+"/"); ok && c.Settings.RegistryMirrors[prefixedHost] != "" {
			return prefixedHost + "/" + rest
		}
		return mirrorHost + "/" + name
	case "short name":
		return name
	case "single name":
		return strings.TrimPrefix(name, "gen/")
	}
	return reg.Ref(name)
}

// officialName is where the registry keeps gen/<name> as Docker Hub keeps an official image
// (library/<name>): a single-name reference <name> means docker.io/library/<name>, which a
// registryMirrors entry for docker.io maps to the fixture registry (seed-registry's library/
// copies of gen/linux-<arches> and gen/single-<os>-<arch>).
func officialName(name string) string {
	return "library/" + strings.TrimPrefix(name, "gen/")
}

// artifacts are the registry's artifacts with no platform (a Helm chart; a CNCF ModelPack model;
// an OCI 1.1 artifact with artifactType and the empty config): what image volumes mount.
var artifacts = []string{"artifacts/helm-chart:1.0", "artifacts/model:1.0", "artifacts/dataset:1.0"}

// dockerImages are the registry's single-platform Docker schema 2 images (a Docker image config,
// as `docker build` without BuildKit pushes them): what image volumes mount one time in six.
var dockerImages = []string{"single/amd64-docker:1.0", "gen/single-linux-arm64:1.0", "gen/single-linux-s390x:1.0"}

// pullPolicies are an image volume's: unset (the API server defaults it) or each value.
var pullPolicies = []v1.PullPolicy{"", v1.PullAlways, v1.PullIfNotPresent, v1.PullNever}

// drawVolumes gives spec 1 or 2 image volumes (vol1, vol2), each of an image drawn as a
// container's (drawImage), a Docker schema 2 image, an artifact with no platform, or the image of
// one of its containers;
// a container mounts some of them. One time in eight an init container runs an artifact a volume
// mounts (not a container image: its lookup fails).
func drawVolumes(t *rapid.T, c *Case, reg *registry.Registry, pool []string, spec *v1.PodSpec) {
	var mounted []string
	count := rapid.IntRange(1, 2).Draw(t, "image volumes")
	for i := 1; i <= count; i++ {
		var ref string
		switch rapid.SampledFrom([]string{"image", "image", "docker image", "artifact", "artifact", "container"}).Draw(t, "volume of") {
		case "docker image":
			name := rapid.SampledFrom(dockerImages).Draw(t, "docker image")
			if _, ok := reg.Catalog[name]; !ok {
				t.Fatalf("the registry's catalog has no %s: rebuild seed-registry", name)
			}
			ref = useImage(t, c, reg, name)
		case "artifact":
			name := rapid.SampledFrom(artifacts).Draw(t, "artifact")
			if _, ok := reg.Catalog[name]; !ok {
				t.Fatalf("the registry's catalog has no %s: rebuild seed-registry", name)
			}
			ref = spell(t, c, reg, name)
			img := catalogImage(reg, name)
			img.ref = ref
			c.images[ref] = img
			mounted = append(mounted, ref)
		case "container":
			ref = rapid.SampledFrom(containerImages(&v1.Pod{Spec: *spec})).Draw(t, "container's image")
		default:
			ref = drawImage(t, c, reg, pool)
		}
		name := fmt.Sprintf("vol%d", i)
		spec.Volumes = append(spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{
			Reference: ref, PullPolicy: rapid.SampledFrom(pullPolicies).Draw(t, "pullPolicy")}}})
		if rapid.Bool().Draw(t, "mounted") {
			container := &spec.Containers[rapid.IntRange(0, len(spec.Containers)-1).Draw(t, "mounted by")]
			container.VolumeMounts = append(container.VolumeMounts, v1.VolumeMount{Name: name, MountPath: "/mnt/" + name,
				ReadOnly: rapid.Bool().Draw(t, "readOnly")})
		}
	}
	if len(mounted) > 0 && chance(t, "a container runs an artifact", 8) {
		spec.InitContainers = append(spec.InitContainers, v1.Container{Name: "init-artifact", Image: rapid.SampledFrom(mounted).Draw(t, "artifact run")})
	}
}

func requirement(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func drawExpression(t *rapid.T) v1.NodeSelectorRequirement {
	switch rapid.SampledFrom([]string{"arch", "arch", "arch", "beta arch", "beta arch", "os", "tier", "tier", "zone"}).Draw(t, "key") {
	case "arch":
		// DoesNotExist: a term for Nodes without the label (virtual-kubelet's), as the policy
		// itself writes beside a pin and reads again in a template it pinned.
		op := rapid.SampledFrom([]v1.NodeSelectorOperator{v1.NodeSelectorOpIn, v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn, v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist}).Draw(t, "op")
		if op == v1.NodeSelectorOpExists || op == v1.NodeSelectorOpDoesNotExist {
			return requirement(archLabel, op)
		}
		return requirement(archLabel, op, subset(t, nodeArches, "values")...)
	case "beta arch":
		// NotIn and DoesNotExist admit Nodes without the beta labels: drawn Nodes may lack them,
		// a NodePool's never do (its kubelet sets them, and Karpenter reads the beta key as the
		// stable one), and the virtual-kubelet Node has no architecture label at all. Drawn
		// often enough that the mutants only they reach are caught within 3,000 cases.
		op := rapid.SampledFrom([]v1.NodeSelectorOperator{v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn, v1.NodeSelectorOpDoesNotExist}).Draw(t, "beta op")
		if op == v1.NodeSelectorOpDoesNotExist {
			return requirement(betaArchLabel, op)
		}
		return requirement(betaArchLabel, op, subset(t, nodeArches, "values")...)
	case "os":
		return requirement(osLabel, v1.NodeSelectorOpIn, rapid.SampledFrom([]string{"linux", "linux", "windows"}).Draw(t, "os"))
	case "zone":
		return requirement(zoneLabel, v1.NodeSelectorOpIn, rapid.SampledFrom(zones).Draw(t, "zone"))
	}
	switch op := rapid.SampledFrom([]v1.NodeSelectorOperator{v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn, v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist, v1.NodeSelectorOpGt, v1.NodeSelectorOpLt}).Draw(t, "op"); op {
	case v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist:
		return requirement("tier", op)
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		return requirement("tier", op, fmt.Sprint(rapid.IntRange(0, 3).Draw(t, "bound")))
	default:
		return requirement("tier", op, subset(t, []string{"1", "2", "3"}, "values")...)
	}
}

func drawTerm(t *rapid.T, nodes []v1.Node) v1.NodeSelectorTerm {
	var term v1.NodeSelectorTerm
	for i := rapid.IntRange(0, 3).Draw(t, "expressions"); i > 0; i-- {
		term.MatchExpressions = append(term.MatchExpressions, drawExpression(t))
	}
	if len(term.MatchExpressions) == 0 || chance(t, "named node", 5) {
		names := []string{"other"}
		for _, node := range nodes {
			names = append(names, node.Name)
		}
		op := rapid.SampledFrom([]v1.NodeSelectorOperator{v1.NodeSelectorOpIn, v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn}).Draw(t, "field op")
		// The API server takes one value in a matchFields requirement.
		term.MatchFields = []v1.NodeSelectorRequirement{requirement("metadata.name", op, rapid.SampledFrom(names).Draw(t, "name"))}
	}
	return term
}

var tolerationPool = []v1.Toleration{
	{Key: archLabel, Operator: v1.TolerationOpEqual, Value: "arm64", Effect: v1.TaintEffectNoSchedule},
	{Key: "os", Operator: v1.TolerationOpEqual, Value: "windows", Effect: v1.TaintEffectNoSchedule},
	{Key: "dedicated", Operator: v1.TolerationOpExists},
	{Operator: v1.TolerationOpExists},
	// virtual-kubelet's taint, as Pods sent to AKS virtual nodes tolerate it.
	{Key: "virtual-kubelet.io/provider", Operator: v1.TolerationOpExists},
}

func drawPodSpec(t *rapid.T, c *Case, reg *registry.Registry) v1.PodTemplateSpec {
	pool := imagePool(reg)
	bothOSes := 12
	if untaintedWindows(c.Nodes) {
		bothOSes = 4
	}
	if chance(t, "images of both OSes", bothOSes) {
		pool = bothOSesPool(reg)
	}
	var spec v1.PodSpec
	for i := rapid.IntRange(1, 3).Draw(t, "containers"); i > 0; i-- {
		spec.Containers = append(spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", i), Image: drawImage(t, c, reg, pool)})
	}
	for i := rapid.IntRange(0, 4).Draw(t, "init containers") - 2; i > 0; i-- {
		spec.InitContainers = append(spec.InitContainers, v1.Container{Name: fmt.Sprintf("init%d", i), Image: drawImage(t, c, reg, pool)})
	}
	if chance(t, "image volumes", 3) {
		drawVolumes(t, c, reg, pool, &spec)
	}
	if chance(t, "nodeSelector", 3) {
		spec.NodeSelector = map[string]string{}
		if rapid.Bool().Draw(t, "selector arch") {
			spec.NodeSelector[archLabel] = rapid.SampledFrom(nodeArches).Draw(t, "selector arch value")
		}
		if chance(t, "selector os", 4) {
			spec.NodeSelector[osLabel] = rapid.SampledFrom([]string{"linux", "linux", "windows"}).Draw(t, "selector os value")
		}
		if chance(t, "selector zone", 4) {
			spec.NodeSelector[zoneLabel] = rapid.SampledFrom(zones).Draw(t, "selector zone value")
		}
	}
	var affinity v1.NodeAffinity
	if chance(t, "required", 2) {
		required := &v1.NodeSelector{}
		for i := rapid.IntRange(1, 3).Draw(t, "terms"); i > 0; i-- {
			required.NodeSelectorTerms = append(required.NodeSelectorTerms, drawTerm(t, c.Nodes))
		}
		affinity.RequiredDuringSchedulingIgnoredDuringExecution = required
	}
	if chance(t, "preferred", 5) {
		affinity.PreferredDuringSchedulingIgnoredDuringExecution = []v1.PreferredSchedulingTerm{{
			Weight:     int32(rapid.IntRange(1, 100).Draw(t, "weight")),
			Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{drawExpression(t)}},
		}}
	}
	if affinity.RequiredDuringSchedulingIgnoredDuringExecution != nil || affinity.PreferredDuringSchedulingIgnoredDuringExecution != nil {
		spec.Affinity = &v1.Affinity{NodeAffinity: &affinity}
	}
	for _, toleration := range tolerationPool {
		if chance(t, "toleration", 6) {
			spec.Tolerations = append(spec.Tolerations, toleration)
		}
	}
	if c.Virtual != nil && chance(t, "sent to the virtual node", 3) {
		sendToVirtualNode(t, &spec)
	}
	if chance(t, "runtimeClassName", 3) {
		spec.RuntimeClassName = ptr.To(rapid.SampledFrom([]string{wasmRuntimeClass, wasmRuntimeClass, "runc"}).Draw(t, "runtimeClassName"))
	}
	if chance(t, "spec.os", 7) {
		spec.OS = &v1.PodOS{Name: v1.OSName(rapid.SampledFrom([]string{"linux", "windows"}).Draw(t, "spec.os.name"))}
	}
	meta := metav1.ObjectMeta{Labels: map[string]string{}}
	if chance(t, "zone label", 2) {
		meta.Labels[zoneLabel] = rapid.SampledFrom(zones).Draw(t, "zone label value")
	}
	if chance(t, "preferred annotation", 10) {
		meta.Annotations = map[string]string{"image-arch-affinity.kubewarden.io/preferred-architecture": rapid.SampledFrom(nodeArches).Draw(t, "annotation")}
	}
	return v1.PodTemplateSpec{ObjectMeta: meta, Spec: spec}
}

var kinds = []string{"Pod", "Pod", "Pod", "Pod", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicaSet", "ReplicationController"}

// drawCase draws a cluster, settings, and a Pod or workload.
func drawCase(t *rapid.T, reg *registry.Registry) *Case {
	c := &Case{images: map[string]image{}}
	c.Nodes = drawCluster(t)
	c.Settings = drawSettings(t, c.Nodes, reg)
	// One case in two: before the object, which may be sent to it (drawPodSpec).
	if chance(t, "a virtual-kubelet Node", 2) {
		virtual := virtualNode()
		c.Virtual = &virtual
	}
	drawObject(t, c, reg, "judged")
	// What follows is drawn after the object, in this order: NodePools, the Pod UPDATEs, a Pod
	// created bound, a workload UPDATE.
	if c.readNodes() {
		c.NodePools = drawPools(t, c)
	}
	drawUpdatePlan(t, c, reg)
	// One Pod in ten created bound (bound.go).
	drawCreatedBound(t, c)
	// One workload in four updated (workload_update.go).
	drawWorkloadUpdatePlan(t, c)
	return c
}

// sendToVirtualNode sends spec to the virtual-kubelet Node as AKS documents it: its toleration,
// and its nodeSelector "type: virtual-kubelet" or, ORed with the Pod's own terms, a required term
// for the Nodes without an architecture label (kubernetes.io/arch DoesNotExist, or the policy's
// form beside a pin, which it reads again in a template it pinned: both keys).
func sendToVirtualNode(t *rapid.T, spec *v1.PodSpec) {
	virtual := tolerationPool[len(tolerationPool)-1]
	if !slices.Contains(spec.Tolerations, virtual) {
		spec.Tolerations = append(spec.Tolerations, virtual)
	}
	if rapid.Bool().Draw(t, "by nodeSelector") {
		if spec.NodeSelector == nil {
			spec.NodeSelector = map[string]string{}
		}
		spec.NodeSelector[typeLabel] = "virtual-kubelet"
		return
	}
	if spec.Affinity == nil {
		spec.Affinity = &v1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &v1.NodeAffinity{}
	}
	affinity := spec.Affinity.NodeAffinity
	if affinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		affinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{}
	}
	required := affinity.RequiredDuringSchedulingIgnoredDuringExecution
	term := v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{requirement(archLabel, v1.NodeSelectorOpDoesNotExist)}}
	// One time in two the policy's own form, on both keys.
	if rapid.Bool().Draw(t, "on both keys") {
		term.MatchExpressions = append(term.MatchExpressions, requirement(betaArchLabel, v1.NodeSelectorOpDoesNotExist))
	}
	required.NodeSelectorTerms = append(required.NodeSelectorTerms, term)
}

// virtualNode is a virtual-kubelet Node as its providers register it (AKS virtual nodes on Azure
// Container Instances): no kubernetes.io/arch nor kubernetes.io/os label (the beta OS label
// only), the provider's taint, and a kubelet status of amd64 whatever runs its Pods. Its Pods run
// elsewhere: which platforms is the provider's business (docs/node-aware.md).
func virtualNode() v1.Node {
	name := "virtual-node-aci-linux"
	return v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			typeLabel: "virtual-kubelet", "kubernetes.io/role": "agent", betaOSLabel: "linux", hostLabel: name}},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "virtual-kubelet.io/provider", Value: "azure", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{
			NodeInfo:   v1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
}

// Object draws a Pod or workload called name (its Pods labelled app=<name>) for the cluster of
// nodes under settings: the objects k8s-judge's control plane applies.
func Object(reg *registry.Registry, nodes []v1.Node, settings settings.Settings, name string) *rapid.Generator[*Case] {
	return rapid.Custom(func(t *rapid.T) *Case {
		c := &Case{images: map[string]image{}, Nodes: nodes, Settings: settings}
		drawObject(t, c, reg, name)
		return c
	})
}

// drawObject draws c's kind and Pod or workload.
func drawObject(t *rapid.T, c *Case, reg *registry.Registry, name string) {
	c.Kind = rapid.SampledFrom(kinds).Draw(t, "kind")
	template := drawPodSpec(t, c, reg)
	template.Labels["app"] = name
	c.Template = &v1.Pod{ObjectMeta: template.ObjectMeta, Spec: template.Spec}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	meta := metav1.ObjectMeta{Name: name, Namespace: "default"}
	switch c.Kind {
	case "Pod":
		pod := v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: template.ObjectMeta, Spec: template.Spec}
		pod.Name, pod.Namespace = meta.Name, meta.Namespace
		c.Object = pod
	case "Deployment":
		c.Object = appsv1.Deployment{TypeMeta: typeMeta("apps/v1", c.Kind), ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: selector, Template: template}}
	case "StatefulSet":
		c.Object = appsv1.StatefulSet{TypeMeta: typeMeta("apps/v1", c.Kind), ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Selector: selector, Template: template}}
	case "DaemonSet":
		c.Object = appsv1.DaemonSet{TypeMeta: typeMeta("apps/v1", c.Kind), ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: selector, Template: template}}
	case "ReplicaSet":
		c.Object = appsv1.ReplicaSet{TypeMeta: typeMeta("apps/v1", c.Kind), ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Selector: selector, Template: template}}
	case "ReplicationController":
		c.Object = v1.ReplicationController{TypeMeta: typeMeta("v1", c.Kind), ObjectMeta: meta, Spec: v1.ReplicationControllerSpec{Selector: map[string]string{"app": name}, Template: &template}}
	case "Job":
		template.Spec.RestartPolicy = v1.RestartPolicyNever
		c.Object = batchv1.Job{TypeMeta: typeMeta("batch/v1", c.Kind), ObjectMeta: meta, Spec: batchv1.JobSpec{Template: template}}
	case "CronJob":
		template.Spec.RestartPolicy = v1.RestartPolicyOnFailure
		c.Object = batchv1.CronJob{TypeMeta: typeMeta("batch/v1", c.Kind), ObjectMeta: meta, Spec: batchv1.CronJobSpec{
			Schedule: "*/5 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template}}}}
	}
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}
