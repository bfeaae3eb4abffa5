package property

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	v1 "k8s.io/api/core/v1"

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

// request is the AdmissionRequest the API server sends for creating c's object.
func (c *Case) request(object []byte) ([]byte, error) {
	r := resources[c.Kind]
	kind := map[string]string{"group": r[0], "version": r[1], "kind": c.Kind}
	resource := map[string]string{"group": r[0], "version": r[1], "resource": r[2]}
	return json.Marshal(map[string]any{
		"uid": "judged", "kind": kind, "resource": resource, "requestKind": kind, "requestResource": resource,
		"name": "judged", "namespace": "default", "operation": "CREATE",
		"userInfo": map[string]any{"username": "k8s-judge"},
		"object":   json.RawMessage(object), "oldObject": nil, "dryRun": false,
		"options": map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
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

// Verdict is what was judged of one case.
type Verdict struct {
	Violations []string
	Rejected   bool
	Patched    bool
	// OtherOS: the returned Pod admits a node of another OS than the one the policy placed it
	// for.
	OtherOS bool
	// NoNodeOfOS: readNodes finds no Node nor pool of the Pod's OS (d. is not judged).
	NoNodeOfOS bool
	// Evaluation is how long the host took.
	Evaluation time.Duration
	// Answer is the host's answer, as the failure report prints it.
	Answer string
}

// judge runs c through host and judges the answer with Kubernetes' code:
//
//	a. the returned object passes the API server's validation;
//	b. every Node of the cluster (of the Pod's OS) the scheduler's filters admit for the returned
//	   Pod runs all of its images;
//	c. every Node (of the Pod's OS) that admitted the original Pod and runs all its images still
//	   admits it (under matchNodeLabels, those of the Pod's zone);
//	d. with onNoCommonArchitecture: reject, refused exactly when no node the settings say may
//	   exist (universe) is admitted by the original Pod and runs all its images.
func judge(c *Case, host policyhost.Host) (Verdict, error) {
	var v Verdict
	fail := func(format string, args ...any) { v.Violations = append(v.Violations, fmt.Sprintf(format, args...)) }
	original, err := json.Marshal(c.Object)
	if err != nil {
		return v, err
	}
	if problems := oracle.ValidateCreate("default", original); len(problems) > 0 {
		return v, fmt.Errorf("the generator made an object the API server refuses: %s", strings.Join(problems, "; "))
	}
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
		for _, problem := range oracle.ValidateCreate("default", returned) {
			fail("a. the API server refuses the returned %s: %s", c.Kind, problem)
		}
	}
	if v.Rejected && !strings.HasPrefix(response.Message(), "image-arch-affinity: ") {
		fail("rejected without the policy's message: %q", response.Message())
	}

	// What the policy can know of the images: a failed lookup is decided by onLookupFailure.
	known, missing := c.lookups()
	switch lookup := c.Settings.OnLookupFailureOrDefault(); {
	case missing && lookup == "reject":
		if !v.Rejected {
			fail("an image cannot be looked up under onLookupFailure: reject, but the %s was accepted", c.Kind)
		}
		return v, nil
	case missing && lookup == "accept":
		if v.Rejected || v.Patched {
			fail("an image cannot be looked up under onLookupFailure: accept, but the answer is rejected=%v patched=%v", v.Rejected, v.Patched)
		}
		return v, nil
	case len(known) == 0 || missing && len(c.Settings.FallbackArchitectures) > 0 && !slices.ContainsFunc(known, func(img image) bool { return !img.anywhere }):
		// No image, or none but WebAssembly ones, could be looked up: fallbackArchitectures (a
		// guess, never a refusal) stand in for the others when set.
		if v.Rejected {
			fail("no image that runs on a CPU architecture could be looked up (ignoreImage), but the %s was rejected: %s", c.Kind, response.Message())
		}
		return v, nil
	}

	// d.
	builds := c.builds()
	os := podOS(c, c.Template)
	var runnable []string
	matches := oracle.Matcher(c.Template)
	for _, node := range universe(c, os) {
		if ok, _ := matches(&node); ok && runsAll(known, &node, builds) {
			runnable = append(runnable, node.Labels[archLabel]+"/"+node.Name)
		}
	}
	// With readNodes and no Node nor pool of the Pod's OS, the policy decides as if the cluster
	// had one, of an architecture the Node lists it read do not rule out (docs/node-aware.md):
	// which one depends on the lists, and the Pod waits for a Node of its OS either way. d. is
	// not judged there.
	v.NoNodeOfOS = c.readNodes() && len(seen(c, os)) == 0
	switch noCommon := c.Settings.OnNoCommonArchitectureOrDefault(); {
	case v.NoNodeOfOS:
	case len(runnable) > 0 && v.Rejected:
		fail("d. rejected, but nodes the settings count run it (%s OS, e.g. %s): %s", os, runnable[0], response.Message())
	case len(runnable) == 0 && noCommon == "reject" && !v.Rejected:
		fail("d. no node the settings count (%s OS) is admitted and runs every image, but the %s was accepted", os, c.Kind)
	case len(runnable) == 0 && noCommon == "accept" && (v.Rejected || v.Patched || len(response.Warnings) == 0):
		fail("no node runs it under onNoCommonArchitecture: accept: want accepted unchanged with a warning, got rejected=%v patched=%v warnings=%q", v.Rejected, v.Patched, response.Warnings)
	}
	if v.Rejected || len(runnable) == 0 {
		return v, nil
	}
	mode := c.templateMode()
	if mode == "validate" {
		if v.Patched {
			fail("a %s under templates: validate was changed: %s", c.Kind, response.Patch)
		}
		return v, nil
	}

	// b. and c., on the cluster's nodes.
	result, err := template(c.Kind, returned)
	if err != nil {
		return v, err
	}
	// c. The Pod's own rules are kept: the returned node affinity admits no node the original's
	// did not, of the cluster or of any architecture, OS, labels and name.
	originalMatches, returnedMatches := oracle.Matcher(c.Template), oracle.Matcher(result)
	for _, node := range append(probes(c, "linux"), append(probes(c, "windows"), c.Nodes...)...) {
		if after, _ := returnedMatches(&node); after {
			if before, _ := originalMatches(&node); !before {
				fail("c. the returned Pod's node affinity admits %s (%v), which the original's did not", node.Name, node.Labels)
				return v, nil
			}
		}
	}
	zone := ""
	if len(c.Settings.MatchNodeLabels) > 0 {
		zone = c.Template.Labels[zoneLabel]
	}
	for i := range c.Nodes {
		node := &c.Nodes[i]
		after, err := oracle.Admits(result, node)
		if err != nil {
			fail("b. the scheduler cannot match the returned Pod: %v", err)
			return v, nil
		}
		// The policy places a Pod among the nodes of its OS (spec.os, its constraints, else
		// defaultOperatingSystem: the operator's statement). Kubernetes lets a Pod that states
		// no OS onto an untainted node of another OS, or one whose taint it tolerates; that is
		// counted, not judged.
		if node.Labels[osLabel] != os {
			if after {
				v.OtherOS = true
			}
			continue
		}
		before, _ := oracle.Admits(c.Template, node)
		runsHere := runsAll(known, node, builds)
		if after && !runsHere {
			fail("b. node %s (%s/%s) admits the returned Pod but does not run all of its images", node.Name, node.Labels[osLabel], node.Labels[archLabel])
		}
		if before && runsHere && !after && (zone == "" || node.Labels[zoneLabel] == zone) {
			fail("c. node %s (%s/%s) admitted the Pod and runs all of its images, but not the returned Pod", node.Name, node.Labels[osLabel], node.Labels[archLabel])
		}
	}
	return v, nil
}
