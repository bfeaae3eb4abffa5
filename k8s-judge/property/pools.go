package property

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/scheduling"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/karpenter"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/oracle"
)

// Karpenter's NodePools (karpenter.sh/v1) in the property: with readNodes, a case may have 0 to 3
// of them, created in the property's control plane, which the policy lists through its host
// (docs/karpenter.md). What a pool can create is read with Karpenter's own code
// (sigs.k8s.io/karpenter/pkg/scheduling), never a model of ours:
//
//   - which pools count: karpenter.Counted (Provisioner.NewScheduler's filter: not static, Ready
//     True, not being deleted);
//   - the pool's requirements: scheduling.NewNodeSelectorRequirementsWithMinValues of
//     spec.template.spec.requirements, plus scheduling.NewLabelRequirements of the template's
//     labels (NewNodeClaimTemplate);
//   - a Pod's requirements against them: scheduling.NewStrictPodRequirements of the Pod with each
//     required term alone (Karpenter relaxes the terms one at a time),
//     Requirements.Compatible(..., scheduling.AllowUndefinedWellKnownLabels) and the instance
//     type's Requirements.Intersects;
//   - taints: scheduling.Taints(spec.template.spec.taints).Tolerates, with the toleration of
//     PreferNoSchedule taints Karpenter's preference relaxation adds
//     (toleratePreferNoScheduleTaints);
//   - the Nodes a pool launches: the kwok provider's instance types (amd64 and arm64, Linux and
//     Windows; kwok.ConstructInstanceTypes).

// instanceTypes are the kwok provider's instance types, made once.
var instanceTypes = sync.OnceValues(func() ([]*cloudprovider.InstanceType, error) {
	return karpenter.InstanceTypes(context.Background())
})

// poolRequirements are what Karpenter reads of pool's template: its requirements and its labels
// (In [value]).
func poolRequirements(pool karpenter.Pool) scheduling.Requirements {
	np := pool.NodePool()
	requirements := scheduling.NewNodeSelectorRequirementsWithMinValues(np.Spec.Template.Spec.Requirements...)
	requirements.Add(scheduling.NewLabelRequirements(np.Spec.Template.Labels).Values()...)
	return requirements
}

// counted are c's pools Karpenter schedules onto.
func (c *Case) counted() []karpenter.Pool {
	var out []karpenter.Pool
	for _, pool := range c.NodePools {
		if pool.Counts() {
			out = append(out, pool)
		}
	}
	return out
}

// preferNoSchedule is the toleration Karpenter's preference relaxation adds: PreferNoSchedule
// taints do not keep a Pod from a pool.
var preferNoSchedule = v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectPreferNoSchedule}

// tolerates says whether tolerations (plus the PreferNoSchedule relaxation) tolerate every taint
// of pool (scheduling.Taints.Tolerates).
func tolerates(pool karpenter.Pool, tolerations []v1.Toleration) bool {
	return scheduling.Taints(pool.Taints).Tolerates(append(slices.Clone(tolerations), preferNoSchedule)) == nil
}

// poolArches are the architectures of os that c's NodePools, those that count and whose taints
// the Pod tolerates (its own tolerations and those architectureTolerations gives for the
// architecture), can create, as the policy counts them (docs/karpenter.md): each of the
// architectures the policy knows (everyArch) that Karpenter's requirements of the pool admit with
// os (a pool that does not list its architectures may create any of them).
func poolArches(c *Case, os string) []string {
	if c.poolArches == nil {
		c.poolArches = map[string][]string{}
	}
	if arches, done := c.poolArches[os]; done {
		return arches
	}
	var arches []string
	for _, pool := range c.counted() {
		requirements := poolRequirements(pool)
		for _, arch := range everyArch {
			platform := scheduling.NewRequirements(scheduling.NewRequirement(v1.LabelArchStable, v1.NodeSelectorOpIn, arch),
				scheduling.NewRequirement(v1.LabelOSStable, v1.NodeSelectorOpIn, os))
			if requirements.Compatible(platform, scheduling.AllowUndefinedWellKnownLabels) != nil {
				continue
			}
			tolerations := append(slices.Clone(c.Template.Spec.Tolerations), c.Settings.ArchitectureTolerations[arch]...)
			if tolerates(pool, tolerations) {
				arches = appendNew(arches, arch)
			}
		}
	}
	c.poolArches[os] = arches
	return arches
}

