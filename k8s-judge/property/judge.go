package property

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/oracle"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/policyhost"
)

// resources are the kinds' group, version and resource, as an AdmissionRequest names them.
var resources = map[string][3]string{
	"Pod": {"", "v1", "pods"}, "ReplicationController": {"", "v1", "replicationcontrollers"},
	"Deployment": {"apps", "v1", "deployments"}, "StatefulSet": {"apps", "v1", "statefulsets"},
	"DaemonSet": {"apps", "v1", "daemonsets"}, "ReplicaSet": {"apps", "v1", "replicasets"},
	"Job": {"batch", "v1", "jobs"}, "CronJob": {"batch", "v1", "cronjobs"},
}

// request is the AdmissionRequest the API server sends for creating c's object, or for updating
// c.Old to it (a workload UPDATE: workload_update.go).
func (c *Case) request(object []byte) ([]byte, error) {
	r := resources[c.Kind]
	kind := map[string]string{"group": r[0], "version": r[1], "kind": c.Kind}
	resource := map[string]string{"group": r[0], "version": r[1], "resource": r[2]}
	operation, options, old := "CREATE", "CreateOptions", json.RawMessage("null")
	if c.Old != nil {
		operation, options, old = "UPDATE", "UpdateOptions", c.Old
	}
	return json.Marshal(map[string]any{
		"uid": "judged", "kind": kind, "resource": resource, "requestKind": kind, "requestResource": resource,
		"name": "judged", "namespace": "default", "operation": operation,
		"userInfo": map[string]any{"username": "k8s-judge"},
		"object":   json.RawMessage(object), "oldObject": old, "dryRun": false,
		"options": map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": options},
	})
}

// template reads the Pod template of a returned workload (or the Pod) as a Pod.
func template(kind string, object []byte) (*v1.Pod, error) {
	var into struct {
		Spec struct {
			Template    *v1.PodTemplateSpec `json:"template"`
			JobTemplate *struct {
				Spec struct {
					Template v1.PodTemplateSpec `json:"template"`
				} `json:"spec"`
			} `json:"jobTemplate"`
		} `json:"spec"`
	}
	if kind == "Pod" {
		var pod v1.Pod
		return &pod, json.Unmarshal(object, &pod)
	}
	if err := json.Unmarshal(object, &into); err != nil {
		return nil, err
	}
	t := into.Spec.Template
	if into.Spec.JobTemplate != nil {
		t = &into.Spec.JobTemplate.Spec.Template
	}
	if t == nil {
		return nil, fmt.Errorf("no template in %s", object)
	}
	return &v1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}, nil
}

// The checks a case is judged on (Verdict.Judged), as the property's counts name them.
const (
	// checkA: a. the returned (patched) object passes the API server's validation.
	checkA = "a"
	// checkMessage: a refusal carries the policy's message.
	checkMessage = "message"
	// checkLookup: an image cannot be looked up: refused under onLookupFailure: reject, accepted
	// unchanged under accept.
	checkLookup = "lookup"
	// checkNoArchImage: no image that runs on a CPU architecture was looked up (ignoreImage): not
	// refused.
	checkNoArchImage = "no-arch-image"
	// checkD: d. refused exactly when no node the settings count is admitted and runs every
	// image (onNoCommonArchitecture: accept: accepted unchanged with a warning).
	checkD = "d"
	// checkDByNodes, checkDByPools, checkDByContract: which nodes decided d.'s verdict: the
	// cluster's Nodes (d. on them alone says the same: Kubernetes' matcher on real Nodes), else
	// nodes only the settings declare, with NodePools that count (their requirements, as
	// docs/karpenter.md counts them) or without (schedulableArchitectures, every architecture,
	// autoscaledArchitectures): the settings' contract.
	checkDByNodes    = "d, decided by the cluster's Nodes"
	checkDByPools    = "d, decided by nodes only the settings declare, NodePools (contract)"
	checkDByContract = "d, decided by nodes only the settings declare (contract)"
	// checkDRefusals: d.'s refusal half where d. is not judged (readNodes, no Node nor pool of
	// the Pod's OS): not refused when a node of every architecture its images run on (of its OS)
	// is admitted: every Node list of the OS comes back empty, and the policy decides as if the
	// cluster had a Node of an architecture the lists it read do not rule out, one the images
	// run on (which lists it reads is the policy's).
	checkDRefusals = "d, refusals, no Node of its OS"
	// checkDOSOutside: d. before any lookup: static settings whose clusterOperatingSystems name
	// no OS of the nodes that admit the Pod (outsideClusterOSes): refused (onNoCommonArchitecture:
	// accept: accepted unchanged with a warning) whatever its images.
	checkDOSOutside = "d, only nodes of OSes the settings exclude admit it"
	// checkValidate: a workload template under validate is not changed.
	checkValidate = "validate"
	// checkB: b., on at least one Node (of any OS).
	checkB = "b"
	// checkBAdmitted: b. with some Node admitting the returned Pod (b. is then more than "admits
	// nothing").
	checkBAdmitted = "b, a Node admits"
	// checkBOtherOS: b. judged on a Node of another OS than the Pod's.
	checkBOtherOS = "b, Nodes of another OS"
	// checkBOSPin: b. on a Node of another OS that admitted the original Pod and runs its
	// architectures for the Pod's OS, not its own: the returned Pod must not admit it, which an
	// architecture pin alone does not do (the policy's OS pin).
	checkBOSPin = "b, the OS pin needed"
	// checkBOtherOSAdmits: b. with a Node of another OS admitting the returned Pod (a Pod that
	// states no OS whose images run there too: decided for both OSes; images that run anywhere: WebAssembly).
	checkBOtherOSAdmits = "b, a Node of another OS admits"
	// checkBDeclared: b. on the nodes the settings declare (declared: schedulableArchitectures
	// and clusterOperatingSystems, autoscaledArchitectures, the cluster's Node architectures with
	// readNodes, or every architecture), not only the drawn Nodes.
	checkBDeclared = "b, nodes the settings declare"
	// checkBDeclaredAdmits: checkBDeclared with a declared node admitting the returned Pod.
	checkBDeclaredAdmits = "b, a node the settings declare admits"
	// checkC: c., the returned Pod's node affinity admits no node the original's did not.
	checkC = "c"
	// checkCNodes: c. with some Node (of any OS) that admitted the original Pod and runs it (its
	// images; its spec.os, when set, is the Node's OS): it must still admit the returned one.
	checkCNodes = "c, a Node ran it"
	// checkCOtherOS: c. with some Node of another OS than the Pod's (its choice, the one OS its
	// terms admit, else defaultOperatingSystem) that admitted the original Pod and runs it, its
	// images not all running anywhere: a Pod that states no OS whose images run on both OSes
	// (one term per OS they run on) must still be admitted there.
	checkCOtherOS = "c, a Node of another OS ran it"
	// checkDPools: d. by Karpenter: a NodePool that counts launches, in Karpenter's simulation
	// of the original Pod (pools.go: launches), a Node of a platform of the Pod's OS that runs
	// it: the Pod must not be refused.
	checkDPools = "d, NodePool serves (Karpenter)"
	// checkDPoolsNone: d. by Karpenter's under-refusal half: accepted where only NodePools can
	// serve the Pod (no Node nor autoscaled pool runs it) and Karpenter's scheduler launches
	// nothing that runs it: failed unless the contract explains it (Verdict.Pools says how).
	checkDPoolsNone = "d, accepted, no NodePool serves it (Karpenter)"
	// checkBPools: b. on the Nodes Karpenter's simulation of the returned Pod launches from the
	// NodePools: each runs it.
	checkBPools = "b, NodePool Nodes (Karpenter)"
	// checkCVirtual: c. on the virtual-kubelet Node (no kubernetes.io/arch label) with readNodes,
	// where it admitted the original Pod: a pin never loses it (docs/node-aware.md).
	checkCVirtual = "c, a virtual-kubelet Node admitted it (readNodes)"
	// checkTolerations: an accepted case's returned Pod (template) keeps every toleration of the
	// original, and each it adds is one architectureTolerations gives an architecture it truly
	// runs on (kept.go: tolerationsKept).
	checkTolerations = "tolerations"
	// checkTolerationsKept: checkTolerations on a patched Pod that had tolerations of its own.
	checkTolerationsKept = "tolerations, originals kept"
	// checkTolerationsAdded: checkTolerations on a Pod the policy added tolerations to.
	checkTolerationsAdded = "tolerations, added"
	// checkPreferences: an accepted case's returned Pod (template) keeps every preferred term of
	// the original, and each it adds prefers, with the settings' weight, an architecture the
	// settings or the annotation name and it truly runs on (kept.go: preferencesKept).
	checkPreferences = "preferences"
	// checkPreferencesKept: checkPreferences on a patched Pod that had preferred terms.
	checkPreferencesKept = "preferences, originals kept"
	// checkPreferencesAdded: checkPreferences on a Pod the policy added preferred terms to.
	checkPreferencesAdded = "preferences, added"
	// checkByDigest, checkMirrored, checkShortName, checkNestedIndex: a case judged (b., c., d.
	// or the lookup checks) whose Pod names an image by digest (or tag and digest), on a
	// registry host registryMirrors maps to the fixture registry (mirrorHost, prefixedHost),
	// by a Docker Hub short name (docker.io mirrored), or an index that nests indexes (spell,
	// imagePool).
	checkByDigest = "references by digest"
	checkMirrored = "references through registryMirrors"
	// checkMirrorPrefix: checkMirrored through the mirror with a path prefix (prefixedHost).
	checkMirrorPrefix = "references through a registryMirrors path prefix"
	checkShortName    = "Docker Hub short names (mirrored)"
	// checkSingleName: a case judged whose Pod names an image by a single name
	// (`single-linux-amd64:1.0`: docker.io/library/..., docker.io mirrored).
	checkSingleName  = "Docker Hub single names (library/, mirrored)"
	checkNestedIndex = "indexes that nest indexes"
)

