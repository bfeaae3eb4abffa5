package property

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/karpenter"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/settings"
)

// TestPoolArches: the architectures the judge counts for a NodePool, read with Karpenter's
// requirements (docs/karpenter.md).
func TestPoolArches(t *testing.T) {
	in := func(key string, values ...string) v1.NodeSelectorRequirement {
		return v1.NodeSelectorRequirement{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}
	}
	notIn := func(key string, values ...string) v1.NodeSelectorRequirement {
		return v1.NodeSelectorRequirement{Key: key, Operator: v1.NodeSelectorOpNotIn, Values: values}
	}
	allBut := func(except ...string) []string {
		return slices.DeleteFunc(slices.Clone(everyArch), func(a string) bool { return slices.Contains(except, a) })
	}
	gpu := []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
	armTolerations := map[string][]v1.Toleration{"arm64": {{Key: archLabel, Operator: v1.TolerationOpEqual, Value: "arm64", Effect: v1.TaintEffectNoSchedule}}}
	for _, tc := range []struct {
		name        string
		pool        karpenter.Pool
		os          string
		autoscaled  []string
		tolerations []v1.Toleration
		archTol     map[string][]v1.Toleration
		want        []string
	}{
		{name: "In", pool: karpenter.Pool{Requirements: []v1.NodeSelectorRequirement{in(archLabel, "arm64", "s390x")}}, os: "linux", want: []string{"arm64", "s390x"}},
		{name: "beta key", pool: karpenter.Pool{Requirements: []v1.NodeSelectorRequirement{in(betaArchLabel, "arm64")}}, os: "linux", want: []string{"arm64"}},
		{name: "template label", pool: karpenter.Pool{Labels: map[string]string{archLabel: "ppc64le"}}, os: "windows", want: []string{"ppc64le"}},
		{name: "no requirement: every architecture", pool: karpenter.Pool{}, os: "linux", want: everyArch},
		{name: "no requirement: autoscaledArchitectures does not narrow it", pool: karpenter.Pool{}, os: "linux", autoscaled: []string{"arm64"}, want: everyArch},
		{name: "NotIn", pool: karpenter.Pool{Requirements: []v1.NodeSelectorRequirement{notIn(archLabel, "arm64")}}, os: "linux", want: allBut("arm64")},
		{name: "NotIn and autoscaledArchitectures", pool: karpenter.Pool{Requirements: []v1.NodeSelectorRequirement{notIn(archLabel, "arm64")}}, os: "linux", autoscaled: []string{"arm64", "amd64"}, want: allBut("arm64")},
		{name: "DoesNotExist", pool: karpenter.Pool{Requirements: []v1.NodeSelectorRequirement{{Key: archLabel, Operator: v1.NodeSelectorOpDoesNotExist}}}, os: "linux"},
		{name: "another OS", pool: karpenter.Pool{Requirements: []v1.NodeSelectorRequirement{in(osLabel, "windows"), in(archLabel, "amd64")}}, os: "linux"},
		{name: "its OS", pool: karpenter.Pool{Requirements: []v1.NodeSelectorRequirement{in(osLabel, "windows"), in(archLabel, "amd64")}}, os: "windows", want: []string{"amd64"}},
		{name: "not Ready", pool: karpenter.Pool{NotReady: true, Requirements: []v1.NodeSelectorRequirement{in(archLabel, "arm64")}}, os: "linux"},
		{name: "tainted, not tolerated", pool: karpenter.Pool{Requirements: []v1.NodeSelectorRequirement{in(archLabel, "arm64")}, Taints: []v1.Taint{gpuTaint}}, os: "linux"},
		{name: "tainted, tolerated", pool: karpenter.Pool{Requirements: []v1.NodeSelectorRequirement{in(archLabel, "arm64")}, Taints: []v1.Taint{gpuTaint}}, os: "linux", tolerations: gpu, want: []string{"arm64"}},
		{name: "PreferNoSchedule", pool: karpenter.Pool{Requirements: []v1.NodeSelectorRequirement{in(archLabel, "arm64")}, Taints: []v1.Taint{spotTaint}}, os: "linux", want: []string{"arm64"}},
		{name: "architectureTolerations", pool: karpenter.Pool{Requirements: []v1.NodeSelectorRequirement{in(archLabel, "arm64", "amd64")}, Taints: []v1.Taint{armTaint}}, os: "linux", archTol: armTolerations, want: []string{"arm64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Case{NodePools: []karpenter.Pool{tc.pool}, Template: &v1.Pod{Spec: v1.PodSpec{Tolerations: tc.tolerations}}}
			c.Settings.ReadNodes, c.Settings.ArchitectureTolerations = true, tc.archTol
			if tc.autoscaled != nil {
				c.Settings.AutoscaledArchitectures = []settings.AutoscaledPools{{OS: tc.os, Architectures: tc.autoscaled}}
			}
			got := poolArches(c, tc.os)
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("poolArches = %v, want %v", got, want)
			}
		})
	}
}

// TestArchAndOSOnly: the Pod Karpenter is asked to serve with its architecture and OS constraints
// alone (d.'s under-refusal by Karpenter): other keys and names dropped, a term left with none
// admitting every node.
func TestArchAndOSOnly(t *testing.T) {
	req := func(key string, values ...string) v1.NodeSelectorRequirement {
		return v1.NodeSelectorRequirement{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}
	}
	withTerms := func(terms ...v1.NodeSelectorTerm) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{NodeSelector: map[string]string{archLabel: "arm64", "tier": "1"},
			Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}}}
	}
	named := v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{req("metadata.name", "n1")}}
	for _, tc := range []struct {
		name  string
		pod   *v1.Pod
		terms []v1.NodeSelectorTerm // nil: no required node affinity left
	}{
		{name: "other keys dropped", pod: withTerms(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{req(zoneLabel, "a"), req(osLabel, "linux")}}),
			terms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{req(osLabel, "linux")}}}},
		{name: "a term with no arch or OS expression admits every node", pod: withTerms(
			v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{req(betaArchLabel, "amd64")}},
			v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{req(zoneLabel, "a")}})},
		{name: "a term naming a Node admits every node", pod: withTerms(named)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := archAndOSOnly(tc.pod)
			if want := map[string]string{archLabel: "arm64"}; !maps.Equal(got.Spec.NodeSelector, want) {
				t.Errorf("nodeSelector %v, want %v", got.Spec.NodeSelector, want)
			}
			required := got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
			switch {
			case tc.terms == nil && required != nil:
				t.Errorf("required terms %v, want none", required.NodeSelectorTerms)
			case tc.terms != nil && (required == nil || !reflect.DeepEqual(required.NodeSelectorTerms, tc.terms)):
				t.Errorf("required %v, want terms %v", required, tc.terms)
			}
			if tc.pod.Spec.NodeSelector["tier"] != "1" {
				t.Error("the original Pod was changed")
			}
		})
	}
	// withoutNamingTerms: a term that names a Node is left out; nil when every term does.
	if withoutNamingTerms(withTerms(named)) != nil {
		t.Error("withoutNamingTerms kept a Pod whose only term names a Node")
	}
	kept := withoutNamingTerms(withTerms(named, v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{req(archLabel, "amd64")}}))
	if terms := kept.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms; len(terms) != 1 || len(terms[0].MatchFields) != 0 {
		t.Errorf("withoutNamingTerms kept %v, want the term on the architecture alone", terms)
	}
}
