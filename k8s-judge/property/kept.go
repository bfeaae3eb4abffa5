package property

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/oracle"
)

// preferredAnnotation is the Pod annotation that names the architecture to prefer (the
// README's settings table: it overrides preferredArchitectures and preferredArchitecture).
const preferredAnnotation = "image-arch-affinity.kubewarden.io/preferred-architecture"

// defaultPreferredWeight is preferredArchitectureWeight's default (the README's settings table).
const defaultPreferredWeight = 50

// tolerationsKept judges the returned Pod's tolerations against the original's (pod as sent):
//
//   - each toleration of the original is in the returned Pod, unchanged (as many times);
//   - each other toleration of the returned Pod (added) equals (Kubernetes' default operator
//     Equal filled in) one that architectureTolerations gives an architecture A on which the Pod
//     truly runs: some node of A (of either OS, any Windows build, any other labels and name)
//     that the returned Pod's node affinity admits (Kubernetes' matcher) runs every image looked
//     up, per the catalog, and the Pod's spec.os (trulyRuns). A blanket `operator: Exists` that
//     no architecture is given fails.
//
// added says whether the policy added any. A failure is reported through fail.
func tolerationsKept(c *Case, result *v1.Pod, known []image, fail func(string, ...any)) (added bool) {
	extra, lost := multisetDiff(result.Spec.Tolerations, c.Template.Spec.Tolerations, func(a, b v1.Toleration) bool {
		return apiequality.Semantic.DeepEqual(a, b)
	})
	for _, t := range lost {
		fail("tolerations: the returned Pod lost (or changed) the original's toleration %s", tolerationText(t))
	}
	for _, t := range extra {
		arches := tolerationArches(c, t)
		if len(arches) == 0 {
			fail("tolerations: the returned Pod has %s, which the original did not and architectureTolerations gives no architecture", tolerationText(t))
			continue
		}
		if !slices.ContainsFunc(arches, func(arch string) bool { return trulyRuns(c, result, known, arch) }) {
			fail("tolerations: the returned Pod has %s, architectureTolerations' for %v, but no node of those architectures that it admits runs its images", tolerationText(t), arches)
		}
	}
	return len(extra) > 0
}

// preferencesKept judges the returned Pod's preferred node affinity terms against the
// original's (pod as sent):
//
//   - each preferred term of the original is in the returned Pod, unchanged, with its weight (as
//     many times);
//   - where the original weighs an architecture itself (a preferred term with an expression on
//     kubernetes.io/arch or its beta label), nothing is added;
//   - each other term (added) is `kubernetes.io/arch In [A]` alone, of a weight the settings give
//     A: the preferred-architecture annotation when it names an architecture the policy knows
//     (weight preferredArchitectureWeight, default 50), else preferredArchitecture (the same
//     weight), else preferredArchitectures' entries; no A twice; and the Pod truly runs on A (a
//     node of A its returned node affinity admits runs every image looked up: trulyRuns).
//
// added says whether the policy added any. A failure is reported through fail.
func preferencesKept(c *Case, result *v1.Pod, known []image, fail func(string, ...any)) (added bool) {
	original, returned := preferredTerms(c.Template), preferredTerms(result)
	extra, lost := multisetDiff(returned, original, func(a, b v1.PreferredSchedulingTerm) bool {
		return apiequality.Semantic.DeepEqual(a, b)
	})
	for _, term := range lost {
		fail("preferences: the returned Pod lost (or changed) the original's preferred term %s", termText(term))
	}
	if len(extra) > 0 && slices.ContainsFunc(original, weighsArchitecture) {
		fail("preferences: the original weighs architectures itself, but the returned Pod has %d more preferred terms, e.g. %s", len(extra), termText(extra[0]))
		return true
	}
	allowed := allowedPreferences(c)
	var named []string
	for _, term := range extra {
		arch, ok := architectureTerm(term)
		switch {
		case !ok:
			fail("preferences: the returned Pod has the preferred term %s, which is not one `%s In [architecture]`", termText(term), archLabel)
		case slices.Contains(named, arch):
			fail("preferences: the returned Pod has more than one preferred term added for %s", arch)
		case !slices.ContainsFunc(allowed, func(w weighted) bool { return w.arch == arch && w.weight == int64(term.Weight) }):
			fail("preferences: the returned Pod has the preferred term %s, but the settings and annotation give %v", termText(term), allowed)
		case !trulyRuns(c, result, known, arch):
			fail("preferences: the returned Pod prefers %s, but no node of it that it admits runs its images", arch)
		}
		named = append(named, arch)
	}
	return len(extra) > 0
}

// weighted is an architecture the policy may prefer, and the weight of its term.
type weighted struct {
	arch   string
	weight int64
}

