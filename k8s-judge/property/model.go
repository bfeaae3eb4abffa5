package property

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/oracle"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/registry"
)

// The node labels the policy and the judge read.
const (
	archLabel     = "kubernetes.io/arch"
	osLabel       = "kubernetes.io/os"
	betaArchLabel = "beta.kubernetes.io/arch"
	betaOSLabel   = "beta.kubernetes.io/os"
	buildLabel    = "node.kubernetes.io/windows-build"
	zoneLabel     = "topology.kubernetes.io/zone"
	hostLabel     = "kubernetes.io/hostname"
	// typeLabel: the virtual-kubelet Node's (virtualNode), by which AKS sends Pods there.
	typeLabel = "type"
)

// image is what the judge knows of one image of a Pod: what it runs on, or that the host cannot
// look it up.
type image struct {
	ref string
	// platforms: index entries or config; nil for an imagePlatforms image.
	platforms []registry.Platform
	// configured: the architectures imagePlatforms gives it (no build), on configuredOS (the
	// entry's operatingSystems, else defaultOperatingSystem): the settings' contract, the
	// registry has no such image.
	configured   []string
	configuredOS []string
	// missing: the registry has no such image (the lookup fails).
	missing bool
	// wasm: what of it a WebAssembly shim runs (see webAssembly).
	wasm string
	// platformless: an artifact with no platform (a single manifest whose config names none, not
	// WebAssembly: a Helm chart, a model, a data set). No container runs it; an image volume
	// mounts it on every node.
	platformless bool
	// anywhere: a WebAssembly image, run by a node's shim on every architecture and OS (see
	// webAssembly).
	anywhere bool
	// bundle: an OLM bundle (olmBundleLabel): manifests and no binaries, which OLM's unpack Pod
	// runs with a binary it copies in from its own image, of the node's platform. It says nothing
	// of where the Pod runs: the Pod is what its other images make it (lookups leaves it out,
	// as an artifact only volumes mount).
	bundle bool
	// nested: an index that lists indexes (the catalog's Flattened).
	nested bool
}

// olmBundleLabel marks an Operator Lifecycle Manager bundle's image config, as operator-sdk and
// opm build one (registry-fixtures' single/olm-bundle).
const olmBundleLabel = "operators.operatorframework.io.bundle.mediatype.v1"

// OLMBundleLabel is olmBundleLabel, for the control plane's judges.
const OLMBundleLabel = olmBundleLabel

// singleManifests are the media types of an image manifest (not an index).
var singleManifests = []string{"application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json"}

// catalogImage is what the catalog says of the image name (`repository:tag`).
//
// An index that lists indexes runs what every index it nests lists (the catalog's Flattened),
// down to maxIndexDepth: a deeper entry fails the lookup, as docs/design.md promises (the
// contract: "nested indexes 3 deep; a deeper nesting ... fails the lookup").
func catalogImage(reg *registry.Registry, name string) image {
	entry := reg.Catalog[name]
	platforms := entry.Platforms
	if entry.Flattened != nil {
		platforms = entry.Flattened
	}
	img := image{ref: reg.Ref(name), platforms: platforms, wasm: webAssembly(name, platforms), nested: entry.Flattened != nil}
	img.platformless = img.wasm == "" && len(platforms) == 0 && slices.Contains(singleManifests, entry.MediaType)
	img.missing = slices.ContainsFunc(platforms, func(p registry.Platform) bool { return p.Depth > maxIndexDepth })
	_, img.bundle = entry.Labels[olmBundleLabel]
	return img
}

// maxIndexDepth is how deep the policy follows nested indexes (docs/design.md).
const maxIndexDepth = 3

// The WebAssembly platforms: the policy's docs/design.md, "WebAssembly workloads".
var wasmOS = []string{"wasi", "wasip1", "wasip2"}

func isWasm(p registry.Platform) bool {
	return p.Architecture == "wasm" && slices.Contains(wasmOS, p.OS)
}

