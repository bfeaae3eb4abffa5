package karpenter

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestCounts: Karpenter's provisioner schedules onto a pool that is Ready and not static only.
func TestCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		pool Pool
		want bool
	}{
		{"ready", Pool{Name: "a"}, true},
		{"not ready", Pool{Name: "a", NotReady: true}, false},
		{"static", Pool{Name: "a", Replicas: ptr.To[int64](2)}, false},
		{"static and not ready", Pool{Name: "a", Replicas: ptr.To[int64](0), NotReady: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.pool.Counts(); got != tc.want {
				t.Errorf("Counts() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTerms: a Pod with several required terms is simulated once per term, alone; one with
// fewer, as it is.
func TestTerms(t *testing.T) {
	term := func(arch string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}}
	}
	pod := func(terms ...corev1.NodeSelectorTerm) *corev1.Pod {
		p := &corev1.Pod{}
		if terms != nil {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []string // each variant's one architecture, "" for no term
	}{
		{"no affinity", pod(), []string{""}},
		{"one term", pod(term("arm64")), []string{"arm64"}},
		{"two terms", pod(term("arm64"), term("amd64")), []string{"arm64", "amd64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Terms(tc.pod)
			if len(got) != len(tc.want) {
				t.Fatalf("%d variants, want %d", len(got), len(tc.want))
			}
			for i, variant := range got {
				arch := ""
				if a := variant.Spec.Affinity; a != nil {
					terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
					if len(terms) != 1 {
						t.Fatalf("variant %d has %d terms", i, len(terms))
					}
					arch = terms[0].MatchExpressions[0].Values[0]
				}
				if arch != tc.want[i] {
					t.Errorf("variant %d: %q, want %q", i, arch, tc.want[i])
				}
			}
			if len(tc.want) > 1 && len(tc.pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) != len(tc.want) {
				t.Error("Terms changed the Pod")
			}
		})
	}
}
