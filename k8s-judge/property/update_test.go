package property

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/registry"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/settings"
)

// TestRanInZone: a gated Pod pinned on UPDATE must admit a node that runs its new images, unless
// matchNodeLabels keeps it to the zone its label names and every node that runs them there is
// one its own constraints exclude (RAPID_SEED=11960522068687707159: labelled zone a, nodeSelector
// zone b).
func TestRanInZone(t *testing.T) {
	zones := settings.Settings{ClusterOperatingSystems: []string{"linux"}, SchedulableArchitectures: []string{"amd64", "arm64"}, MatchNodeLabels: []string{zoneLabel}}
	noZones := zones
	noZones.MatchNodeLabels = nil
	for _, tc := range []struct {
		name     string
		settings settings.Settings
		label    string // the Pod's zone label, or "" for none
		selector string // its nodeSelector's zone, or "" for none
		image    image
		// inZone, anywhere: what ranInZone says; the gated pin fails to admit a node only where
		// inZone || !anywhere.
		inZone, anywhere bool
	}{
		{name: "labelled zone a, selects zone b, matchNodeLabels", settings: zones, label: "a", selector: "b", image: linuxArm64, anywhere: true},
		{name: "labelled zone a, selects zone b, no matchNodeLabels", settings: noZones, label: "a", selector: "b", image: linuxArm64, inZone: true, anywhere: true},
		{name: "labelled zone b, selects zone b, matchNodeLabels", settings: zones, label: "b", selector: "b", image: linuxArm64, inZone: true, anywhere: true},
		{name: "no zone label, matchNodeLabels", settings: zones, selector: "b", image: linuxArm64, inZone: true, anywhere: true},
		{name: "an image no node the settings count runs", settings: zones, label: "a", selector: "b", image: image{ref: "r/s390x:1", platforms: []registry.Platform{{OS: "linux", Architecture: "s390x"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "judged", Labels: map[string]string{}}}
			if tc.label != "" {
				pod.Labels[zoneLabel] = tc.label
			}
			if tc.selector != "" {
				pod.Spec.NodeSelector = map[string]string{zoneLabel: tc.selector}
			}
			c := &Case{Settings: tc.settings, Kind: "Pod", Template: pod}
			if inZone, anywhere := ranInZone(c, pod, []string{"linux"}, []image{tc.image}, false); inZone != tc.inZone || anywhere != tc.anywhere {
				t.Errorf("ranInZone = %v, %v, want %v, %v", inZone, anywhere, tc.inZone, tc.anywhere)
			}
		})
	}
}