// webAssembly says what of img a WebAssembly shim runs: "only" when every runnable build is
// WebAssembly (or the image is the Spin artifact, which names no platform), "mixed" when some
// are, "" when none is.
func webAssembly(name string, platforms []registry.Platform) string {
	if name == spinArtifact {
		return "only"
	}
	wasm, native := 0, 0
	for _, p := range platforms {
		switch {
		case p.Attestation:
		case isWasm(p):
			wasm++
		default:
			native++
		}
	}
	switch {
	case wasm > 0 && native == 0:
		return "only"
	case wasm > 0:
		return "mixed"
	}
	return ""
}

// WindowsBuild is the `major.minor.build` of a Windows os.version, as
// node.kubernetes.io/windows-build carries it.
func WindowsBuild(osVersion string) string {
	parts := strings.Split(osVersion, ".")
	if len(parts) < 3 {
		return osVersion
	}
	return strings.Join(parts[:3], ".")
}

// runs says whether node can run img: an entry of the node's OS (an imagePlatforms image's
// configured OSes, or an entry whose os is the empty string: any, docs/design.md) and architecture, and,
// when builds count (pinWindowsBuild), of a Windows node's build (an entry with no os.version
// names no build: any). The variant is not compared: nodes do not label it.
func runs(img image, node *v1.Node, builds bool) bool {
	arch, os := node.Labels[archLabel], node.Labels[osLabel]
	if img.anywhere {
		return true
	}
	if img.configured != nil {
		return slices.Contains(img.configured, arch) && slices.Contains(img.configuredOS, os)
	}
	for _, p := range img.platforms {
		if p.Attestation || p.OS != "" && p.OS != os || p.Architecture != arch {
			continue
		}
		if builds && os == "windows" && p.OSVersion != "" && WindowsBuild(p.OSVersion) != node.Labels[buildLabel] {
			continue
		}
		return true
	}
	return false
}

// specOSAllows says whether a Node of nodeOS may run pod as its spec.os says: the kubelet refuses
// a Pod whose spec.os.name (when set) is another OS than its own.
func specOSAllows(pod *v1.Pod, nodeOS string) bool {
	return pod.Spec.OS == nil || pod.Spec.OS.Name == "" || string(pod.Spec.OS.Name) == nodeOS
}

func runsAll(images []image, node *v1.Node, builds bool) bool {
	for _, img := range images {
		if !runs(img, node, builds) {
			return false
		}
	}
	return true
}

// node is a node of os, arch and (Windows) build with the other labels of template.
func node(template v1.Node, os, arch, winBuild string) v1.Node {
	labels := map[string]string{osLabel: os, archLabel: arch}
	for k, v := range template.Labels {
		labels[k] = v
	}
	if _, beta := labels[betaArchLabel]; beta {
		labels[betaOSLabel], labels[betaArchLabel] = os, arch
	}
	if os == "windows" {
		labels[buildLabel] = winBuild
	}
	return v1.Node{ObjectMeta: metav1.ObjectMeta{Name: template.Name, Labels: labels}}
}

// templates are every other label set and name a node may have: each zone, each tier or none
// (0..4: what In, Gt and Lt on the tiers the Pods use can admit), the beta labels or not, each
// name the Pod's matchFields name or one it does not (all others match alike), and where the
// Pod's nodeSelector names the virtual-kubelet Node's type (sendToVirtualNode), that label or
// not: the settings state architectures and OSes, not which nodes carry it.
func templates(c *Case) []v1.Node {
	names := []string{"unnamed"}
	if affinity := c.Template.Spec.Affinity; affinity != nil && affinity.NodeAffinity != nil &&
		affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, field := range term.MatchFields {
				for _, name := range field.Values {
					names = appendNew(names, name)
				}
			}
		}
	}
	types := []string{""}
	if value := c.Template.Spec.NodeSelector[typeLabel]; value != "" {
		types = append(types, value)
	}
	var out []v1.Node
	for _, name := range names {
		for _, zone := range zones {
			for _, tier := range []string{"", "0", "1", "2", "3", "4"} {
				for _, beta := range []bool{false, true} {
					for _, nodeType := range types {
						labels := map[string]string{zoneLabel: zone}
						if tier != "" {
							labels["tier"] = tier
						}
						if beta {
							labels[betaArchLabel], labels[betaOSLabel] = "", ""
						}
						if nodeType != "" {
							labels[typeLabel] = nodeType
						}
						out = append(out, v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
					}
				}
			}
		}
	}
	return out
}