// allowedPreferences are the (architecture, weight) preferred terms the policy may add to c's Pod
// (the README's settings table): the annotation's architecture when it names one the policy
// knows, else preferredArchitecture, else preferredArchitectures.
func allowedPreferences(c *Case) []weighted {
	weight := int64(defaultPreferredWeight)
	if w := c.Settings.PreferredArchitectureWeight; w != nil {
		weight = *w
	}
	if arch := c.Template.Annotations[preferredAnnotation]; slices.Contains(everyArch, arch) {
		return []weighted{{arch, weight}}
	}
	if arch := c.Settings.PreferredArchitecture; arch != "" {
		return []weighted{{arch, weight}}
	}
	var out []weighted
	for _, w := range c.Settings.PreferredArchitectures {
		out = append(out, weighted{w.Architecture, w.Weight})
	}
	return out
}

// trulyRuns says whether the returned Pod (result) truly runs on arch (runsArch); when it admits
// no node at all (matchNodeLabels pinned it to a label value its own constraints exclude: it runs
// nowhere, its tolerations and preferences unused), whether the original Pod does.
func trulyRuns(c *Case, result *v1.Pod, known []image, arch string) bool {
	return runsArch(c, result, known, arch) || admitsNone(c, result) && runsArch(c, c.Template, known, arch)
}

// admitsNone says whether pod's node affinity admits no node of any architecture the policy
// knows, OS, Windows build, labels and name.
func admitsNone(c *Case, pod *v1.Pod) bool {
	matches := oracle.Matcher(pod)
	for _, os := range nodeOSes {
		for _, n := range nodesOf(c, os, everyArch, windowsBuilds) {
			if ok, _ := matches(&n); ok {
				return false
			}
		}
	}
	return true
}

// runsArch says whether pod (the returned Pod) truly runs on arch: some node of arch, of either
// OS, any Windows build and any other labels and name (probes' label sets), that pod's node
// affinity admits runs every image of known (the catalog; the builds compared under
// pinWindowsBuild) and pod's spec.os.
func runsArch(c *Case, pod *v1.Pod, known []image, arch string) bool {
	matches := oracle.Matcher(pod)
	for _, os := range nodeOSes {
		if !specOSAllows(pod, os) {
			continue
		}
		for _, n := range nodesOf(c, os, []string{arch}, windowsBuilds) {
			if !runsAll(known, &n, c.builds()) {
				continue
			}
			if ok, _ := matches(&n); ok {
				return true
			}
		}
	}
	return false
}

// tolerationArches are the architectures whose architectureTolerations include t (Kubernetes'
// default operator, Equal, filled in on both), sorted.
func tolerationArches(c *Case, t v1.Toleration) []string {
	var arches []string
	for arch, given := range c.Settings.ArchitectureTolerations {
		if slices.ContainsFunc(given, func(g v1.Toleration) bool { return sameToleration(g, t) }) {
			arches = append(arches, arch)
		}
	}
	slices.Sort(arches)
	return arches
}

// sameToleration says whether a and b are the same toleration, an empty operator read as Equal
// (the API's default).
func sameToleration(a, b v1.Toleration) bool {
	norm := func(t v1.Toleration) v1.Toleration {
		if t.Operator == "" {
			t.Operator = v1.TolerationOpEqual
		}
		return t
	}
	return apiequality.Semantic.DeepEqual(norm(a), norm(b))
}

// preferredTerms are pod's preferred node affinity terms.
func preferredTerms(pod *v1.Pod) []v1.PreferredSchedulingTerm {
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		return a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// weighsArchitecture says whether term has an expression on the architecture label or its beta
// label: the Pod weighs architectures itself.
func weighsArchitecture(term v1.PreferredSchedulingTerm) bool {
	return slices.ContainsFunc(term.Preference.MatchExpressions, func(e v1.NodeSelectorRequirement) bool {
		return e.Key == archLabel || e.Key == betaArchLabel
	})
}

// architectureTerm reads term as `kubernetes.io/arch In [arch]` alone.
func architectureTerm(term v1.PreferredSchedulingTerm) (string, bool) {
	p := term.Preference
	if len(p.MatchFields) > 0 || len(p.MatchExpressions) != 1 {
		return "", false
	}
	e := p.MatchExpressions[0]
	if e.Key != archLabel || e.Operator != v1.NodeSelectorOpIn || len(e.Values) != 1 {
		return "", false
	}
	return e.Values[0], true
}

// multisetDiff compares two lists as multisets: extra are got's items not matched in want, lost
// want's not matched in got (each item matches one).
func multisetDiff[T any](got, want []T, same func(a, b T) bool) (extra, lost []T) {
	left := slices.Clone(want)
	for _, item := range got {
		if i := slices.IndexFunc(left, func(w T) bool { return same(item, w) }); i >= 0 {
			left = slices.Delete(left, i, i+1)
			continue
		}
		extra = append(extra, item)
	}
	return extra, left
}

func tolerationText(t v1.Toleration) string {
	text := fmt.Sprintf("{key %q operator %q value %q effect %q", t.Key, t.Operator, t.Value, t.Effect)
	if t.TolerationSeconds != nil {
		text += fmt.Sprintf(" tolerationSeconds %d", *t.TolerationSeconds)
	}
	return text + "}"
}

func termText(term v1.PreferredSchedulingTerm) string {
	return fmt.Sprintf("{weight %d, %v, fields %v}", term.Weight, term.Preference.MatchExpressions, term.Preference.MatchFields)
}