// launches are the platforms ("os/arch") Karpenter launches Nodes of for pod from c's NodePools
// (those that count), each with the pool: for each pool, each kwok instance type and each
// required term of the Pod alone, the pool's requirements compatible with the Pod's, the
// instance type's intersecting both, an offering available, and the pool's taints tolerated by
// the Pod's tolerations (and, with extra, those architectureTolerations gives for the
// instance type's architecture: the policy adds them when it pins). A term that names a Node
// (matchFields In) is left out: no Node Karpenter launches has that name.
func launches(c *Case, pod *v1.Pod, extra bool) (map[string]string, error) {
	its, err := instanceTypes()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, pool := range c.counted() {
		for _, one := range karpenter.Terms(pod) {
			if namesANode(one) {
				continue
			}
			podRequirements := scheduling.NewStrictPodRequirements(one)
			requirements := poolRequirements(pool)
			if requirements.Compatible(podRequirements, scheduling.AllowUndefinedWellKnownLabels) != nil {
				continue
			}
			requirements.Add(podRequirements.Values()...)
			for _, it := range its {
				if it.Requirements.Intersects(requirements) != nil || !it.Offerings.Available().HasCompatible(requirements) {
					continue
				}
				arch := it.Requirements.Get(v1.LabelArchStable).Any()
				tolerations := slices.Clone(one.Spec.Tolerations)
				if extra {
					tolerations = append(tolerations, c.Settings.ArchitectureTolerations[arch]...)
				}
				if !tolerates(pool, tolerations) {
					continue
				}
				for _, os := range it.Requirements.Get(v1.LabelOSStable).Values() {
					if _, seen := out[os+"/"+arch]; !seen {
						out[os+"/"+arch] = pool.Name
					}
				}
			}
		}
	}
	return out, nil
}

// namesANode says whether pod's (one) required term has matchFields In: a Node's name.
func namesANode(pod *v1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, field := range term.MatchFields {
			if field.Operator == v1.NodeSelectorOpIn {
				return true
			}
		}
	}
	return false
}

// platformNodes are the nodes of platform ("os/arch") a pool may launch, with no other label:
// one, or, for Windows, one of each build (a pool names none; the cloud's image decides).
func platformNodes(platform string) []v1.Node {
	os, arch := platformOS(platform), platform[len(platformOS(platform))+1:]
	if os != "windows" {
		return []v1.Node{node(v1.Node{}, os, arch, "")}
	}
	var out []v1.Node
	for _, b := range windowsBuilds {
		out = append(out, node(v1.Node{}, os, arch, b))
	}
	return out
}

// servedOn is a node of platformNodes(platform) that pod's node affinity admits and that runs
// every image of known (and the Pod's spec.os), else nil; runsNot: one it admits that does not
// (with runs set: a Windows build the pool may launch that does not run it, under
// pinWindowsBuild).
func servedOn(pod *v1.Pod, platform string, known []image, builds bool) (runs, runsNot *v1.Node) {
	matches := oracle.Matcher(pod)
	for _, n := range platformNodes(platform) {
		if ok, _ := matches(&n); !ok {
			continue
		}
		if runsAll(known, &n, builds) && specOSAllows(pod, n.Labels[osLabel]) {
			if runs == nil {
				runs = &n
			}
		} else if runsNot == nil {
			runsNot = &n
		}
	}
	return runs, runsNot
}

func platformOS(platform string) string {
	for i := range platform {
		if platform[i] == '/' {
			return platform[:i]
		}
	}
	return platform
}

// sortedPlatforms are the keys of platforms, sorted.
func sortedPlatforms(platforms map[string]string) []string {
	keys := make([]string, 0, len(platforms))
	for platform := range platforms {
		keys = append(keys, platform)
	}
	sort.Strings(keys)
	return keys
}

// instanceFamilyLabel and instanceFamilies are the kwok provider's instance families (each
// of amd64 and arm64, Linux and Windows instance types).
const instanceFamilyLabel = "karpenter.kwok.sh/instance-family"

var instanceFamilies = []string{"c", "s", "m", "e"}