// seen are the architectures of c's Nodes, autoscaled pools and NodePools (those that count and
// whose taints the Pod tolerates: poolArches) of os.
func seen(c *Case, os string) []string {
	var arches []string
	for _, n := range c.Nodes {
		if n.Labels[osLabel] == os {
			arches = appendNew(arches, n.Labels[archLabel])
		}
	}
	for _, pool := range c.pools(os) {
		arches = appendNew(arches, pool)
	}
	for _, arch := range poolArches(c, os) {
		arches = appendNew(arches, arch)
	}
	return arches
}

// universe is every node the settings say may exist for Pods of os: a node of each (os,
// architecture) the settings count (with readNodes: the architectures of the cluster's nodes of
// that OS and the autoscaled pools; with schedulableArchitectures: its list; with neither: every
// architecture), with any other labels and name (the policy reads no other label of a node), of
// the builds of the cluster's Windows nodes (readNodes) or of any build; with readNodes and no
// node nor pool of the OS, as with neither setting. Taints are left out:
// the policy places Pods by architecture; tolerations are the operator's.
func universe(c *Case, os string) []v1.Node {
	var arches, builds []string
	switch {
	case c.readNodes():
		if len(seen(c, os)) == 0 {
			// docs/node-aware.md: a Pod whose OS has no Node nor pool at all is decided as if it
			// had one (no Node is read to tell); the judge judges only d.'s refusals there
			// (checkDRefusals: no Node list rules an architecture out).
			return nodesOf(c, os, everyArch, windowsBuilds)
		}
		// Each Node's own architecture and build (not every pairing of the Nodes' architectures
		// and builds: a Windows arm64 Node of one build and an amd64 one of another make no amd64
		// Node of the first); a pool's Nodes carry no build the pool names: any, on the
		// architectures it can create. A NodePool's carry the beta labels, which their kubelet
		// sets (platformNodes); an autoscaledArchitectures pool's labels are the operator's.
		nodes := append(clusterNodesOf(c, os), nodesOf(c, os, c.pools(os), windowsBuilds)...)
		for _, n := range nodesOf(c, os, poolArches(c, os), windowsBuilds) {
			if _, beta := n.Labels[betaArchLabel]; beta {
				nodes = append(nodes, n)
			}
		}
		return nodes
	case len(c.schedulable()) > 0:
		arches, builds = c.schedulable(), windowsBuilds
	default:
		// Native images have builds for nodeArches only; WebAssembly ones run on every node.
		arches, builds = everyArch, windowsBuilds
	}
	return nodesOf(c, os, arches, builds)
}

// declared are the nodes the settings declare, of every OS they state (b. is judged on them):
// with readNodes, of each OS with a Node or an autoscaled pool, a node of any labels and name of
// each architecture of its Nodes (their builds) and pools (any build); NodePools are judged by
// Karpenter's simulation instead (b. by Karpenter). With static settings, of each OS of
// clusterOperatingSystems (else the Pod's, podOS), of each of schedulableArchitectures (else
// every architecture), of any build. Nothing of the policy's rules: only what the settings and
// the cluster state.
func declared(c *Case, podOS string) []v1.Node {
	var nodes []v1.Node
	if c.readNodes() {
		for _, os := range nodeOSes {
			nodes = append(nodes, clusterNodesOf(c, os)...)
			nodes = append(nodes, nodesOf(c, os, c.pools(os), windowsBuilds)...)
		}
		return nodes
	}
	oses := c.Settings.ClusterOperatingSystems
	if len(oses) == 0 {
		oses = []string{podOS}
	}
	arches := c.schedulable()
	if len(arches) == 0 {
		arches = everyArch
	}
	for _, os := range oses {
		nodes = append(nodes, nodesOf(c, os, arches, windowsBuilds)...)
	}
	return nodes
}

// clusterNodesOf are, for each architecture and build of c's Nodes of os, a node of any labels
// and name of them.
func clusterNodesOf(c *Case, os string) []v1.Node {
	var nodes []v1.Node
	var platforms []string
	for _, n := range c.Nodes {
		platform := n.Labels[archLabel] + "/" + n.Labels[buildLabel]
		if n.Labels[osLabel] != os || slices.Contains(platforms, platform) {
			continue
		}
		platforms = append(platforms, platform)
		nodes = append(nodes, nodesOf(c, os, []string{n.Labels[archLabel]}, []string{n.Labels[buildLabel]})...)
	}
	return nodes
}

