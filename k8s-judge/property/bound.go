package property

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/oracle"
)

// Pods created bound to a Node (spec.nodeName, as a controller or a user binds them: the
// scheduler never places them). The kubelet of that Node admits such a Pod or refuses it: its
// nodeSelector and required terms (the kubelet's own admission runs the scheduler's NodeAffinity
// filter), its spec.os, and then every image must run there. Judged from the catalog and the
// Node's labels, never from the policy's rules:
//
//   - without readNodes: accepted unchanged without a warning (the README's table: "a new Pod
//     bound to a node ... accepted unchanged, no lookup": the settings' contract);
//   - with readNodes: never patched (the scheduler does not place it); a lookup that fails is
//     onLookupFailure's (reject: refused; accept: unchanged); a Node that runs every image looked
//     up: accepted; a Node that does not: refused (onNoCommonArchitecture: accept: accepted
//     unchanged with a warning). Judged first, before any lookup: where the
//     Node's kubelet refuses the Pod anyway (its nodeSelector, required terms or spec.os exclude the
//     Node), nothing runs there whatever the policy says: counted.

// drawCreatedBound binds one Pod in ten, at its creation, to one of c's Nodes (never the
// virtual-kubelet Node: what runs there is its provider's business). Such a Pod is not updated
// (update.go binds Pods itself) and carries no scheduling gates (the API server refuses them on
// a bound Pod).
func drawCreatedBound(t *rapid.T, c *Case) {
	if c.Kind != "Pod" || len(c.Nodes) == 0 || !chance(t, "created bound", 10) {
		return
	}
	node := c.Nodes[rapid.IntRange(0, len(c.Nodes)-1).Draw(t, "created bound to")]
	pod := c.Object.(v1.Pod)
	pod.Spec.NodeName, pod.Spec.SchedulingGates = node.Name, nil
	c.Template.Spec.NodeName, c.Template.Spec.SchedulingGates = node.Name, nil
	if c.Update != nil && c.Update.named {
		// Not gated after all: the Pod as drawn (drawUpdatePlan).
		pod.Spec.Affinity, c.Template.Spec.Affinity = c.Update.unnamed, c.Update.unnamed
	}
	c.Object = pod
	c.Update = nil
}

// The checks and counts of Pods created bound.
const (
	// checkBound: a Pod created bound, judged on its Node (readNodes) or by the contract.
	checkBound = "created bound"
	// checkBoundNode: checkBound with readNodes, on the Node's labels and the catalog.
	checkBoundNode = "created bound, judged on its Node (readNodes)"
	// skipBound: b., c., d. are not judged on a Pod created bound (the scheduler does not place
	// it): checkBound judges it.
	skipBound = "b, c, d: created bound (judged on its Node instead)"
	// skipBoundKubelet: the Node's kubelet refuses the Pod whatever the policy says (its
	// nodeSelector or required terms exclude the Node).
	skipBoundKubelet = "created bound: the Node's kubelet refuses the Pod anyway (its nodeSelector, required terms or spec.os exclude the Node)"
)

// judgeBound judges the answer to a Pod created bound (see above); known and missing are its
// images as the policy can look them up.
func judgeBound(c *Case, v *Verdict, warnings []string, known []image, missing bool, fail func(string, ...any)) {
	v.judged(checkBound)
	v.skipped(skipBound)
	if v.Patched {
		fail("a Pod created bound (spec.nodeName %s) was patched", c.Template.Spec.NodeName)
	}
	if !c.readNodes() {
		// The contract: no lookup, accepted unchanged.
		if v.Rejected || len(warnings) > 0 {
			fail("a Pod created bound without readNodes: want accepted unchanged without a warning (no lookup), got rejected=%v warnings=%q", v.Rejected, warnings)
		}
		return
	}
	v.judged(checkBoundNode)
	i := slices.IndexFunc(c.Nodes, func(n v1.Node) bool { return n.Name == c.Template.Spec.NodeName })
	if i < 0 {
		fail("the generator bound the Pod to %s, which the cluster does not have", c.Template.Spec.NodeName)
		return
	}
	node := &c.Nodes[i]
	// The Node's kubelet refuses the Pod whatever the policy says (its nodeSelector or required
	// terms exclude the Node, or its spec.os names another OS): nothing runs there, and the
	// policy may refuse it before any lookup.
	if admitted, _ := oracle.Matcher(c.Template)(node); !admitted || !specOSAllows(c.Template, node.Labels[osLabel]) {
		v.skipped(skipBoundKubelet)
		return
	}
	switch lookup := c.Settings.OnLookupFailureOrDefault(); {
	case missing && lookup == "reject":
		if !v.Rejected {
			fail("a Pod created bound with an image that cannot be looked up under onLookupFailure: reject was accepted")
		}
		return
	case missing && lookup == "accept":
		if v.Rejected {
			fail("a Pod created bound with an image that cannot be looked up under onLookupFailure: accept was refused")
		}
		return
	}
	runs := runsAll(known, node, c.builds())
	at := fmt.Sprintf("%s (%s/%s)", node.Name, node.Labels[osLabel], node.Labels[archLabel])
	switch {
	case runs && v.Rejected:
		fail("a Pod created bound to %s, which runs it, was refused", at)
	case !runs && c.Settings.OnNoCommonArchitectureOrDefault() == "reject" && !v.Rejected:
		fail("a Pod created bound to %s, which does not run its images, was accepted", at)
	case !runs && c.Settings.OnNoCommonArchitectureOrDefault() == "accept" && (v.Rejected || len(warnings) == 0):
		fail("a Pod created bound to %s, which does not run it, under onNoCommonArchitecture: accept: want accepted with a warning, got rejected=%v warnings=%q", at, v.Rejected, warnings)
	}
}