// drawPools draws 0 to 3 NodePools (one time in ten 4 to 6) (readNodes): limited to some architectures (In, the stable or
// the beta key, or the template's label), unconstrained, tainted (a NoSchedule or NoExecute taint
// the Pod may tolerate, a PreferNoSchedule one Karpenter ignores), Windows, NotIn some
// architectures, not Ready, or static (spec.replicas). Karpenter's kwok provider launches amd64
// and arm64; the policy counts the architectures the requirements name.
func drawPools(t *rapid.T) []karpenter.Pool {
	count := rapid.IntRange(0, 3).Draw(t, "NodePools")
	if chance(t, "many NodePools", 10) {
		count = rapid.IntRange(4, 6).Draw(t, "many NodePools")
	}
	pools := make([]karpenter.Pool, count)
	in := func(key string, values ...string) v1.NodeSelectorRequirement {
		return v1.NodeSelectorRequirement{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}
	}
	for i := range pools {
		pool := karpenter.Pool{Name: fmt.Sprintf("pool-%d", i)}
		switch kind := rapid.SampledFrom([]string{"arch", "arch", "unconstrained", "tainted", "tainted", "tainted", "windows", "notin", "not ready", "static", "label"}).Draw(t, "NodePool kind"); kind {
		case "arch":
			key := rapid.SampledFrom([]string{archLabel, archLabel, betaArchLabel}).Draw(t, "NodePool arch key")
			pool.Requirements = []v1.NodeSelectorRequirement{in(key, subset(t, nodeArches, "NodePool arch")...)}
		case "unconstrained":
		case "tainted":
			pool.Requirements = []v1.NodeSelectorRequirement{in(archLabel, rapid.SampledFrom(nodeArches[:2]).Draw(t, "tainted NodePool arch"))}
			pool.Taints = []v1.Taint{rapid.SampledFrom([]v1.Taint{armTaint, gpuTaint, spotTaint}).Draw(t, "NodePool taint")}
		case "windows":
			pool.Requirements = []v1.NodeSelectorRequirement{in(osLabel, "windows")}
			if rapid.Bool().Draw(t, "windows NodePool arch") {
				pool.Requirements = append(pool.Requirements, in(archLabel, "amd64"))
			}
		case "notin":
			pool.Requirements = []v1.NodeSelectorRequirement{{Key: archLabel, Operator: v1.NodeSelectorOpNotIn, Values: subset(t, nodeArches, "NodePool notin")}}
		case "not ready":
			pool.NotReady = true
			pool.Requirements = []v1.NodeSelectorRequirement{in(archLabel, rapid.SampledFrom(nodeArches).Draw(t, "not ready NodePool arch"))}
		case "static":
			pool.Replicas = ptr.To[int64](1)
			pool.Requirements = []v1.NodeSelectorRequirement{in(archLabel, rapid.SampledFrom(nodeArches).Draw(t, "static NodePool arch"))}
		case "label":
			pool.Labels = map[string]string{archLabel: rapid.SampledFrom(nodeArches).Draw(t, "NodePool label arch")}
		}
		if kind := pool.Requirements; len(kind) > 0 && rapid.Bool().Draw(t, "NodePool os linux") && kind[0].Key != osLabel {
			pool.Requirements = append(pool.Requirements, in(osLabel, "linux"))
		}
		// What operators add that the policy does not read: a requirement on another label (the
		// kwok provider's instance family: Karpenter's simulation honours it), a weight, limits
		// (generous: a pool at its limits is not drawn), on pools that are not static.
		if chance(t, "NodePool instance family", 4) {
			pool.Requirements = append(pool.Requirements, in(instanceFamilyLabel, subset(t, instanceFamilies, "NodePool instance family")...))
		}
		if pool.Replicas != nil {
			// The API server refuses a static pool's weight.
			pools[i] = pool
			continue
		}
		if chance(t, "NodePool weight", 3) {
			pool.Weight = ptr.To(int32(rapid.IntRange(1, 100).Draw(t, "NodePool weight")))
		}
		if chance(t, "NodePool limits", 3) {
			pool.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1000"), v1.ResourceMemory: resource.MustParse("4000Gi")}
		}
		pools[i] = pool
	}
	return pools
}