func nodesOf(c *Case, os string, arches, builds []string) []v1.Node {
	if os != "windows" {
		builds = []string{""}
	}
	var nodes []v1.Node
	for _, template := range templates(c) {
		for _, arch := range arches {
			for _, b := range builds {
				nodes = append(nodes, node(template, os, arch, b))
			}
		}
	}
	return nodes
}

func appendNew(list []string, value string) []string {
	if value == "" || slices.Contains(list, value) {
		return list
	}
	return append(list, value)
}

// podOS is the OS of the nodes the Pod runs on, as docs/design.md states it: spec.os.name, else
// the nodeSelector's kubernetes.io/os (or beta.kubernetes.io/os), else the one OS of the nodes its
// required terms admit, else defaultOperatingSystem.
func podOS(c *Case, pod *v1.Pod) string {
	if pod.Spec.OS != nil && pod.Spec.OS.Name != "" {
		return string(pod.Spec.OS.Name)
	}
	for _, key := range []string{osLabel, betaOSLabel} {
		if os := pod.Spec.NodeSelector[key]; os != "" {
			return os
		}
	}
	var admitted []string
	matches := oracle.Matcher(pod)
	for _, os := range []string{"linux", "windows"} {
		for _, node := range probes(c, os) {
			if ok, _ := matches(&node); ok {
				admitted = appendNew(admitted, os)
				break
			}
		}
	}
	if len(admitted) == 1 {
		return admitted[0]
	}
	return c.defaultOS()
}

// choosesOS says whether pod chooses its OS: a non-empty spec.os.name, or a non-empty nodeSelector
// kubernetes.io/os or beta.kubernetes.io/os. Such a Pod is decided for that OS only.
func choosesOS(pod *v1.Pod) bool {
	if pod.Spec.OS != nil && pod.Spec.OS.Name != "" {
		return true
	}
	return pod.Spec.NodeSelector[osLabel] != "" || pod.Spec.NodeSelector[betaOSLabel] != ""
}

// severalOSes says whether the settings say the cluster has nodes of several OSes: static
// settings whose clusterOperatingSystems list more than one; with readNodes, a Node or an
// autoscaled pool of another OS than defaultOperatingSystem.
func (c *Case) severalOSes() bool {
	if !c.readNodes() {
		return len(c.Settings.ClusterOperatingSystems) > 1
	}
	for _, os := range nodeOSes {
		if os != c.defaultOS() && len(seen(c, os)) > 0 {
			return true
		}
	}
	return false
}

// clusterOSes are the OSes of the nodes the settings say the cluster may have (the settings'
// contract, README): with static settings, clusterOperatingSystems, else podOS alone ("the Pods'
// own OS": the generator omits the list only on a cluster of one OS); with readNodes, each OS
// with a Node or pool, and podOS (docs/node-aware.md: a Pod whose OS has no Node nor pool is
// decided as if the cluster had one). Which of their nodes admit a Pod is the scheduler's and
// the kubelet's business (oracle.Matcher, specOSAllows), not a rule of the policy's.
func clusterOSes(c *Case, podOS string) []string {
	if !c.readNodes() {
		if len(c.Settings.ClusterOperatingSystems) > 0 {
			return slices.Clone(c.Settings.ClusterOperatingSystems)
		}
		return []string{podOS}
	}
	var oses []string
	for _, os := range nodeOSes {
		if len(seen(c, os)) > 0 {
			oses = append(oses, os)
		}
	}
	return appendNew(oses, podOS)
}

// outsideClusterOSes says whether c's static settings list clusterOperatingSystems and no node
// of a listed OS, of any architecture, build, labels and name (probes), is admitted by c's Pod's
// node affinity (the scheduler's matcher) and its spec.os (the kubelet): noListed; and whether one
// of another OS is: elsewhere.
func outsideClusterOSes(c *Case) (noListed, elsewhere bool) {
	if c.readNodes() || len(c.Settings.ClusterOperatingSystems) == 0 {
		return false, false
	}
	matches := oracle.Matcher(c.Template)
	admitted := func(os string) bool {
		if !specOSAllows(c.Template, os) {
			return false
		}
		for _, probe := range probes(c, os) {
			if ok, _ := matches(&probe); ok {
				return true
			}
		}
		return false
	}
	noListed = true
	for _, os := range nodeOSes {
		switch {
		case !admitted(os):
		case slices.Contains(c.Settings.ClusterOperatingSystems, os):
			noListed = false
		default:
			elsewhere = true
		}
	}
	return noListed, elsewhere
}

