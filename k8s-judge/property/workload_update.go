package property

import (
	"encoding/json"
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/policyhost"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/registry"
)

// The workload UPDATEs drawn: a workload admitted on CREATE is updated.
const (
	// updateScale: the workload scaled (spec.replicas, where it has one) and labelled, its
	// template untouched (kubectl scale, kubectl label).
	updateScale = "workload scale"
	// updateSetImage: a template container's or init container's image replaced (kubectl set
	// image). Not drawn for Jobs: the API server refuses a change to a Job's template.
	updateSetImage = "workload set image"
)

// drawWorkloadUpdatePlan: one workload case in four is updated once admitted (drawn last in
// drawCase).
func drawWorkloadUpdatePlan(t *rapid.T, c *Case) {
	c.WorkloadUpdate = c.Kind != "Pod" && chance(t, "workload update", 4)
}

// drawWorkloadUpdate draws the UPDATE of the workload stored (the CREATE's object as admitted):
// scaled and labelled one time in three (always for a Job), else a template image replaced by one
// of the catalog's or, one time in four, one the template already runs (where the template then runs the same images as before,
// a scale). It returns the case as updated (its Object
// the new workload, Old the stored one) and the UPDATE's kind.
func drawWorkloadUpdate(t *rapid.T, c *Case, reg *registry.Registry, stored []byte) (*Case, string, error) {
	var object map[string]any
	if err := json.Unmarshal(stored, &object); err != nil {
		return nil, "", err
	}
	kind := updateScale
	if c.Kind != "Job" {
		kind = rapid.SampledFrom([]string{updateScale, updateSetImage, updateSetImage}).Draw(t, "workload update kind")
	}
	if kind == updateSetImage {
		containers, err := templateContainers(object)
		if err != nil {
			return nil, "", fmt.Errorf("%w in %s", err, stored)
		}
		i := rapid.IntRange(0, len(containers)-1).Draw(t, "container swapped")
		var image string
		if chance(t, "an image it runs", 4) {
			image = rapid.SampledFrom(containerImages(c.Template)).Draw(t, "image it runs")
		} else {
			image = drawImage(t, c, reg, imagePool(reg))
		}
		before := imageSet(containers)
		containers[i]["image"] = image
		if slices.Equal(before, imageSet(containers)) {
			// The template runs the same images as before (the container's own, or one another
			// container runs where this one's image is run by another too): docs/design.md's
			// "changes neither the images", a scale (RAPID_SEED=16496779791501041403, case
			// 9,419: the set image judge wanted the CREATE's warning again).
			kind = updateScale
		}
	}
	if kind == updateScale {
		metadata, ok := object["metadata"].(map[string]any)
		if !ok {
			return nil, "", fmt.Errorf("no metadata in %s", stored)
		}
		labels, _ := metadata["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
		}
		labels["updated"] = "true"
		metadata["labels"] = labels
		if spec, ok := object["spec"].(map[string]any); ok && spec["replicas"] != nil {
			spec["replicas"] = 3
		}
	}
	updated, err := json.Marshal(object)
	if err != nil {
		return nil, "", err
	}
	sent, err := template(c.Kind, updated)
	if err != nil {
		return nil, "", err
	}
	u := c.withTemplate(sent)
	u.Object, u.Old = json.RawMessage(updated), stored
	return u, kind, nil
}

// imageSet is the sorted set of the images containers run.
func imageSet(containers []map[string]any) []string {
	var out []string
	for _, container := range containers {
		if ref, ok := container["image"].(string); ok && !slices.Contains(out, ref) {
			out = append(out, ref)
		}
	}
	slices.Sort(out)
	return out
}

// templateContainers are the init containers and containers of a workload's Pod template (a
// CronJob's job template's), as JSON objects to change in place.
func templateContainers(object map[string]any) ([]map[string]any, error) {
	at := func(from any, key string) map[string]any {
		m, _ := from.(map[string]any)
		next, _ := m[key].(map[string]any)
		return next
	}
	spec := at(object, "spec")
	if jobTemplate := at(spec, "jobTemplate"); jobTemplate != nil {
		spec = at(jobTemplate, "spec")
	}
	podSpec := at(at(spec, "template"), "spec")
	var out []map[string]any
	for _, key := range []string{"initContainers", "containers"} {
		list, _ := podSpec[key].([]any)
		for _, entry := range list {
			container, ok := entry.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("a container that is no object")
			}
			out = append(out, container)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no template container")
	}
	return out, nil
}

// The checks a workload UPDATE is judged on (UpdateVerdict.Judged).
const (
	// updCheckScale: a workload UPDATE that leaves its template unchanged is accepted unchanged
	// (docs/design.md: "a scale or a label change is accepted at once"; the stored template was
	// judged on its CREATE): the settings' contract.
	updCheckScale = "workload scale: accepted unchanged (contract)"
	// updCheckTemplate: a workload whose template image was replaced is judged as its CREATE
	// would be (judge: a., b., c., d., the lookups, tolerations and preferences), the stored
	// template's constraints (the policy's pin among them, under mutate) as its own.
	updCheckTemplate = "workload set image: judged as a CREATE"
)

// apartTemplateSkipped: a workload UPDATE whose new template the CREATE judge judged on none of
// b., c., d. and the lookup checks (its Verdict.Skipped says why, as a CREATE's would).
const apartTemplateSkipped = "workload set image, b., c., d. and the lookups skipped (as on CREATE)"

// judgeWorkloadUpdate sends the workload UPDATE of c (drawWorkloadUpdate) to host and judges the
// answer: a scale by the contract, a replaced image as a CREATE of the new object (judge).
func judgeWorkloadUpdate(c *Case, kind string, host policyhost.Host) (UpdateVerdict, error) {
	v := UpdateVerdict{Kind: kind, Workload: true, Outcome: outcomeUnchanged}
	if kind == updateScale {
		object, ok := c.Object.(json.RawMessage)
		if !ok {
			return v, fmt.Errorf("a workload UPDATE of %T, not of JSON", c.Object)
		}
		request, err := c.request(object)
		if err != nil {
			return v, err
		}
		response, err := host.Evaluate(request, c.Settings)
		if err != nil {
			return v, fmt.Errorf("%s: %w", host.Name(), err)
		}
		v.Answer = fmt.Sprintf("allowed=%v message=%q warnings=%q patch=%s", response.Allowed, response.Message(), response.Warnings, response.Patch)
		switch {
		case !response.Allowed:
			v.Outcome = outcomeRejected
		case len(response.Patch) > 0:
			v.Outcome = outcomePatched
		}
		v.Judged = append(v.Judged, updCheckScale)
		if v.Outcome != outcomeUnchanged {
			v.Violations = append(v.Violations, fmt.Sprintf("a %s UPDATE that leaves its template unchanged: want accepted unchanged (docs/design.md), got %s", c.Kind, v.Outcome))
		}
		return v, nil
	}
	verdict, err := judge(c, host)
	if err != nil {
		return v, err
	}
	v.Violations, v.Answer = verdict.Violations, verdict.Answer
	switch {
	case verdict.Rejected:
		v.Outcome = outcomeRejected
	case verdict.Patched:
		v.Outcome = outcomePatched
	}
	if slices.ContainsFunc(verdict.Judged, func(check string) bool {
		return slices.Contains([]string{checkB, checkC, checkD, checkDRefusals, checkLookup, checkNoArchImage}, check)
	}) {
		v.Judged = append(v.Judged, updCheckTemplate)
	} else {
		v.Apart = apartTemplateSkipped
	}
	return v, nil
}
