package property

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/registry"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/settings"
)

var (
	linuxArm64 = image{ref: "r/linux-arm64:1", platforms: []registry.Platform{{OS: "linux", Architecture: "arm64"}}}
	linuxBoth  = image{ref: "r/linux-both:1", platforms: []registry.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}}
	// armToleration is the GKE arm64 taint's toleration, as the generator's settings give it.
	armToleration = v1.Toleration{Key: archLabel, Operator: v1.TolerationOpEqual, Value: "arm64", Effect: v1.TaintEffectNoSchedule}
	blanket       = v1.Toleration{Operator: v1.TolerationOpExists}
	dedicated     = v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists}
)

// keptPod is a Pod of img with tolerations, preferred terms, an annotation (the preferred
// architecture) and, when pinned, a required term `kubernetes.io/arch In [pinned]`.
func keptPod(img image, tolerations []v1.Toleration, preferred []v1.PreferredSchedulingTerm, annotation string, pinned ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "judged"}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "c", Image: img.ref}}, Tolerations: tolerations}}
	if annotation != "" {
		pod.Annotations = map[string]string{preferredAnnotation: annotation}
	}
	affinity := &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}
	if len(pinned) > 0 {
		affinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{
			{MatchExpressions: []v1.NodeSelectorRequirement{requirement(archLabel, v1.NodeSelectorOpIn, pinned...)}}}}
	}
	pod.Spec.Affinity = &v1.Affinity{NodeAffinity: affinity}
	return pod
}

// nowhere makes pod admit no node: a nodeSelector on zone a, its terms on zone b (as
// matchNodeLabels pins a Pod labelled with zone b whose nodeSelector names zone a).
func nowhere(pod *v1.Pod) *v1.Pod {
	pod.Spec.NodeSelector = map[string]string{zoneLabel: "a"}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchExpressions = append(terms[i].MatchExpressions, requirement(zoneLabel, v1.NodeSelectorOpIn, "b"))
	}
	return pod
}

func prefers(arch string, weight int32) v1.PreferredSchedulingTerm {
	return v1.PreferredSchedulingTerm{Weight: weight, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
		requirement(archLabel, v1.NodeSelectorOpIn, arch)}}}
}

// TestTolerationsKept: the original's tolerations are kept, unchanged; an added toleration is
// one architectureTolerations gives an architecture some node of which the returned Pod admits
// and that runs its images (per the catalog), or, when it admits no node at all, the original
// admits; a blanket Exists no architecture is given fails.
func TestTolerationsKept(t *testing.T) {
	armTolerations := settings.Settings{ArchitectureTolerations: map[string][]v1.Toleration{"arm64": {armToleration}}}
	// The same toleration written without its operator (Equal, the API's default).
	noOperator := armToleration
	noOperator.Operator = ""
	runKept(t, tolerationsKept, []keptCase{
		{name: "unchanged", settings: armTolerations, img: linuxArm64,
			original: keptPod(linuxArm64, []v1.Toleration{dedicated}, nil, ""), returned: keptPod(linuxArm64, []v1.Toleration{dedicated}, nil, "")},
		{name: "arm64's toleration, the images run on arm64", settings: armTolerations, img: linuxArm64,
			original: keptPod(linuxArm64, []v1.Toleration{dedicated}, nil, ""), returned: keptPod(linuxArm64, []v1.Toleration{dedicated, armToleration}, nil, "", "arm64"),
			added: true},
		{name: "arm64's toleration given without its operator", settings: settings.Settings{ArchitectureTolerations: map[string][]v1.Toleration{"arm64": {noOperator}}}, img: linuxArm64,
			original: keptPod(linuxArm64, nil, nil, ""), returned: keptPod(linuxArm64, []v1.Toleration{armToleration}, nil, ""), added: true},
		{name: "arm64's toleration, the images run on amd64 only", settings: armTolerations, img: linuxAmd64,
			original: keptPod(linuxAmd64, nil, nil, ""), returned: keptPod(linuxAmd64, []v1.Toleration{armToleration}, nil, "", "amd64"),
			added: true, violation: "no node of those architectures that it admits runs its images"},
		{name: "arm64's toleration, pinned to amd64", settings: armTolerations, img: linuxBoth,
			original: keptPod(linuxBoth, nil, nil, ""), returned: keptPod(linuxBoth, []v1.Toleration{armToleration}, nil, "", "amd64"),
			added: true, violation: "no node of those architectures that it admits runs its images"},
		{name: "a blanket Exists", settings: armTolerations, img: linuxArm64,
			original: keptPod(linuxArm64, nil, nil, ""), returned: keptPod(linuxArm64, []v1.Toleration{blanket}, nil, "", "arm64"),
			added: true, violation: "architectureTolerations gives no architecture"},
		{name: "a second blanket Exists", settings: armTolerations, img: linuxArm64,
			original: keptPod(linuxArm64, []v1.Toleration{blanket}, nil, ""), returned: keptPod(linuxArm64, []v1.Toleration{blanket, blanket}, nil, ""),
			added: true, violation: "architectureTolerations gives no architecture"},
		{name: "arm64's toleration, the returned Pod admits no node (matchNodeLabels), the original arm64", settings: armTolerations, img: linuxArm64,
			original: keptPod(linuxArm64, nil, nil, ""), returned: nowhere(keptPod(linuxArm64, []v1.Toleration{armToleration}, nil, "", "arm64")), added: true},
		{name: "arm64's toleration, the returned Pod admits no node, the images run on amd64 only", settings: armTolerations, img: linuxAmd64,
			original: keptPod(linuxAmd64, nil, nil, ""), returned: nowhere(keptPod(linuxAmd64, []v1.Toleration{armToleration}, nil, "", "amd64")),
			added: true, violation: "no node of those architectures that it admits runs its images"},
		{name: "the original's toleration dropped", settings: armTolerations, img: linuxArm64,
			original: keptPod(linuxArm64, []v1.Toleration{dedicated, armToleration}, nil, ""), returned: keptPod(linuxArm64, []v1.Toleration{armToleration}, nil, ""),
			violation: "lost (or changed) the original's toleration {key \"dedicated\""},
	})
}

