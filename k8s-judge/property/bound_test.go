package property

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/settings"
)

// TestJudgeBound: a Pod created bound is judged on its Node's labels and the catalog with
// readNodes (accepted exactly when the Node runs it, never patched), accepted unchanged without
// a warning under static settings (the README's table), and not judged where the Node's kubelet
// refuses it anyway.
func TestJudgeBound(t *testing.T) {
	windowsNode := node(v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "windows-amd64"}}, "windows", "amd64", "10.0.20348")
	amd64Node := node(v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "linux-amd64"}}, "linux", "amd64", "")
	arm64Node := node(v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "linux-arm64"}}, "linux", "arm64", "")
	missing := image{ref: "r/missing:1", missing: true}
	readNodes := settings.Settings{ReadNodes: true}
	for _, tc := range []struct {
		name               string
		settings           settings.Settings
		boundTo            string
		images             []image
		nodeSelector       map[string]string
		specOS             string
		rejected, patched  bool
		warnings           []string
		violation, skipped string
		onTheNode          bool
	}{
		{name: "static settings, accepted unchanged", boundTo: "linux-arm64", images: []image{linuxAmd64}},
		{name: "static settings, refused", boundTo: "linux-arm64", images: []image{linuxAmd64}, rejected: true,
			violation: "a Pod created bound without readNodes: want accepted unchanged without a warning (no lookup), got rejected=true"},
		{name: "readNodes, the Node runs it, accepted", settings: readNodes, boundTo: "linux-amd64", images: []image{linuxAmd64},
			onTheNode: true},
		{name: "readNodes, the Node runs it, refused", settings: readNodes, boundTo: "linux-amd64", images: []image{linuxAmd64}, rejected: true,
			violation: "a Pod created bound to linux-amd64 (linux/amd64), which runs it, was refused", onTheNode: true},
		{name: "readNodes, the Node does not run it, accepted", settings: readNodes, boundTo: "linux-arm64", images: []image{linuxAmd64},
			violation: "a Pod created bound to linux-arm64 (linux/arm64), which does not run its images, was accepted", onTheNode: true},
		{name: "readNodes, the Node does not run it, refused", settings: readNodes, boundTo: "linux-arm64", images: []image{linuxAmd64}, rejected: true,
			onTheNode: true},
		{name: "readNodes, onNoCommonArchitecture: accept, accepted with a warning",
			settings: settings.Settings{ReadNodes: true, OnNoCommonArchitecture: "accept"}, boundTo: "linux-arm64", images: []image{linuxAmd64},
			warnings: []string{"no build"}, onTheNode: true},
		{name: "readNodes, patched", settings: readNodes, boundTo: "linux-amd64", images: []image{linuxAmd64}, patched: true,
			violation: "a Pod created bound (spec.nodeName linux-amd64) was patched", onTheNode: true},
		{name: "readNodes, a failed lookup under reject, accepted",
			settings: settings.Settings{ReadNodes: true, OnLookupFailure: "reject"}, boundTo: "linux-amd64", images: []image{linuxAmd64, missing},
			violation: "onLookupFailure: reject was accepted", onTheNode: true},
		{name: "readNodes, spec.os linux on a Windows Node, a failed lookup under accept, refused: the kubelet refuses it",
			settings: settings.Settings{ReadNodes: true, OnLookupFailure: "accept"}, boundTo: "windows-amd64", specOS: "linux",
			images: []image{missing}, rejected: true, skipped: skipBoundKubelet, onTheNode: true},
		{name: "readNodes, its nodeSelector excludes the Node: the kubelet refuses it", settings: readNodes, boundTo: "linux-arm64",
			images: []image{linuxAmd64}, nodeSelector: map[string]string{archLabel: "amd64"}, skipped: skipBoundKubelet, onTheNode: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := v1.Pod{Spec: v1.PodSpec{NodeName: tc.boundTo, NodeSelector: tc.nodeSelector}}
			if tc.specOS != "" {
				pod.Spec.OS = &v1.PodOS{Name: v1.OSName(tc.specOS)}
			}
			c := &Case{Nodes: []v1.Node{amd64Node, arm64Node, windowsNode}, Settings: tc.settings, Kind: "Pod", Template: &pod, images: map[string]image{}}
			for i, img := range tc.images {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: string(rune('a' + i)), Image: img.ref})
				c.images[img.ref] = img
			}
			v := Verdict{Rejected: tc.rejected, Patched: tc.patched}
			var violations []string
			known, failed := c.lookups()
			judgeBound(c, &v, tc.warnings, known, failed, func(format string, args ...any) {
				violations = append(violations, fmt.Sprintf(format, args...))
			})
			got := strings.Join(violations, "\n")
			switch {
			case tc.violation == "" && got != "":
				t.Errorf("violations %q, want none", got)
			case tc.violation != "" && !strings.Contains(got, tc.violation):
				t.Errorf("violations %q, want one with %q", got, tc.violation)
			}
			if on := slices.Contains(v.Judged, checkBoundNode); on != tc.onTheNode {
				t.Errorf("judged on the Node: %v, want %v", on, tc.onTheNode)
			}
			if tc.skipped != "" && !slices.Contains(v.Skipped, tc.skipped) {
				t.Errorf("skipped %q, want %q in it", v.Skipped, tc.skipped)
			}
		})
	}
}
