package property

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/policyhost"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/registry"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/settings"
)

// answer is a host that gives one answer: the policy's decision the judge is shown.
type answer struct{ response policyhost.Response }

func (a answer) Name() string { return "a fixed answer" }

func (a answer) Evaluate([]byte, any) (policyhost.Response, error) { return a.response, nil }

func (a answer) Close() error { return nil }

// The images of the judge's table test.
var (
	linuxAmd64  = image{ref: "r/linux-amd64:1", platforms: []registry.Platform{{OS: "linux", Architecture: "amd64"}}}
	bothOSes    = image{ref: "r/both:1", platforms: []registry.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.1"}}}
	windowsOnly = image{ref: "r/windows:1", platforms: []registry.Platform{{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.1"}}}
	wasmOnly    = image{ref: "r/wasm:1", platforms: []registry.Platform{{OS: "wasip1", Architecture: "wasm"}}, wasm: "only"}
)

// pins is the JSON patch that gives a Pod with no affinity one required term of expressions.
func pins(t *testing.T, expressions ...v1.NodeSelectorRequirement) []byte {
	affinity := v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: expressions}}}}}
	patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/spec/affinity", "value": affinity}})
	if err != nil {
		t.Fatal(err)
	}
	return patch
}

// pinsTerms is the JSON patch that gives a Pod with no affinity one required term per list of
// expressions (the policy's term per OS).
func pinsTerms(t *testing.T, terms ...[]v1.NodeSelectorRequirement) []byte {
	required := &v1.NodeSelector{}
	for _, expressions := range terms {
		required.NodeSelectorTerms = append(required.NodeSelectorTerms, v1.NodeSelectorTerm{MatchExpressions: expressions})
	}
	affinity := v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}}
	patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/spec/affinity", "value": affinity}})
	if err != nil {
		t.Fatal(err)
	}
	return patch
}