// nodeOSes are the OSes nodes report in kubernetes.io/os.
var nodeOSes = []string{"linux", "windows"}

// podOSes are the OSes the policy decides pod for: a Pod that chooses its OS
// (choosesOS), or in a cluster the settings give one OS, is decided for its OS (podOS); one that
// does not, in a cluster of several OSes, for every node OS whose nodes its own constraints admit
// and on which every image of known that constrains it (not WebAssembly) runs, on some
// architecture (and build), or for podOS when none is such an OS (it is refused) or when no image
// constrains it (fallbackArchitectures, or nothing to pin: the default OS only). The returned Pod
// admits the nodes of each of them that the original admits and that run every image.
func podOSes(c *Case, pod *v1.Pod, known []image) []string {
	os := podOS(c, pod)
	constraining := slices.DeleteFunc(slices.Clone(known), func(img image) bool { return img.anywhere })
	if choosesOS(pod) || !c.severalOSes() || len(constraining) == 0 {
		return []string{os}
	}
	var oses []string
	matches := oracle.Matcher(pod)
	for _, candidate := range nodeOSes {
		admitted, run := false, false
		for _, probe := range probes(c, candidate) {
			if ok, _ := matches(&probe); ok {
				admitted = true
				break
			}
		}
		for _, arch := range everyArch {
			for _, b := range windowsBuilds {
				n := node(v1.Node{}, candidate, arch, b)
				run = run || runsAll(constraining, &n, c.builds())
			}
		}
		if admitted && run {
			oses = append(oses, candidate)
		}
	}
	if len(oses) == 0 {
		return []string{os}
	}
	return oses
}

// probes are the nodes of os of every architecture (and one no image has), build, label set
// and name: what "the nodes the terms admit" ranges over.
func probes(c *Case, os string) []v1.Node {
	if c.probes == nil {
		c.probes = map[string][]v1.Node{}
	}
	if _, done := c.probes[os]; !done {
		c.probes[os] = nodesOf(c, os, append(slices.Clone(nodeArches), "riscv64"), windowsBuilds)
	}
	return c.probes[os]
}

// RunsOn says whether node runs every image of c's Pod that the policy can look up (an image
// the registry does not have is left to onLookupFailure), Windows builds compared when
// pinWindowsBuild is set.
func (c *Case) RunsOn(node *v1.Node) bool {
	return runsAll(c.known(), node, c.builds())
}

// OS is the OS of the nodes c's Pod runs on, as the policy takes it when it takes one: its
// choice, else the one OS its terms admit, else defaultOperatingSystem (see OSes).
func (c *Case) OS() string { return podOS(c, c.Template) }

// OSes are the OSes the policy decides c's Pod for (podOSes): its OS, or, for a Pod that does not
// choose its OS in a cluster of several, each OS its constraints admit and its images run on.
func (c *Case) OSes() []string { return podOSes(c, c.Template, c.known()) }

// ClusterOSes are the OSes of the nodes the settings say the cluster may have (clusterOSes: the
// settings' contract, not the policy's rules of which OSes it decides a Pod for).
func (c *Case) ClusterOSes() []string { return clusterOSes(c, c.OS()) }

// ChoosesOS says whether c's Pod chooses its OS (spec.os.name or an OS nodeSelector).
func (c *Case) ChoosesOS() bool { return choosesOS(c.Template) }

// RunsPodOn says whether node runs c's Pod: every image the policy can look up (RunsOn), and the
// Pod's spec.os.name, when set, is the node's OS (the kubelet refuses it elsewhere).
func (c *Case) RunsPodOn(node *v1.Node) bool {
	return specOSAllows(c.Template, node.Labels[osLabel]) && c.RunsOn(node)
}