// checks are the checks in the order the counts print them.
var checks = []string{checkA, checkMessage, checkLookup, checkNoArchImage, checkD, checkDByNodes, checkDByPools, checkDByContract, checkDRefusals, checkDOSOutside, checkValidate, checkB, checkBAdmitted,
	checkBOtherOS, checkBOSPin, checkBOtherOSAdmits, checkBDeclared, checkBDeclaredAdmits, checkC, checkCNodes, checkCOtherOS, checkCVirtual, checkDPools, checkDPoolsNone, checkBPools,
	checkByDigest, checkMirrored, checkMirrorPrefix, checkShortName, checkSingleName, checkNestedIndex, checkBound, checkBoundNode,
	checkTolerations, checkTolerationsKept, checkTolerationsAdded, checkPreferences, checkPreferencesKept, checkPreferencesAdded}

// Why b., c. or d. is not judged in a case (Verdict.Skipped). Each is counted and printed.
const (
	// An image cannot be looked up: onLookupFailure decides the case (checkLookup), not what
	// runs where.
	skipLookup = "b, c, d: an image cannot be looked up (onLookupFailure: reject or accept decides)"
	// A lookup the time budget left out: timing decides the case, which the judge cannot know.
	skipBudget = "tolerations, preferences, b, c, d: a lookup's time budget was spent (timing; onLookupFailure judged)"
	// No image that runs on a CPU architecture was looked up (ignoreImage): no node is ruled out
	// by an image, fallbackArchitectures are a guess; c.'s rules are still judged.
	skipNoArchImage = "b, d: no image that runs on a CPU architecture was looked up (ignoreImage)"
	// readNodes finds no Node nor pool of the Pod's OS: the policy decides as if it had one
	// (docs/node-aware.md), and the Pod waits for a Node of its OS either way. Its acceptances
	// are not judged; its refusals are (checkDRefusals).
	skipNoNodeOfOS = "d: readNodes, no Node nor pool of the Pod's OS (the policy decides as if it had one; refusals judged)"
	// Refused: nothing is returned to place.
	skipRejected = "b, c: refused (nothing returned)"
	// onNoCommonArchitecture: accept and no node the settings count runs it: accepted unchanged
	// (judged by d.), nothing is placed.
	skipNothingRuns = "b, c: no node the settings count runs it, accepted unchanged (onNoCommonArchitecture: accept)"
	// A workload template under validate is never changed (checkValidate): nothing is placed.
	skipValidate = "b, c: a template under validate (judged unchanged instead)"
	// Static settings omit clusterOperatingSystems (the cluster has the Pods' own OS only) and the
	// cluster has no Node of the Pod's OS: the settings state no other OS, the policy pins none,
	// and no Node is judged (c.'s first half is).
	skipNoNodeHere = "b: no clusterOperatingSystems (the Pods' own OS only), and the cluster has no Node of the Pod's OS"
	// The returned Pod admits the virtual-kubelet Node: b. is not judged on it (its Pods run
	// elsewhere, on platforms that are its provider's business: docs/node-aware.md); with
	// static settings, which state no such Node, neither is c. (the pin may lose it).
	skipVirtualB      = "b: the returned Pod admits a virtual-kubelet Node (no architecture label; what runs there is its provider's business)"
	skipVirtualStatic = "c: a virtual-kubelet Node admitted the Pod under static settings (they state no such Node)"
	// Accepted, and of the cluster's nodes only the virtual-kubelet Node admits the Pod: it may
	// run there (what runs there is its provider's business), so the acceptance is not judged;
	// a refusal is.
	skipVirtualD = "d: accepted, only the virtual-kubelet Node admits it (what runs there is its provider's business)"
)