func testNode(name, os, arch string) v1.Node {
	labels := map[string]string{osLabel: os, archLabel: arch, hostLabel: name, zoneLabel: "a"}
	if os == "windows" {
		labels[buildLabel] = "10.0.20348"
	}
	return v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// TestJudgeNodesOfEveryOS: b. and c. are judged on the Nodes of every OS. On a cluster of Linux
// and untainted Windows Nodes, a Linux Pod pinned to its architecture but not its OS is admitted
// by a Windows Node that does not run it (b. fails); pinned to both, it passes, judged where the
// OS pin is needed. Images that run anywhere are judged unpinned on every Node (a spec.os they
// are not pinned to is counted). A Pod that states no OS whose images run on both OSes must keep
// the Nodes of both (one term per OS; kept to the default OS, c. fails on the Windows
// Node), and is refused only when no node of either OS runs it (d.); one whose spec.os names
// its OS is not run by a Node of the other (b. fails unpinned, the pin is needed). Static
// settings that state no other OS leave a Pod of another OS unjudged on the cluster's Nodes.
func TestJudgeNodesOfEveryOS(t *testing.T) {
	mixed := []v1.Node{testNode("linux-amd64", "linux", "amd64"), testNode("windows-amd64", "windows", "amd64")}
	linuxOnly := []v1.Node{testNode("linux-amd64", "linux", "amd64")}
	// armAndWindows: Linux Nodes of arm64 only, a Windows one of amd64: read with readNodes, a Pod
	// of bothOSes runs on the Windows Node only.
	armAndWindows := []v1.Node{testNode("linux-arm64", "linux", "arm64"), testNode("windows-amd64", "windows", "amd64")}
	// The settings state the cluster: its OSes and its one architecture (the nodes b. is judged
	// on besides the drawn ones: declared).
	twoOSes := settings.Settings{ClusterOperatingSystems: []string{"linux", "windows"}, SchedulableArchitectures: []string{"amd64"}}
	arch, linux := requirement(archLabel, v1.NodeSelectorOpIn, "amd64"), requirement(osLabel, v1.NodeSelectorOpIn, "linux")
	windows := requirement(osLabel, v1.NodeSelectorOpIn, "windows")
	for _, tc := range []struct {
		name     string
		nodes    []v1.Node
		settings settings.Settings
		image    image
		// also: a second container's image, if any.
		also  *image
		podOS string // spec.os.name, or "" for none
		// windowsTerm: of the nodes the settings count, the Pod's required terms admit the
		// Windows ones only; it does not choose its OS (no spec.os, no nodeSelector), and its
		// other term admits Linux nodes of an architecture the cluster has none of (so the
		// default OS is its own).
		windowsTerm bool
		patch       func(*testing.T) []byte
		refused     bool
		// violation: a part of the one violation wanted; "" for none.
		violation string
		judged    []string
		skipped   []string
	}{
		{name: "no schedulableArchitectures: a node of any architecture may exist, unchanged", nodes: linuxOnly,
			settings: settings.Settings{ClusterOperatingSystems: []string{"linux"}}, image: linuxAmd64,
			violation: "b. a node the settings declare (linux/386, build \"\""},
		{name: "no schedulableArchitectures, pinned", nodes: linuxOnly,
			settings: settings.Settings{ClusterOperatingSystems: []string{"linux"}}, image: linuxAmd64,
			patch:  func(t *testing.T) []byte { return pins(t, arch) },
			judged: []string{checkB, checkBAdmitted, checkC, checkCNodes}},
		{name: "architecture pin only", nodes: mixed, settings: twoOSes, image: linuxAmd64,
			patch:     func(t *testing.T) []byte { return pins(t, arch) },
			violation: "b. node windows-amd64 (windows/amd64) admits the returned Pod (linux OS)"},
		{name: "unchanged", nodes: mixed, settings: twoOSes, image: linuxAmd64,
			violation: "b. node windows-amd64 (windows/amd64) admits the returned Pod (linux OS)"},
		{name: "architecture and OS pins", nodes: mixed, settings: twoOSes, image: linuxAmd64,
			patch:  func(t *testing.T) []byte { return pins(t, arch, linux) },
			judged: []string{checkB, checkBAdmitted, checkBOtherOS, checkBOSPin, checkC, checkCNodes}},
		{name: "readNodes, architecture and OS pins", nodes: mixed, settings: settings.Settings{ReadNodes: true}, image: linuxAmd64,
			patch:  func(t *testing.T) []byte { return pins(t, arch, linux) },
			judged: []string{checkB, checkBAdmitted, checkBOtherOS, checkBOSPin, checkC, checkCNodes}},
		{name: "WebAssembly, unpinned", nodes: mixed, settings: twoOSes, image: wasmOnly,
			judged: []string{checkB, checkBAdmitted, checkBOtherOS, checkBOtherOSAdmits, checkC, checkCNodes}},
		{name: "WebAssembly, pinned to its OS", nodes: mixed, settings: twoOSes, image: wasmOnly,
			patch:     func(t *testing.T) []byte { return pins(t, linux) },
			violation: "c. node windows-amd64 (windows/amd64) admitted the Pod and runs it (all of its images), but not the returned Pod"},
		{name: "WebAssembly, spec.os linux, unpinned", nodes: mixed, settings: twoOSes, image: wasmOnly, podOS: "linux",
			violation: "b. node windows-amd64 (windows/amd64) admits the returned Pod, whose spec.os is linux: the kubelet refuses it there"},
		{name: "WebAssembly, spec.os linux, kept to it", nodes: mixed, settings: twoOSes, image: wasmOnly, podOS: "linux",
			patch:  func(t *testing.T) []byte { return pins(t, linux) },
			judged: []string{checkB, checkBAdmitted, checkBOtherOS, checkC, checkCNodes}},
		{name: "images of both OSes, no OS stated, pinned to the default OS", nodes: mixed, settings: twoOSes, image: bothOSes,
			patch:     func(t *testing.T) []byte { return pins(t, arch, linux) },
			violation: "c. node windows-amd64 (windows/amd64) admitted the Pod and runs it (all of its images), but not the returned Pod"},
		{name: "images of both OSes, no OS stated, a term per OS", nodes: mixed, settings: twoOSes, image: bothOSes,
			patch: func(t *testing.T) []byte {
				return pinsTerms(t, []v1.NodeSelectorRequirement{arch, linux}, []v1.NodeSelectorRequirement{arch, windows})
			},
			judged: []string{checkB, checkBAdmitted, checkBOtherOS, checkBOtherOSAdmits, checkC, checkCNodes, checkCOtherOS}},
		{name: "images of both OSes, no OS stated, unchanged", nodes: mixed, settings: twoOSes, image: bothOSes,
			judged: []string{checkB, checkBAdmitted, checkBOtherOS, checkBOtherOSAdmits, checkC, checkCNodes, checkCOtherOS}},
		{name: "images of both OSes, spec.os linux, pinned to its OS", nodes: mixed, settings: twoOSes, image: bothOSes, podOS: "linux",
			patch:  func(t *testing.T) []byte { return pins(t, arch, linux) },
			judged: []string{checkB, checkBAdmitted, checkBOtherOS, checkBOSPin, checkC, checkCNodes}},
		{name: "images of both OSes, spec.os linux, architecture pin only", nodes: mixed, settings: twoOSes, image: bothOSes, podOS: "linux",
			patch:     func(t *testing.T) []byte { return pins(t, arch) },
			violation: "b. node windows-amd64 (windows/amd64) admits the returned Pod, whose spec.os is linux: the kubelet refuses it there"},
		{name: "readNodes, images of both OSes, only the Windows Node runs them, refused", nodes: armAndWindows,
			settings: settings.Settings{ReadNodes: true}, image: bothOSes, refused: true,
			violation: "d. rejected, but nodes the settings count run it (windows OS, e.g. windows/amd64/"},
		{name: "readNodes, images of both OSes, only the Windows Node runs them, the Windows term", nodes: armAndWindows,
			settings: settings.Settings{ReadNodes: true}, image: bothOSes,
			patch:  func(t *testing.T) []byte { return pins(t, arch, windows) },
			judged: []string{checkB, checkBAdmitted, checkBOtherOS, checkBOtherOSAdmits, checkC, checkCNodes, checkCOtherOS}},
		{name: "readNodes, images of both OSes, spec.os linux, only the Windows Node runs its images, refused", nodes: armAndWindows,
			settings: settings.Settings{ReadNodes: true}, image: bothOSes, podOS: "linux", refused: true,
			judged: []string{checkMessage}, skipped: []string{skipRejected}},
		{name: "readNodes, images of both OSes, no Linux Node, refused", nodes: []v1.Node{testNode("windows-amd64", "windows", "amd64")},
			settings: settings.Settings{ReadNodes: true}, image: bothOSes, refused: true,
			violation: "d. rejected with no Node nor pool of its OS (readNodes), but the Pod is admitted by a node of every architecture its images run on, or by a Node of another of its OSes (windows or linux OS"},
		// A lookup failed (ignoreImage) and the other image runs anywhere: the failed one may run
		// on the Pod's own OS alone (docs/design.md), so the Windows nodes its term admits do not
		// count (RAPID_SEED=13399438757384656446); where every image was looked up, they do.
		{name: "WebAssembly and an image not found, only a Windows term, refused", nodes: mixed, settings: twoOSes, image: wasmOnly,
			also: &image{ref: "r/missing:1", missing: true}, windowsTerm: true, refused: true,
			judged: []string{checkMessage}, skipped: []string{skipRejected}},
		{name: "WebAssembly and an image not found, only a Windows term, accepted", nodes: mixed, settings: twoOSes, image: wasmOnly,
			also: &image{ref: "r/missing:1", missing: true}, windowsTerm: true,
			violation: "d. no node the settings count (linux OS) is admitted and runs every image, but the Pod was accepted"},
		{name: "WebAssembly, only a Windows term, refused", nodes: mixed, settings: twoOSes, image: wasmOnly, windowsTerm: true, refused: true,
			violation: "d. rejected, but nodes the settings count run it (windows OS, e.g. windows/amd64/"},
		{name: "no clusterOperatingSystems, a Windows Pod on Linux Nodes", nodes: linuxOnly, image: windowsOnly, podOS: "windows",
			patch: func(t *testing.T) []byte { return pins(t, arch) },
			// No drawn Node of its OS; the settings declare nodes of it (of every architecture),
			// which decide d.
			judged:  []string{checkA, checkD, checkDByContract, checkC, checkBDeclared, checkBDeclaredAdmits},
			skipped: []string{skipNoNodeHere}},
		{name: "clusterOperatingSystems [linux, windows], a Windows Pod on Linux Nodes, unpinned", nodes: linuxOnly,
			settings: settings.Settings{ClusterOperatingSystems: []string{"linux", "windows"}, SchedulableArchitectures: []string{"amd64"}}, image: windowsOnly, podOS: "windows",
			patch:     func(t *testing.T) []byte { return pins(t, arch) },
			violation: "b. node linux-amd64 (linux/amd64) admits the returned Pod (windows OS)"},
		{name: "clusterOperatingSystems [linux, windows], a Windows Pod pinned to its OS", nodes: linuxOnly,
			settings: settings.Settings{ClusterOperatingSystems: []string{"linux", "windows"}, SchedulableArchitectures: []string{"amd64"}}, image: windowsOnly, podOS: "windows",
			patch:  func(t *testing.T) []byte { return pins(t, arch, requirement(osLabel, v1.NodeSelectorOpIn, "windows")) },
			judged: []string{checkA, checkD, checkDByContract, checkC, checkB, checkBOtherOS, checkBOSPin, checkBDeclared, checkBDeclaredAdmits}},
		// The settings say the cluster has Linux nodes only: no node runs a Windows Pod (the
		// policy pins it to Windows; a judge blind to the settings' OSes would pass that).
		{name: "clusterOperatingSystems [linux], a Windows Pod pinned to its OS", nodes: linuxOnly,
			settings: settings.Settings{ClusterOperatingSystems: []string{"linux"}, SchedulableArchitectures: []string{"amd64"}}, image: windowsOnly, podOS: "windows",
			patch:     func(t *testing.T) []byte { return pins(t, arch, requirement(osLabel, v1.NodeSelectorOpIn, "windows")) },
			violation: "d. only nodes of an OS clusterOperatingSystems does not list (linux) admit the Pod, but it was accepted"},
		{name: "clusterOperatingSystems [linux], a Windows Pod refused", nodes: linuxOnly,
			settings: settings.Settings{ClusterOperatingSystems: []string{"linux"}, SchedulableArchitectures: []string{"amd64"}}, image: windowsOnly, podOS: "windows", refused: true,
			judged: []string{checkMessage, checkDOSOutside, checkDByContract}, skipped: []string{skipRejected}},
		// Refused before any lookup: a failed one changes nothing, even under onLookupFailure:
		// accept.
		{name: "clusterOperatingSystems [linux], a Windows Pod of an image not found, onLookupFailure: accept, refused", nodes: linuxOnly,
			settings: settings.Settings{ClusterOperatingSystems: []string{"linux"}, OnLookupFailure: "accept"}, image: image{ref: "r/missing:1", missing: true}, podOS: "windows", refused: true,
			judged: []string{checkMessage, checkDOSOutside, checkDByContract}, skipped: []string{skipRejected}},
		{name: "clusterOperatingSystems [linux], a Windows Pod of an image not found, onLookupFailure: accept, accepted", nodes: linuxOnly,
			settings: settings.Settings{ClusterOperatingSystems: []string{"linux"}, OnLookupFailure: "accept"}, image: image{ref: "r/missing:1", missing: true}, podOS: "windows",
			violation: "d. only nodes of an OS clusterOperatingSystems does not list (linux) admit the Pod, but it was accepted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "judged", Namespace: "default"},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: tc.image.ref}}}}
			if tc.podOS != "" {
				pod.Spec.OS = &v1.PodOS{Name: v1.OSName(tc.podOS)}
			}
			images := map[string]image{tc.image.ref: tc.image}
			if tc.also != nil {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "also", Image: tc.also.ref})
				images[tc.also.ref] = *tc.also
			}
			if tc.windowsTerm {
				pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
					NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{windows}},
						{MatchExpressions: []v1.NodeSelectorRequirement{requirement(archLabel, v1.NodeSelectorOpIn, "s390x")}}}}}}
			}
			c := &Case{Nodes: tc.nodes, Settings: tc.settings, Kind: "Pod", Object: pod, Template: &pod, images: images}
			response := policyhost.Response{Allowed: !tc.refused}
			if tc.refused {
				response.Status = &policyhost.Status{Message: "image-arch-affinity: no node runs it"}
			}
			if tc.patch != nil {
				response.Patch = tc.patch(t)
			}
			v, err := judge(c, answer{response})
			if err != nil {
				t.Fatal(err)
			}
			violations := strings.Join(v.Violations, "\n")
			switch {
			case tc.violation == "" && len(v.Violations) > 0:
				t.Fatalf("want no violation, got %s", violations)
			case tc.violation != "" && !strings.Contains(violations, tc.violation):
				// (b. on the nodes the settings declare may fail alike.)
				t.Fatalf("want a violation with %q, got %q", tc.violation, v.Violations)
			case tc.violation != "":
				return
			}
			// The settings state the cluster's own architecture: its Nodes decide d. (but for a
			// Pod of an OS it has no Node of: checkDByContract in judged).
			want := append([]string{checkD}, tc.judged...)
			if !slices.Contains(tc.judged, checkDByContract) {
				want = append(want, checkDByNodes)
			}
			// b. on the drawn Nodes comes with b. on the nodes the settings declare (of the same
			// platforms here), admitting where a drawn Node admits.
			if slices.Contains(tc.judged, checkB) {
				want = append(want, checkBDeclared)
			}
			if slices.Contains(tc.judged, checkBAdmitted) {
				want = append(want, checkBDeclaredAdmits)
			}
			if !tc.refused {
				want = append(want, checkTolerations, checkPreferences)
			}
			if tc.patch != nil {
				want = append(want, checkA)
			}
			if !sameSet(v.Judged, want) {
				t.Errorf("judged %q, want %q", v.Judged, want)
			}
			if !sameSet(v.Skipped, tc.skipped) {
				t.Errorf("skipped %q, want %q", v.Skipped, tc.skipped)
			}
		})
	}
}