// known are the images of c's Pod the policy can look up (see lookups).
func (c *Case) known() []image {
	known, _ := c.lookups()
	return known
}

// lookups are the images of c's Pod as the policy looks them up: its containers', then its image
// volumes' (spec.volumes[].image.reference). known: those it can look up; failed: some lookup
// fails (an image the registry does not have, or an artifact with no platform that a container
// runs), which onLookupFailure decides. A WebAssembly-only image runs anywhere, and so does a
// mixed one under a RuntimeClass of wasmRuntimeClasses. An artifact with no platform that only
// image volumes mount is left out: the Pod is decided as if it had no such volume.
func (c *Case) lookups() (known []image, failed bool) {
	spec := &c.Template.Spec
	shim := spec.RuntimeClassName != nil && slices.Contains(c.wasmRuntimeClasses(), *spec.RuntimeClassName)
	run := containerImages(c.Template)
	for _, ref := range append(run, ImageVolumes(c.Template)...) {
		img := c.images[ref]
		switch {
		case img.missing || img.platformless && slices.Contains(run, ref):
			failed = true
			continue
		case img.platformless || img.bundle:
			continue
		case img.wasm == "only":
			img.anywhere = true
		case img.wasm == "mixed":
			img.anywhere = shim
		}
		known = append(known, img)
	}
	return known, failed
}

// containerImages are the images of pod's init containers and containers.
func containerImages(pod *v1.Pod) []string {
	var refs []string
	for _, container := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		refs = append(refs, container.Image)
	}
	return refs
}

// ImageVolumes are the references of pod's image volumes (an empty one is no image).
func ImageVolumes(pod *v1.Pod) []string {
	var refs []string
	for _, volume := range pod.Spec.Volumes {
		if volume.Image != nil && volume.Image.Reference != "" {
			refs = append(refs, volume.Image.Reference)
		}
	}
	return refs
}

// RunsImage says whether node runs the catalog image ref (registry.Ref form): what an injected
// sidecar needs.
func RunsImage(reg *registry.Registry, ref string, node *v1.Node) bool {
	img := catalogImage(reg, strings.TrimPrefix(ref, reg.Addr+"/"))
	img.anywhere = img.bundle || img.wasm == "only"
	return runs(img, node, false)
}

// allAnywhere says whether every image of images runs anywhere (WebAssembly; none at all too).
func allAnywhere(images []image) bool {
	return !slices.ContainsFunc(images, func(img image) bool { return !img.anywhere })
}

// matchedZone is the zone pod's label names where matchNodeLabels puts it into every required
// term (the zone its pinned Pod keeps to), or "".
func matchedZone(c *Case, pod *v1.Pod) string {
	if len(c.Settings.MatchNodeLabels) == 0 {
		return ""
	}
	return pod.Labels[zoneLabel]
}

// Unpinned says whether the policy pins c's Pod to nothing, of architecture or OS, whatever the
// cluster: a lookup fails under onLookupFailure: accept (accepted unchanged), or every image it
// can look up runs anywhere (WebAssembly; or none could be looked up) and fallbackArchitectures
// do not stand in for a failed one.
func (c *Case) Unpinned() bool {
	known, failed := c.lookups()
	if failed && c.Settings.OnLookupFailureOrDefault() == "accept" {
		return true
	}
	if failed && len(c.Settings.FallbackArchitectures) > 0 {
		return false
	}
	return allAnywhere(known)
}

// KeptToSpecOS says whether the policy, in a cluster of several OSes, keeps c's Pod to the OS
// its spec.os names even when it pins nothing else (images that run anywhere): it names one,
// some image was looked up, and no failed lookup under onLookupFailure: accept left it
// unchanged (the kubelet refuses a Pod on a Node of another OS than its spec.os).
func (c *Case) KeptToSpecOS() bool {
	if c.Template.Spec.OS == nil || c.Template.Spec.OS.Name == "" {
		return false
	}
	known, failed := c.lookups()
	return len(known) > 0 && !(failed && c.Settings.OnLookupFailureOrDefault() == "accept")
}

// LookupFails says whether the policy fails to look up some image of c's Pod (see lookups):
// onLookupFailure decides such a Pod.
func (c *Case) LookupFails() bool {
	_, failed := c.lookups()
	return failed
}