// What the judge sees when readNodes finds no Node nor pool of the Pod's OS (d. not judged):
// Verdict.NoNodeOfOS is one of these, counted.
const (
	// Refused, and no node of any architecture of the Pod's OS is admitted and runs it: what d.
	// would say (checkDRefusals judges it; refused while one runs it is a failure).
	noNodeRefused = "refused, no node of any architecture of its OS runs it"
	// Refused while a node of some architecture of the Pod's OS is admitted and runs it, and the
	// Pod excludes another the images run on: the policy decided as if the cluster had a Node
	// of that one, which the Node lists it read do not rule out (docs/node-aware.md).
	noNodeRefusedAsIf = "refused as if the cluster had a Node of an architecture its images run on and the Pod excludes (the lists read do not rule it out)"
	// Accepted while some Node of the cluster (of another OS) admits it and runs its images.
	noNodeAcceptedRunsElsewhere = "accepted, a Node of another OS admits it and runs its images"
	// Accepted under onNoCommonArchitecture: reject while no Node of the cluster, of any OS,
	// admits it and runs its images: a check "accepted only when some Node admits and runs it"
	// would fail, but the policy decides as if the Pod's OS had a Node (docs/node-aware.md).
	noNodeAcceptedNowhere = "accepted, no Node of any OS admits it and runs its images (not judged: docs/node-aware.md)"
	// Accepted under onNoCommonArchitecture: accept while no Node admits and runs it.
	noNodeAcceptedNowhereAccept = "accepted, no Node of any OS admits it and runs its images (onNoCommonArchitecture: accept)"
)

// Verdict is what was judged of one case.
type Verdict struct {
	Violations []string
	Rejected   bool
	Patched    bool
	// Judged are the checks judged (checkA...).
	Judged []string
	// Skipped say why b., c. or d. were not judged (skipLookup...).
	Skipped []string
	// NoNodeOfOS: readNodes finds no Node nor pool of the Pod's OS (d. is not judged): what was
	// seen (noNodeRefusedAsD...), else "".
	NoNodeOfOS string
	// PoolBuild: a Windows Node a NodePool may launch for the returned Pod, of some build, does
	// not run it, while one of another build does (pinWindowsBuild; a pool names no build).
	PoolBuild bool
	// Pools: an accepted Pod of a case with NodePools that no Node admits and runs, nor any Node
	// Karpenter's simulation launches for it, or a refused one Karpenter launches a Node for only
	// with tolerations the policy never adds: why (poolsOwnConstraints...), else "".
	Pools string
	// Evaluation is how long the host took.
	Evaluation time.Duration
	// Answer is the host's answer, as the failure report prints it.
	Answer string
	// Returned is the object as admitted (the defaulted object, the patch applied), when not
	// refused: what the API server stores (update.go starts a Pod's UPDATE from it).
	Returned []byte
}

func (v *Verdict) judged(checks ...string) { v.Judged = append(v.Judged, checks...) }

func (v *Verdict) skipped(why string) { v.Skipped = append(v.Skipped, why) }

// judge runs c through host and judges the answer with Kubernetes' code. The object sent is the
// one the API server sends a mutating webhook: the generated object with the scheme's defaults
// (oracle.Default); the patch is applied to it, and the original Pod the checks compare with is
// its (defaulted) template.
//
//	a. the returned object passes the API server's validation;
//	b. every Node of the cluster, of every OS, the scheduler's filters admit for the returned Pod
//	   runs it: all of its images, and its spec.os, when set, is the Node's OS (with a Node of
//	   another OS, the policy's OS pin);
//	c. every Node, of every OS, that admitted the original Pod and runs it still admits it (under
//	   matchNodeLabels, those of the Pod's zone): a Pod that states no OS, in a cluster of
//	   several, is decided for each OS its images run on; and the returned Pod's node
//	   affinity admits no node the original's did not;
//	d. with onNoCommonArchitecture: reject, refused exactly when no node the settings say may
//	   exist (universe, of each OS the Pod is decided for) is admitted by the original Pod and
//	   runs all its images;
//
// and, in every accepted case (kept.go), the returned Pod keeps the original's tolerations and
// preferred terms, unchanged, and adds only tolerations architectureTolerations gives, and
// preferred terms the settings or the annotation give, for architectures it truly runs on (the
// catalog).
func judge(c *Case, host policyhost.Host) (Verdict, error) {
	v, err := judgeCase(c, host)
	if err == nil {
		v.judged(c.references(v)...)
	}
	return v, err
}

// references are the reference checks (checkByDigest, ...) a verdict v of c counts: those of c's
// Pod's images (containers and volumes), where v judged where they run or fail (b., c., d., the
// lookup checks).
func (c *Case) references(v Verdict) []string {
	if !slices.ContainsFunc(v.Judged, func(check string) bool {
		return slices.Contains([]string{checkB, checkC, checkD, checkDRefusals, checkLookup, checkNoArchImage, checkValidate, checkBound}, check)
	}) {
		return nil
	}
	var out []string
	for _, ref := range append(containerImages(c.Template), ImageVolumes(c.Template)...) {
		first, _, _ := strings.Cut(ref, "/")
		switch {
		case strings.Contains(ref, "@sha256:"):
			out = appendNew(out, checkByDigest)
		case first == mirrorHost:
			out = appendNew(out, checkMirrored)
		case first == prefixedHost:
			out = appendNew(appendNew(out, checkMirrored), checkMirrorPrefix)
		case c.Settings.RegistryMirrors["docker.io"] != "" && !strings.Contains(ref, "/"):
			out = appendNew(out, checkSingleName)
		case c.Settings.RegistryMirrors["docker.io"] != "" && !strings.ContainsAny(first, ".:"):
			out = appendNew(out, checkShortName)
		}
		if c.images[ref].nested {
			out = appendNew(out, checkNestedIndex)
		}
	}
	return out
}