// TestPreferencesKept: the original's preferred terms are kept, unchanged; added terms are
// `kubernetes.io/arch In [A]` of the weight the settings (or the annotation, which overrides
// them) give A, once each, on an architecture the returned Pod runs on; none where the original
// weighs architectures itself.
func TestPreferencesKept(t *testing.T) {
	preferred := settings.Settings{PreferredArchitectures: []settings.WeightedArchitecture{{Architecture: "arm64", Weight: 80}, {Architecture: "amd64", Weight: 20}}}
	own := v1.PreferredSchedulingTerm{Weight: 7, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{requirement("tier", v1.NodeSelectorOpIn, "1")}}}
	changed := own
	changed.Weight = 8
	runKept(t, preferencesKept, []keptCase{
		{name: "unchanged", settings: preferred, img: linuxBoth,
			original: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{own}, ""), returned: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{own}, "")},
		{name: "the settings' preferences", settings: preferred, img: linuxBoth,
			original: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{own}, ""), returned: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{own, prefers("arm64", 80), prefers("amd64", 20)}, ""),
			added: true},
		{name: "another weight", settings: preferred, img: linuxBoth,
			original: keptPod(linuxBoth, nil, nil, ""), returned: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{prefers("arm64", 50)}, ""),
			added: true, violation: "but the settings and annotation give"},
		{name: "an architecture the settings do not name", settings: preferred, img: linuxBoth,
			original: keptPod(linuxBoth, nil, nil, ""), returned: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{prefers("s390x", 80)}, ""),
			added: true, violation: "but the settings and annotation give"},
		{name: "the annotation overrides the settings", settings: preferred, img: linuxBoth,
			original: keptPod(linuxBoth, nil, nil, "amd64"), returned: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{prefers("amd64", defaultPreferredWeight)}, "amd64"),
			added: true},
		{name: "the settings' preference under the annotation", settings: preferred, img: linuxBoth,
			original: keptPod(linuxBoth, nil, nil, "amd64"), returned: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{prefers("arm64", 80)}, "amd64"),
			added: true, violation: "but the settings and annotation give"},
		{name: "an architecture the images do not run on", settings: preferred, img: linuxAmd64,
			original: keptPod(linuxAmd64, nil, nil, ""), returned: keptPod(linuxAmd64, nil, []v1.PreferredSchedulingTerm{prefers("arm64", 80)}, ""),
			added: true, violation: "no node of it that it admits runs its images"},
		{name: "twice", settings: preferred, img: linuxBoth,
			original: keptPod(linuxBoth, nil, nil, ""), returned: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{prefers("arm64", 80), prefers("arm64", 80)}, ""),
			added: true, violation: "more than one preferred term added for arm64"},
		{name: "a term of two architectures", settings: preferred, img: linuxBoth,
			original: keptPod(linuxBoth, nil, nil, ""), returned: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{{Weight: 80, Preference: v1.NodeSelectorTerm{
				MatchExpressions: []v1.NodeSelectorRequirement{requirement(archLabel, v1.NodeSelectorOpIn, "arm64", "amd64")}}}}, ""),
			added: true, violation: "which is not one `kubernetes.io/arch In [architecture]`"},
		{name: "the original weighs architectures", settings: preferred, img: linuxBoth,
			original: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{prefers("amd64", 5)}, ""), returned: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{prefers("amd64", 5), prefers("arm64", 80)}, ""),
			added: true, violation: "the original weighs architectures itself"},
		{name: "the original's term changed", settings: preferred, img: linuxBoth,
			original: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{own}, ""), returned: keptPod(linuxBoth, nil, []v1.PreferredSchedulingTerm{changed}, ""),
			added: true, violation: "preferences: "},
	})
}

// checkViolations: none when want is "", else at least one, each containing want.
// keptCase is one case of a kept.go check: the returned Pod judged against the original.
type keptCase struct {
	name               string
	settings           settings.Settings
	img                image
	original, returned *v1.Pod
	added              bool
	violation          string // a part of each violation wanted; "" for none
}

// runKept runs check on each case: its violations, and whether it says the policy added some.
func runKept(t *testing.T, check func(*Case, *v1.Pod, []image, func(string, ...any)) bool, cases []keptCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Case{Settings: tc.settings, Template: tc.original, images: map[string]image{tc.img.ref: tc.img}}
			var violations []string
			added := check(c, tc.returned, []image{tc.img}, func(format string, args ...any) {
				violations = append(violations, fmt.Sprintf(format, args...))
			})
			checkViolations(t, violations, tc.violation)
			if added != tc.added {
				t.Errorf("added %v, want %v", added, tc.added)
			}
		})
	}
}

func checkViolations(t *testing.T, violations []string, want string) {
	t.Helper()
	switch {
	case want == "" && len(violations) > 0:
		t.Errorf("want no violation, got %q", violations)
	case want != "" && len(violations) == 0:
		t.Errorf("want a violation with %q, got none", want)
	}
	for _, v := range violations {
		if want != "" && !strings.Contains(v, want) {
			t.Errorf("violation %q, want %q in it", v, want)
		}
	}
}