func sameSet(got, want []string) bool {
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(slices.Compact(got), slices.Compact(want))
}

// TestReferences: the reference checks a judged case counts, by how its Pod spells its images.
func TestReferences(t *testing.T) {
	mirrored := settings.Settings{RegistryMirrors: map[string]string{mirrorHost: "127.0.0.1:5000", prefixedHost: "127.0.0.1:5000/gen"}}
	hub := settings.Settings{RegistryMirrors: map[string]string{mirrorHost: "127.0.0.1:5000", "docker.io": "127.0.0.1:5000"}}
	for _, tc := range []struct {
		name     string
		settings settings.Settings
		image    string
		judged   []string
		want     []string
	}{
		{"by tag", mirrored, "127.0.0.1:5000/gen/linux-amd64:1.0", []string{checkB}, nil},
		{"by digest", mirrored, "127.0.0.1:5000/gen/linux-amd64@sha256:" + strings.Repeat("a", 64), []string{checkB}, []string{checkByDigest}},
		{"through the mirror", mirrored, "mirror.invalid/multi/amd64-arm64:1.0", []string{checkD}, []string{checkMirrored}},
		{"through the prefixed mirror", mirrored, "prefixed.invalid/linux-amd64:1.0", []string{checkC}, []string{checkMirrored, checkMirrorPrefix}},
		{"a short name", hub, "gen/linux-amd64:1.0", []string{checkB}, []string{checkShortName}},
		{"a single name", hub, "linux-amd64:1.0", []string{checkB}, []string{checkSingleName}},
		{"not judged where it runs", mirrored, "prefixed.invalid/linux-amd64:1.0", []string{checkTolerations}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Case{Settings: tc.settings, Template: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: tc.image}}}}}
			if got := c.references(Verdict{Judged: tc.judged}); !slices.Equal(got, tc.want) {
				t.Errorf("references() = %v, want %v", got, tc.want)
			}
		})
	}
}