func judgeCase(c *Case, host policyhost.Host) (Verdict, error) {
	var v Verdict
	fail := func(format string, args ...any) { v.Violations = append(v.Violations, fmt.Sprintf(format, args...)) }
	generated, err := json.Marshal(c.Object)
	if err != nil {
		return v, err
	}
	if problems := oracle.ValidateCreate("default", generated); len(problems) > 0 {
		return v, fmt.Errorf("the generator made an object the API server refuses: %s", strings.Join(problems, "; "))
	}
	// The API server decodes the created object, applies the scheme's defaults, then calls
	// mutating admission: the webhook gets the defaulted object.
	original, err := oracle.Default(generated)
	if err != nil {
		return v, fmt.Errorf("defaulting: %w", err)
	}
	sent, err := template(c.Kind, original)
	if err != nil {
		return v, err
	}
	// The judge reads the Pod as sent (its images, OS and rules are those generated: defaulting
	// adds none).
	c = c.withTemplate(sent)
	request, err := c.request(original)
	if err != nil {
		return v, err
	}
	start := time.Now()
	response, err := host.Evaluate(request, c.Settings)
	v.Evaluation = time.Since(start)
	if err != nil {
		return v, fmt.Errorf("%s: %w", host.Name(), err)
	}
	v.Rejected, v.Patched = !response.Allowed, len(response.Patch) > 0
	v.Answer = fmt.Sprintf("allowed=%v message=%q warnings=%q patch=%s", response.Allowed, response.Message(), response.Warnings, response.Patch)
	returned := original
	if v.Patched {
		patch, err := jsonpatch.DecodePatch(response.Patch)
		if err != nil {
			return v, fmt.Errorf("patch %s: %w", response.Patch, err)
		}
		if returned, err = patch.Apply(original); err != nil {
			return v, fmt.Errorf("patch %s: %w", response.Patch, err)
		}
		// a.
		v.judged(checkA)
		for _, problem := range oracle.ValidateCreate("default", returned) {
			fail("a. the API server refuses the returned %s: %s", c.Kind, problem)
		}
	}
	if !v.Rejected {
		// The object as admitted, which the UPDATEs start from (whatever is judged below).
		v.Returned = returned
	}
	// A lookup the time budget left out (lookupBudgetMilliseconds, 1500 ms by default) fails by
	// timing, which the judge cannot know: only onLookupFailure's promise is judged, and the run
	// fails when it happens too often (maxShareBudget).
	if budgetSpent(response.Message(), response.Warnings) {
		v.skipped(skipBudget)
		switch lookup := c.Settings.OnLookupFailureOrDefault(); {
		case lookup == "reject" && !v.Rejected, lookup == "accept" && (v.Rejected || v.Patched):
			v.judged(checkLookup)
			fail("a lookup's time budget was spent under onLookupFailure: %s, but the answer is rejected=%v patched=%v", lookup, v.Rejected, v.Patched)
		case lookup != "ignoreImage":
			v.judged(checkLookup)
		}
		return v, nil
	}
	// What the policy can know of the images: a failed lookup is decided by onLookupFailure.
	known, missing := c.lookups()
	if !v.Rejected {
		// The tolerations and preferred terms of every accepted case (kept.go).
		result, err := template(c.Kind, returned)
		if err != nil {
			return v, err
		}
		v.judged(checkTolerations, checkPreferences)
		if tolerationsKept(c, result, known, fail) {
			v.judged(checkTolerationsAdded)
		}
		if v.Patched && len(c.Template.Spec.Tolerations) > 0 {
			v.judged(checkTolerationsKept)
		}
		if preferencesKept(c, result, known, fail) {
			v.judged(checkPreferencesAdded)
		}
		if v.Patched && len(preferredTerms(c.Template)) > 0 {
			v.judged(checkPreferencesKept)
		}
	}
	if v.Rejected {
		v.judged(checkMessage)
		if !strings.HasPrefix(response.Message(), "image-arch-affinity: ") {
			fail("rejected without the policy's message: %q", response.Message())
		}
	}
	if c.Kind == "Pod" && c.Template.Spec.NodeName != "" {
		judgeBound(c, &v, response.Warnings, known, missing, fail)
		return v, nil
	}
	mode := c.templateMode()

	// d., before any lookup: only nodes of OSes the settings say the cluster has none of admit
	// the Pod (the scheduler's matcher and the kubelet's spec.os): no image changes that it runs
	// nowhere. A DaemonSet none of whose Pods a node of a listed OS admits creates none: refused
	// or accepted unchanged with a warning, nothing waits (docs/windows.md).
	// So is a Pod whose own documented OS (spec.os, its nodeSelector, the one OS its terms
	// admit: podOS) the list leaves out, even where no node of any OS admits it (docs/windows.md:
	// refused before any lookup, so before onLookupFailure; RAPID_SEED=14011893566017109922,
	// case 3,518: spec.os windows and a nodeSelector on linux).
	noListed, elsewhere := outsideClusterOSes(c)
	unlisted := noListed && !slices.Contains(c.Settings.ClusterOperatingSystems, podOS(c, c.Template))
	if noListed && (elsewhere || unlisted || c.Kind == "DaemonSet") {
		v.judged(checkD, checkDOSOutside, checkDByContract)
		noCommon := c.Settings.OnNoCommonArchitectureOrDefault()
		switch {
		case c.Kind == "DaemonSet" && (v.Patched || !v.Rejected && len(response.Warnings) == 0):
			fail("no node of an OS clusterOperatingSystems lists admits the DaemonSet's Pods: want refused, or accepted unchanged with a warning (it creates none), got rejected=%v patched=%v warnings=%q", v.Rejected, v.Patched, response.Warnings)
		case c.Kind == "DaemonSet":
		case noCommon == "reject" && !v.Rejected:
			fail("d. only nodes of an OS clusterOperatingSystems does not list (%s) admit the %s, but it was accepted", strings.Join(c.Settings.ClusterOperatingSystems, ", "), c.Kind)
		case noCommon == "accept" && (v.Rejected || v.Patched || len(response.Warnings) == 0):
			fail("only nodes of an OS clusterOperatingSystems does not list admit it, under onNoCommonArchitecture: accept: want accepted unchanged with a warning, got rejected=%v patched=%v warnings=%q", v.Rejected, v.Patched, response.Warnings)
		}
		if v.Rejected {
			v.skipped(skipRejected)
		} else {
			v.skipped(skipNothingRuns)
		}
		return v, nil
	}

	switch lookup := c.Settings.OnLookupFailureOrDefault(); {
	case missing && lookup == "reject":
		v.judged(checkLookup)
		v.skipped(skipLookup)
		if !v.Rejected {
			fail("an image cannot be looked up under onLookupFailure: reject, but the %s was accepted", c.Kind)
		}
		return v, nil
	case missing && lookup == "accept":
		v.judged(checkLookup)
		v.skipped(skipLookup)
		if v.Rejected || v.Patched {
			fail("an image cannot be looked up under onLookupFailure: accept, but the answer is rejected=%v patched=%v", v.Rejected, v.Patched)
		}
		return v, nil
	case len(known) == 0 && missing || missing && len(c.Settings.FallbackArchitectures) > 0 && allAnywhere(known):
		// No image, or none but WebAssembly ones, could be looked up: fallbackArchitectures (a
		// guess, never a refusal) stand in for the others when set. (No image left and none
		// missing: OLM bundles alone, which constrain nothing: judged as images that run
		// anywhere.)
		v.judged(checkNoArchImage)
		v.skipped(skipNoArchImage)
		if v.Rejected {
			fail("no image that runs on a CPU architecture could be looked up (ignoreImage), but the %s was rejected: %s", c.Kind, response.Message())
			return v, nil
		}
		if mode == "validate" {
			v.judged(checkValidate)
			if v.Patched {
				fail("a %s under templates: validate was changed: %s", c.Kind, response.Patch)
			}
			return v, nil
		}
		// c.'s rules still hold: a pin (to fallbackArchitectures) only narrows the Pod's own.
		result, err := template(c.Kind, returned)
		if err != nil {
			return v, err
		}
		v.judged(checkC)
		rulesKept(c, result, fail)
		return v, nil
	}

	// d.
	builds := c.builds()
	os := podOS(c, c.Template)
	// The OSes the settings say the cluster's nodes have (clusterOSes: the contract), not the
	// policy's rules of which OS it decides a Pod for: the scheduler's filters (the original
	// Pod's node affinity) and the kubelet's (its spec.os) say which of their nodes admit it.
	decided := clusterOSes(c, os)
	if missing && allAnywhere(known) {
		// A lookup failed (ignoreImage) and every image looked up runs anywhere: the contract
		// (docs/design.md: "not where an image's lookup failed") is that the failed image may run
		// on the Pod's own OS alone, so the nodes of the other OSes never count for it, the
		// nodes NodePools launch included (RAPID_SEED=13399438757384656446, the case alone:
		// refused where only its Windows term admits a node).
		decided = []string{os}
	}
	oses := decided
	// runnable: the nodes of the universe, of those OSes, that the original Pod admits (the
	// scheduler's matcher and the kubelet's spec.os) and that run every image. With readNodes
	// and no Node nor pool of the Pod's own OS (noNode) where some of them are, the policy
	// decides for it as if the cluster had a Node of an architecture the lists it read do not
	// rule out: a refusal is wrong only when a node of every architecture the images run on
	// (of that OS) is admitted (sure), or when an OS with Nodes has runnable nodes (sure);
	// asIf: some of them are, not all.
	var runnable, judgedOSes []string
	var noNode, sure, asIf bool
	// onNodes: a Node of the cluster (its labels: Kubernetes' matcher, taints left out as for
	// the universe) of those OSes is admitted by the original Pod and runs it. Where that says
	// what runnable says, the cluster's Nodes decide d.; else nodes only the settings declare
	// do (the contract: schedulableArchitectures, every architecture, autoscaled pools,
	// NodePools' requirements as docs/karpenter.md counts them).
	onNodes := false
	matches := oracle.Matcher(c.Template)
	runsHere := func(n *v1.Node) bool {
		return runsAll(known, n, builds) && specOSAllows(c.Template, n.Labels[osLabel])
	}
	for _, o := range oses {
		for i := range c.Nodes {
			n := &c.Nodes[i]
			if n.Labels[osLabel] == o && runsHere(n) {
				ok, _ := matches(n)
				onNodes = onNodes || ok
			}
		}
		// The architectures some node of the universe runs every image on, and those of them
		// some node the original Pod admits has.
		imageArches, runnableArches := map[string]bool{}, map[string]bool{}
		var here []string
		for _, node := range universe(c, o) {
			if !runsHere(&node) {
				continue
			}
			imageArches[node.Labels[archLabel]] = true
			if ok, _ := matches(&node); ok {
				here = append(here, o+"/"+node.Labels[archLabel]+"/"+node.Name)
				runnableArches[node.Labels[archLabel]] = true
			}
		}
		runnable = append(runnable, here...)
		if len(here) > 0 {
			judgedOSes = append(judgedOSes, o)
		}
		if !c.readNodes() || len(seen(c, o)) > 0 || len(here) == 0 {
			sure = sure || len(here) > 0
			continue
		}
		noNode = true
		excluded := false
		for arch := range imageArches {
			excluded = excluded || !runnableArches[arch]
		}
		sure = sure || !excluded
		asIf = asIf || excluded
	}
	if len(judgedOSes) > 0 {
		oses = judgedOSes
	}
	osText := strings.Join(oses, " or ")
	noCommon := c.Settings.OnNoCommonArchitectureOrDefault()
	switch {
	case noNode:
		// With readNodes and no Node nor pool of the Pod's OS (of one of its OSes), the policy
		// decides for it as if the cluster had one, of an architecture the Node lists it read do
		// not rule out (docs/node-aware.md): which one depends on the lists, and the Pod waits
		// for a Node of its OS either way. d. is not judged there; what is seen is counted. Its
		// refusals are: every Node list of the OS is empty and rules no architecture out, so the
		// policy refuses only when no node of any architecture of the OS (universe) is admitted
		// and runs it, and no node of another of its OSes with Nodes does.
		v.skipped(skipNoNodeOfOS)
		v.judged(checkDRefusals)
		v.NoNodeOfOS = noNodeOfOS(c, known, builds, v.Rejected, noCommon)
		switch {
		case v.Rejected && sure:
			// Every architecture the images run on is admitted (or a Node of another of its
			// OSes runs it): no Node the policy could suppose refuses it.
			fail("d. rejected with no Node nor pool of its OS (readNodes), but the Pod is admitted by a node of every architecture its images run on, or by a Node of another of its OSes (%s OS, e.g. %s): %s", osText, runnable[0], response.Message())
		case v.Rejected && asIf:
			// The Node lists it read ruled out some architectures, not all: the policy decides
			// as if the cluster had a Node of one they do not rule out (docs/node-aware.md), here
			// one the images run on and the Pod excludes (its lists are the policy's; the judge
			// does not model which it reads). Counted.
			v.NoNodeOfOS = noNodeRefusedAsIf
		}
	case len(runnable) > 0 && v.Rejected:
		v.judged(checkD)
		fail("d. rejected, but nodes the settings count run it (%s OS, e.g. %s): %s", osText, runnable[0], response.Message())
	case len(runnable) == 0 && noCommon == "reject" && !v.Rejected && acceptedForVirtual(c, returned):
		// With readNodes the policy sees the virtual-kubelet Node; what runs there is its
		// provider's business (docs/node-aware.md). Only an acceptance whose returned Pod that
		// Node still admits is skipped.
		v.skipped(skipVirtualD)
	case len(runnable) == 0 && noCommon == "reject" && !v.Rejected:
		v.judged(checkD)
		fail("d. no node the settings count (%s OS) is admitted and runs every image, but the %s was accepted", osText, c.Kind)
	case len(runnable) == 0 && noCommon == "accept" && (v.Rejected || v.Patched || len(response.Warnings) == 0):
		v.judged(checkD)
		fail("no node runs it under onNoCommonArchitecture: accept: want accepted unchanged with a warning, got rejected=%v patched=%v warnings=%q", v.Rejected, v.Patched, response.Warnings)
	default:
		v.judged(checkD)
	}
	if slices.Contains(v.Judged, checkD) {
		switch {
		case onNodes == (len(runnable) > 0):
			v.judged(checkDByNodes)
		case c.readNodes() && len(c.counted()) > 0:
			v.judged(checkDByPools)
		default:
			v.judged(checkDByContract)
		}
	}
	// d. by Karpenter: no refusal of a Pod a NodePool launches a Node for that runs it.
	if len(c.counted()) > 0 {
		launched, err := launches(c, c.Template, true)
		if err != nil {
			return v, err
		}
		servingOf := func(launched map[string]string) string {
			for _, platform := range sortedPlatforms(launched) {
				if runs, _ := servedOn(c.Template, platform, known, builds); runs != nil && slices.Contains(decided, platformOS(platform)) {
					return platform
				}
			}
			return ""
		}
		serving := servingOf(launched)
		switch {
		case serving != "" && v.Rejected:
			// The policy adds an architecture's tolerations only to a Pod it pins there, and pins
			// no architecture the cluster has no Node nor pool of (docs/karpenter.md, "Taints"):
			// a Node launched only with the tolerations of such an architecture (an amd64 pool
			// tainted kubernetes.io/arch=arm64, no arm64 anywhere) is the contract's. Simulated
			// again with the tolerations of the architectures seen alone.
			fromSeen, err := launchesTolerating(c, c.Template, true, func(os, arch string) bool {
				return slices.Contains(seen(c, os), arch)
			})
			if err != nil {
				return v, err
			}
			if servingOf(fromSeen) == "" {
				v.Pools = poolsTolerationsUnseen
				break
			}
			v.judged(checkDPools)
			fail("d. rejected, but Karpenter's simulation of the Pod launches a %s Node from NodePool %s, which runs it: %s", serving, launched[serving], response.Message())
		case serving != "":
			v.judged(checkDPools)
		case !v.Rejected && len(runnable) > 0 && !noNode && !servedWithoutNodePools(c, decided, matches, runsHere):
			// Accepted where only NodePools can serve it (the policy counts their architectures
			// as docs/karpenter.md says), and Karpenter's scheduler launches nothing that runs
			// it: counted where the contract explains it (a pool's architecture the kwok
			// provider does not offer; the Pod's own constraints on labels the policy does not
			// read: Karpenter serves the Pod with its architecture and OS constraints alone),
			// failed otherwise.
			v.judged(checkDPoolsNone)
			none, err := notOffered(c, decided, matches, known, builds)
			if err != nil {
				return v, err
			}
			if none {
				v.Pools = poolsNotOffered
				break
			}
			stripped := archAndOSOnly(c.Template)
			relaxed, err := launches(c, stripped, true)
			if err != nil {
				return v, err
			}
			for _, platform := range sortedPlatforms(relaxed) {
				if runs, _ := servedOn(stripped, platform, known, builds); runs != nil {
					v.Pools = poolsOwnConstraints
					break
				}
			}
			if v.Pools == "" {
				fail("d. accepted where only NodePools can serve it (no Node nor autoscaled pool runs it), but Karpenter's scheduler launches no Node that runs it from them, the Pod kept to any platform with its architecture's tolerations (launched: %v)", launched)
			}
		}
	}
	switch {
	case v.Rejected:
		v.skipped(skipRejected)
		return v, nil
	case len(runnable) == 0 && (v.NoNodeOfOS == "" || noCommon == "accept"):
		// onNoCommonArchitecture: accept (d. judged it unchanged; with readNodes and no Node nor
		// pool of the Pod's OS, no node of any architecture of its OS runs it either); under
		// reject d. failed.
		v.skipped(skipNothingRuns)
		return v, nil
	case mode == "validate":
		v.judged(checkValidate)
		v.skipped(skipValidate)
		if v.Patched {
			fail("a %s under templates: validate was changed: %s", c.Kind, response.Patch)
		}
		return v, nil
	}

	// b. and c., on the cluster's Nodes of every OS.
	result, err := template(c.Kind, returned)
	if err != nil {
		return v, err
	}
	// c. The Pod's own rules are kept.
	v.judged(checkC)
	if !rulesKept(c, result, fail) {
		return v, nil
	}
	// b. on the Nodes the NodePools launch for the returned Pod, in Karpenter's simulation.
	if len(c.counted()) > 0 {
		launched, err := launches(c, result, false)
		if err != nil {
			return v, err
		}
		for _, platform := range sortedPlatforms(launched) {
			// A Node of the platform (of each Windows build) the returned Pod admits (Karpenter
			// launches by the Pod's requirements; the scheduler binds by them) runs it.
			runs, runsNot := servedOn(result, platform, known, builds)
			if runs != nil && runsNot != nil {
				// A pool names no Windows build (the cloud's image decides): under
				// pinWindowsBuild the policy pins no build it cannot read from a Node, and the
				// Pod may land on one its images do not run on. Counted.
				v.PoolBuild = true
				continue
			}
			if runsNot != nil {
				fail("b. Karpenter's simulation of the returned Pod launches a %s Node from NodePool %s, and the returned Pod admits %v, which does not run it (its images%s)", platform, launched[platform], runsNot.Labels, specOSText(c.Template))
			}
		}
		if len(launched) > 0 {
			v.judged(checkBPools)
		}
	}
	zone := matchedZone(c, c.Template)
	// The policy pins a Pod to its OS when the cluster has a node of another (with readNodes: a
	// Node or an autoscaled pool of another OS; without: clusterOperatingSystems). Static
	// settings that omit clusterOperatingSystems say the cluster has the Pods' own OS only (the
	// generator omits it only on a cluster of one OS): a Pod of another OS is not judged on the
	// cluster's Nodes there.
	statesOSes := c.readNodes() || len(c.Settings.ClusterOperatingSystems) > 0
	// Images that all run anywhere (WebAssembly) get no pin, of architecture or OS.
	anywhere := allAnywhere(known)
	var judgedNode, otherOS, admitted, otherAdmitted, ranIt, osPinNeeded, ranOtherOS bool
	for i := range c.Nodes {
		node := &c.Nodes[i]
		same := node.Labels[osLabel] == os
		if !same && !statesOSes {
			continue
		}
		judgedNode = true
		after, err := oracle.Admits(result, node)
		if err != nil {
			fail("b. the scheduler cannot match the returned Pod: %v", err)
			return v, nil
		}
		before, _ := oracle.Admits(c.Template, node)
		// The Node runs the Pod: every image, and the Pod's spec.os, when set, is the Node's OS
		// (the kubelet refuses it elsewhere).
		imagesRun := runsAll(known, node, builds)
		runsHere := imagesRun && specOSAllows(c.Template, node.Labels[osLabel])
		admitted = admitted || after
		switch {
		case after && imagesRun && !runsHere:
			// (Images that run anywhere too: the policy keeps the Pod to the OS its spec.os
			// names.)
			fail("b. node %s (%s/%s) admits the returned Pod, whose spec.os is %s: the kubelet refuses it there", node.Name, node.Labels[osLabel], node.Labels[archLabel], c.Template.Spec.OS.Name)
		case after && !runsHere:
			fail("b. node %s (%s/%s) admits the returned Pod (%s OS) but does not run all of its images", node.Name, node.Labels[osLabel], node.Labels[archLabel], osText)
		}
		if !same {
			otherOS = true
			otherAdmitted = otherAdmitted || after
			// The OS pin is needed here: the original Pod admitted this Node, which does not
			// run the Pod (its images, or its spec.os) but runs its architectures for the Pod's
			// OS (a Node of the Pod's OS with its labels runs the images): an architecture pin
			// alone keeps it.
			osPinNeeded = osPinNeeded || before && !runsHere && !anywhere && runsAsOS(known, node, os, builds)
		}
		if before && runsHere && (zone == "" || node.Labels[zoneLabel] == zone) {
			ranIt = true
			// A Node of another OS than the Pod's (its choice, the one its terms admit, else
			// defaultOperatingSystem) that ran it: the Pod states no OS and its images run there
			// (one term per OS they run on), or they run anywhere.
			ranOtherOS = ranOtherOS || !same && !anywhere
			if !after {
				fail("c. node %s (%s/%s) admitted the Pod and runs it (all of its images%s), but not the returned Pod", node.Name, node.Labels[osLabel], node.Labels[archLabel], specOSText(c.Template))
			}
		}
	}
	// b. on every node the settings declare (declared): of each OS they state, a node of any
	// labels and name of each architecture (and build) they count, by the matcher alone (a
	// declared node states no taint).
	declaredNodes := declared(c, os)
	declaredAdmits := false
	for i := range declaredNodes {
		node := &declaredNodes[i]
		after, err := oracle.Admits(result, node)
		if err != nil {
			fail("b. the scheduler cannot match the returned Pod: %v", err)
			return v, nil
		}
		if !after {
			continue
		}
		declaredAdmits = true
		if !runsAll(known, node, builds) || !specOSAllows(c.Template, node.Labels[osLabel]) {
			fail("b. a node the settings declare (%s/%s, build %q, labels %v) admits the returned Pod (%s OS) but does not run it (its images%s)", node.Labels[osLabel], node.Labels[archLabel], node.Labels[buildLabel], node.Labels, osText, specOSText(c.Template))
			break
		}
	}
	if len(declaredNodes) > 0 {
		v.judged(checkBDeclared)
	}
	if declaredAdmits {
		v.judged(checkBDeclaredAdmits)
	}
	// The virtual-kubelet Node: with readNodes the policy keeps it reachable wherever the
	// original Pod admitted it (a copy of each term pinned, for the Nodes without the label).
	if c.Virtual != nil {
		before := admitsVirtual(c.Template, c.Virtual)
		after := admitsVirtual(result, c.Virtual)
		switch {
		case !before:
		case !c.readNodes():
			v.skipped(skipVirtualStatic)
		case !after:
			fail("c. the virtual-kubelet Node %s (no kubernetes.io/arch label) admitted the Pod, but not the returned Pod: a pin must not lose it with readNodes", c.Virtual.Name)
		default:
			v.judged(checkCVirtual)
		}
		if after {
			v.skipped(skipVirtualB)
		}
	}
	if !judgedNode {
		v.skipped(skipNoNodeHere)
		return v, nil
	}
	v.judged(checkB)
	if admitted {
		v.judged(checkBAdmitted)
	}
	if otherOS {
		v.judged(checkBOtherOS)
	}
	if osPinNeeded {
		v.judged(checkBOSPin)
	}
	if otherAdmitted {
		v.judged(checkBOtherOSAdmits)
	}
	if ranOtherOS {
		v.judged(checkCOtherOS)
	}
	if ranIt {
		v.judged(checkCNodes)
	}
	return v, nil
}

