package property

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/controlplane"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/karpenter"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/policyhost"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/registry"
	summary "github.com/image-arch-affinity/image-arch-affinity/k8s-judge/report"
)

// TestMain picks the property's seed (RAPID_SEED, else a random one, printed) and keeps rapid
// from writing fail files into the tree: the seed repeats a run.
func TestMain(m *testing.M) {
	flag.Parse()
	seed, err := strconv.ParseUint(os.Getenv("RAPID_SEED"), 10, 64)
	if err != nil || seed == 0 {
		seed = rand.Uint64()
	}
	_ = flag.Set("rapid.seed", fmt.Sprint(seed))
	_ = flag.Set("rapid.nofailfile", "true")
	if os.Getenv("RAPID_CHECKS") == "" {
		_ = flag.Set("rapid.checks", "10000")
	}
	report("seed %d (RAPID_SEED=%d repeats this run)", seed, seed)
	os.Exit(m.Run())
}

func report(format string, args ...any) { summary.Line("k8s-judge", format, args...) }

// host is the Kubewarden host the property runs the policy on: K8S_JUDGE_HOST=embedded (the
// default) or kwctl (KWCTL, default .tools/bin/kwctl, on annotated-policy.wasm).
func host(t *testing.T, p policyhost.Builds, reg *registry.Registry, kubeconfig string) policyhost.Host {
	options := policyhost.Options{Module: p.Module, Sources: reg.Sources, Kubeconfig: kubeconfig}
	if os.Getenv("K8S_JUDGE_HOST_STDERR") != "" {
		options.Stderr = os.Stderr
	}
	switch name := os.Getenv("K8S_JUDGE_HOST"); name {
	case "", "embedded":
		h, err := policyhost.StartEmbedded(p.EmbeddedHost, options)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		return h
	case "kwctl":
		kwctl := os.Getenv("KWCTL")
		if kwctl == "" {
			kwctl = filepath.Join(p.Root, ".tools", "bin", "kwctl")
		}
		options.Module = filepath.Join(p.Root, "annotated-policy.wasm")
		h, err := policyhost.NewKwctl(kwctl, t.TempDir(), options)
		if err != nil {
			t.Fatal(err)
		}
		return h
	default:
		t.Fatalf("K8S_JUDGE_HOST is embedded or kwctl, not %q", name)
		return nil
	}
}

