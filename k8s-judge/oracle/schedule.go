// Package oracle is Kubernetes' own code, called as the scheduler and the API server call it,
// to judge what the policy returns: where a Pod may be scheduled (the NodeAffinity and
// TaintToleration filters), and whether the API server accepts a created object (decoding,
// defaulting, conversion, the registry strategy's validation).
package oracle

import (
	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/helper"
)

// Admits says whether the scheduler's filters on labels and taints let pod onto node: the
// NodeAffinity plugin's required part (the nodeSelector AND one of the required node affinity
// terms, matchFields included) and the TaintToleration plugin's (no NoSchedule or NoExecute
// taint the Pod does not tolerate). An error is the matcher's: a requirement it cannot parse.
func Admits(pod *v1.Pod, node *v1.Node) (bool, error) {
	matches, err := Matches(pod, node)
	if err != nil || !matches {
		return false, err
	}
	return Tolerates(pod, node), nil
}

// Matches is the NodeAffinity filter alone (nodeSelector and required terms).
func Matches(pod *v1.Pod, node *v1.Node) (bool, error) {
	return Matcher(pod)(node)
}

// Matcher is the NodeAffinity filter of pod, its requirements parsed once, for many nodes.
func Matcher(pod *v1.Pod) func(*v1.Node) (bool, error) {
	return nodeaffinity.GetRequiredNodeAffinity(pod).Match
}

// Tolerates is the TaintToleration filter alone.
func Tolerates(pod *v1.Pod, node *v1.Node) bool {
	comparisons := utilfeature.DefaultFeatureGate.Enabled(features.TaintTolerationComparisonOperators)
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints,
		pod.Spec.Tolerations, helper.DoNotScheduleTaintsFilterFunc(), comparisons)
	return !untolerated
}