// specOSText says what of pod's spec.os a node that runs it matches, for messages.
func specOSText(pod *v1.Pod) string {
	if pod.Spec.OS == nil || pod.Spec.OS.Name == "" {
		return ""
	}
	return ", and its spec.os " + string(pod.Spec.OS.Name)
}

// runsAsOS says whether a node with node's labels but of os (of any Windows build, when builds
// count) runs every image.
func runsAsOS(images []image, n *v1.Node, os string, builds bool) bool {
	labels := map[string]string{}
	for k, v := range n.Labels {
		labels[k] = v
	}
	labels[osLabel] = os
	delete(labels, buildLabel)
	candidates := []string{""}
	if os == "windows" {
		candidates = windowsBuilds
	}
	for _, b := range candidates {
		if b != "" {
			labels[buildLabel] = b
		}
		as := v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels}}
		if runsAll(images, &as, builds) {
			return true
		}
	}
	return false
}

// rulesKept is c.'s first half: the returned Pod's node affinity admits no node the original's
// did not, of the cluster or of any architecture, OS, labels and name (the Pod's own rules are
// kept; a pin only narrows them). A failure is reported through fail.
func rulesKept(c *Case, result *v1.Pod, fail func(string, ...any)) bool {
	originalMatches, returnedMatches := oracle.Matcher(c.Template), oracle.Matcher(result)
	for _, node := range append(probes(c, "linux"), append(probes(c, "windows"), c.clusterNodes()...)...) {
		if after, _ := returnedMatches(&node); after {
			if before, _ := originalMatches(&node); !before {
				fail("c. the returned Pod's node affinity admits %s (%v), which the original's did not", node.Name, node.Labels)
				return false
			}
		}
	}
	return true
}