// TestPolicyJudgedByKubernetes draws (cluster, settings, Pod or workload) cases, runs each
// through the compiled policy on a Kubewarden host, with real lookups in the fixture registry and,
// with readNodes, the cluster's Nodes in a real API server, and judges the answer with
// Kubernetes' own code (see judge).
func TestPolicyJudgedByKubernetes(t *testing.T) {
	p, err := policyhost.ProjectBuilds(os.Getenv("K8S_JUDGE_MODULE"), "k8s-test") // K8S_JUDGE_MODULE: a mutant's (scripts/k8s-mutants.sh)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.Start(t, p.SeedRegistry)
	cluster := controlplane.Start(t)
	// Karpenter's CRDs: the NodePools the cases with readNodes draw (pools.go).
	if err := karpenter.InstallCRDs(context.Background(), cluster.Config); err != nil {
		t.Fatal(err)
	}
	pools, err := karpenter.Client(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Karpenter's provisioner, whose scheduler says what the NodePools launch (pools.go).
	if karpenterEnv, err = karpenter.New(context.Background(), cluster.Config); err != nil {
		t.Fatal(err)
	}
	h := host(t, p, reg, cluster.Kubeconfig)
	counts, started := map[string]int{}, time.Now()
	judged, updates = newTally(), newUpdateTally()
	var syncing, evaluating time.Duration
	rapid.Check(t, func(rt *rapid.T) {
		c := drawCase(rt, reg)
		if c.readNodes() {
			start := time.Now()
			if err := cluster.ReplaceNodes(context.Background(), c.clusterNodes()); err != nil {
				rt.Fatal(err)
			}
			if err := karpenter.ReplacePools(context.Background(), pools, c.NodePools); err != nil {
				rt.Fatal(err)
			}
			syncing += time.Since(start)
		}
		verdict, err := judge(c, h)
		if err != nil {
			rt.Fatalf("%v\n%s", err, describe(c))
		}
		if len(verdict.Violations) > 0 {
			rt.Fatalf("%s\n%s\nanswer %s", strings.Join(verdict.Violations, "\n"), describe(c), verdict.Answer)
		}
		counts["cases"]++
		judged.add(c.Kind, verdict)
		// The admitted Pod updated (update.go), and the admitted workload (workload_update.go):
		// drawn from the object as stored, judged, tallied.
		judgeAnUpdate := func(judgeIt func() (string, string, UpdateVerdict, error)) {
			kind, objects, uv, err := judgeIt()
			if err != nil {
				rt.Fatalf("%v\n%s", err, describe(c))
			}
			if len(uv.Violations) > 0 {
				rt.Fatalf("UPDATE (%s): %s\n%s\n%s\nanswer %s", kind, strings.Join(uv.Violations, "\n"), describe(c), objects, uv.Answer)
			}
			updates.add(uv)
		}
		if c.Update != nil && !verdict.Rejected {
			judgeAnUpdate(func() (string, string, UpdateVerdict, error) {
				u, err := drawUpdate(rt, c, reg, verdict.Returned)
				if err != nil {
					return "", "", UpdateVerdict{}, err
				}
				uv, err := judgeUpdate(c, u, h)
				return u.Kind, fmt.Sprintf("old %s\nnew %s\nsubResource %q", u.Old, u.New, u.Subresource), uv, err
			})
		}
		if c.WorkloadUpdate && !verdict.Rejected {
			judgeAnUpdate(func() (string, string, UpdateVerdict, error) {
				uc, kind, err := drawWorkloadUpdate(rt, c, reg, verdict.Returned)
				if err != nil {
					return "", "", UpdateVerdict{}, err
				}
				uv, err := judgeWorkloadUpdate(uc, kind, h)
				return kind, fmt.Sprintf("old %s\nnew %s", uc.Old, uc.Object), uv, err
			})
		}
		evaluating += verdict.Evaluation
		counts[c.Kind]++
		if c.readNodes() {
			counts["readNodes"]++
		}
		if slices.ContainsFunc(c.Nodes, func(n v1.Node) bool { return n.Labels[osLabel] == "windows" && n.Labels[archLabel] == "arm64" }) {
			counts["with a Windows arm64 Node"]++
		}
		if len(c.Settings.ClusterOperatingSystems) > 1 {
			counts["clusterOperatingSystems of two OSes"]++
		}
		// Cases by the Pod's OS (as the policy picks it) and outcome.
		outcome := "unchanged"
		switch {
		case verdict.Rejected:
			outcome = "refused"
		case verdict.Patched:
			outcome = "patched"
		}
		counts[fmt.Sprintf("OS %s: %s", podOS(c, c.Template), outcome)]++
		known := c.known()
		if len(podOSes(c, c.Template, known)) > 1 {
			// A Pod that states no OS, decided for both OSes.
			counts["decided for both OSes"]++
		}
		if len(ImageVolumes(c.Template)) > 0 {
			counts["with an image volume"]++
		}
		run := containerImages(c.Template)
		if slices.ContainsFunc(ImageVolumes(c.Template), func(ref string) bool { return c.images[ref].platformless && !slices.Contains(run, ref) }) {
			counts["with a platform-less artifact volume"]++
		}
		if slices.ContainsFunc(run, func(ref string) bool { return c.images[ref].platformless }) {
			counts["a container runs an artifact"]++
		}
		if slices.ContainsFunc(known, func(img image) bool { return img.wasm != "" }) {
			counts["with a WebAssembly image"]++
		}
		if slices.ContainsFunc(known, func(img image) bool { return img.wasm == "mixed" && img.anywhere }) {
			counts["a mixed index under a wasmRuntimeClass"]++
		}
		if len(c.NodePools) > 0 {
			counts["with NodePools"]++
		}
		if len(c.counted()) > 0 {
			counts["with NodePools that count (Ready, not static)"]++
		}
		if slices.ContainsFunc(c.NodePools, func(p karpenter.Pool) bool { return p.ArchitectureMinValues > 1 }) {
			counts["with a NodePool of minValues on the architecture"]++
		}
		if verdict.PoolBuild {
			counts["b. by Karpenter: a Windows build a NodePool may launch does not run the returned Pod (pinWindowsBuild, no build pinned; not judged)"]++
		}
		if verdict.Pools != "" {
			counts[verdict.Pools]++
		}
		if verdict.NoNodeOfOS != "" {
			counts["readNodes, no Node of the Pod's OS (d. not judged)"]++
		}
	})
	report("%s: %d cases judged in %v (evaluations %v, Nodes synced %v): %s", h.Name(), counts["cases"],
		time.Since(started).Round(time.Second), evaluating.Round(time.Second), syncing.Round(time.Second), countsText(counts))
	for _, line := range judged.lines() {
		report("%s: %s", h.Name(), line)
	}
	for _, line := range updates.lines(judged.cases) {
		report("%s: %s", h.Name(), line)
	}
	report("%s: shares of the minimums: %s", h.Name(), judged.sharesText())
	// The minimum shares (tally.go): a run that judges little fails. A failed run has failed
	// already; a run of fewer than minimumCases cases is too small for shares.
	switch {
	case t.Failed():
	case judged.cases < minimumCases:
		report("%s: minimum shares not asserted: %d cases, fewer than %d", h.Name(), judged.cases, minimumCases)
	default:
		if missed := judged.missed(); len(missed) > 0 {
			t.Errorf("a vacuous run: %s (minimums: %s)", strings.Join(missed, "; "), minimumsText())
		} else {
			report("%s: minimum shares reached (%s)", h.Name(), minimumsText())
		}
		if missed := updates.missed(judged.cases); len(missed) > 0 {
			t.Errorf("a vacuous run: %s (minimums: %s)", strings.Join(missed, "; "), updateMinimumsText())
		} else {
			report("%s: UPDATE minimum shares reached (%s)", h.Name(), updateMinimumsText())
		}
		report("%s: minimums too fine for %d cases (under %d cases each), not asserted: %s; of UPDATEs: %s",
			h.Name(), judged.cases, minimumCount, judged.notAsserted(), updates.notAsserted(judged.cases))
	}
}

// judged counts what the property judged, case by case (tally.go): rapid runs the property
// function once per case, so the counts live outside it and are read after rapid.Check returns.
var judged *tally

// updates counts the Pod UPDATEs judged (update.go), as judged counts the cases.
var updates *updateTally

// countsText prints counts in a stable order.
func countsText(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for key := range counts {
		if key != "cases" {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, key := range keys {
		parts[i] = fmt.Sprintf("%s %d", key, counts[key])
	}
	return strings.Join(parts, ", ")
}

// describe prints a case compactly: the nodes, the settings and the object.
func describe(c *Case) string {
	var b strings.Builder
	for _, node := range c.clusterNodes() {
		taints, _ := json.Marshal(node.Spec.Taints)
		fmt.Fprintf(&b, "node %s labels=%v taints=%s\n", node.Name, node.Labels, taints)
	}
	for _, pool := range c.NodePools {
		np, _ := json.Marshal(pool)
		fmt.Fprintf(&b, "NodePool %s\n", np)
	}
	settings, _ := json.Marshal(c.Settings)
	object, _ := json.Marshal(c.Object)
	fmt.Fprintf(&b, "settings %s\n%s %s", settings, c.Kind, object)
	return b.String()
}