// noNodeOfOS says what is seen of a case d. does not judge (readNodes, no Node nor pool of the
// Pod's OS): refused, or accepted and whether a Node of the cluster of any OS (the scheduler's
// filters and the images' platforms) admits it and runs it.
func noNodeOfOS(c *Case, known []image, builds, rejected bool, noCommon string) string {
	if rejected {
		return noNodeRefused
	}
	for i := range c.Nodes {
		if ok, _ := oracle.Admits(c.Template, &c.Nodes[i]); ok && runsAll(known, &c.Nodes[i], builds) {
			return noNodeAcceptedRunsElsewhere
		}
	}
	if noCommon == "accept" {
		return noNodeAcceptedNowhereAccept
	}
	return noNodeAcceptedNowhere
}

// Why an accepted Pod of a case with NodePools is served by no Node of the cluster and no Node
// Karpenter's simulation launches for it (Verdict.Pools): the policy reads a NodePool's
// architectures, OS and taints only, and counts every architecture for a pool that lists none.
const (
	// The Pod's own constraints (a zone the kwok provider does not offer, a tier, a Node's name)
	// exclude every pool: the policy does not read them (docs/karpenter.md).
	poolsOwnConstraints = "accepted, no Node nor NodePool serves it in Karpenter's simulation: its own constraints exclude the pools (not read by the policy)"
	// Every pool the policy may count for it can create nothing for it (notOffered): the policy
	// counted an architecture, or a pool of an instance family, the kwok provider does not offer.
	poolsNotOffered = "accepted, no NodePool serves it in Karpenter's simulation: the policy counts a pool's architecture the kwok provider offers no instance type of (an architecture, or an instance family, it does not have)"
	// Refused, and Karpenter launches a Node that runs it only for the Pod given the tolerations
	// of an architecture the cluster has no Node nor pool of, which the policy never pins.
	poolsTolerationsUnseen = "refused, Karpenter's simulation launches a Node that runs it only with the tolerations of an architecture the cluster has no Node nor pool of (never pinned: docs/karpenter.md)"
)

// servedWithoutNodePools says whether a node of the universe but those of NodePools (the
// cluster's Nodes' platforms, autoscaledArchitectures pools), of oses, admits c's Pod (matches)
// and runs it (runsHere).
func servedWithoutNodePools(c *Case, oses []string, matches func(*v1.Node) (bool, error), runsHere func(*v1.Node) bool) bool {
	for _, o := range oses {
		for _, n := range append(clusterNodesOf(c, o), nodesOf(c, o, c.pools(o), windowsBuilds)...) {
			if ok, _ := matches(&n); ok && runsHere(&n) {
				return true
			}
		}
	}
	return false
}

// notOffered says whether every NodePool the policy may count for c's Pod can create nothing
// for it: for each pool that counts and each of oses its spec.os allows, the architectures the policy counts the
// pool for (poolArchesOf) that the original Pod admits (matches) on a node with the beta labels
// (the kubelet of every node a pool launches sets them, platformNodes) and every image runs on; where
// some are, a Pod kept to that pool, OS and those architectures (the pin's shape), tolerating
// every taint, gets no Node from Karpenter's scheduler. The cloud offers none (the kwok provider
// has amd64 and arm64 only, of instance families c, m and s), which the policy cannot know. A
// failed simulation is the error.
func notOffered(c *Case, oses []string, matches func(*v1.Node) (bool, error), known []image, builds bool) (bool, error) {
	if karpenterEnv == nil {
		return false, nil
	}
	tried := false
	for _, pool := range c.counted() {
		for _, o := range oses {
			if !specOSAllows(c.Template, o) {
				// The kubelet refuses the Pod on a node of another OS than its spec.os names.
				continue
			}
			var arches []string
			for _, arch := range poolArchesOf(c, pool, o) {
				for _, n := range poolNodesOf(c, o, []string{arch}) {
					if ok, _ := matches(&n); ok && runsAll(known, &n, builds) {
						arches = append(arches, arch)
						break
					}
				}
			}
			if len(arches) == 0 {
				continue
			}
			tried = true
			bare := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default"}, Spec: v1.PodSpec{
				Tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}},
				Containers:  []v1.Container{{Name: "c", Image: "bare"}}}}
			bare = keptTo(bare, map[string]string{osLabel: o, poolLabel: pool.Name}, nil, arches)
			launched, err := karpenterEnv.Platforms(bare)
			if err != nil || len(launched) > 0 {
				return false, err
			}
		}
	}
	return tried, nil
}

// archAndOSOnly is pod with only its constraints on the architecture and OS labels (stable and
// beta): its nodeSelector's entries on them, and each required term's expressions on them; a
// term left with none (or naming Nodes only) admits every node, and so does the Pod then.
func archAndOSOnly(pod *v1.Pod) *v1.Pod {
	keys := []string{archLabel, betaArchLabel, osLabel, betaOSLabel}
	out := pod.DeepCopy()
	for key := range out.Spec.NodeSelector {
		if !slices.Contains(keys, key) {
			delete(out.Spec.NodeSelector, key)
		}
	}
	a := out.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return out
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchFields = nil
		terms[i].MatchExpressions = slices.DeleteFunc(terms[i].MatchExpressions, func(r v1.NodeSelectorRequirement) bool {
			return !slices.Contains(keys, r.Key)
		})
		if len(terms[i].MatchExpressions) == 0 {
			a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
			return out
		}
	}
	return out
}

// withTemplate is c with its Pod read from the object as sent (see judge).
func (c *Case) withTemplate(pod *v1.Pod) *Case {
	sent := *c
	sent.Template, sent.poolArches = pod, nil
	return &sent
}

// budgetSpent says whether the policy's answer (its message or a warning) reports a lookup the
// time budget left out (src/host/registry.rs).
func budgetSpent(message string, warnings []string) bool {
	// The policy shortens long values in its texts ("(lookupBudgetM … )"): the words around them.
	spent := func(text string) bool {
		before, after, found := strings.Cut(text, "the lookup time budget (")
		return found && before != "" && strings.Contains(after, ") was spent after ")
	}
	return spent(message) || slices.ContainsFunc(warnings, spent)
}

// acceptedForVirtual: with readNodes, whether the virtual-kubelet Node admits both the original
// Pod and the one returned (the template of returned).
func acceptedForVirtual(c *Case, returned []byte) bool {
	if c.Virtual == nil || !c.readNodes() || !admitsVirtual(c.Template, c.Virtual) {
		return false
	}
	result, err := template(c.Kind, returned)
	return err == nil && admitsVirtual(result, c.Virtual)
}

// admitsVirtual: whether the virtual-kubelet Node admits pod (Kubernetes' NodeAffinity and
// TaintToleration filters, as for any Node).
func admitsVirtual(pod *v1.Pod, virtual *v1.Node) bool {
	admits, _ := oracle.Admits(pod, virtual)
	return admits
}
