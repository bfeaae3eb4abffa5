package cluster

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/registry"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/settings"
)

func platform(os, arch, osVersion string) registry.Platform {
	return registry.Platform{OS: os, Architecture: arch, OSVersion: osVersion}
}

func TestCatalogClass(t *testing.T) {
	attestation := registry.Platform{OS: "unknown", Architecture: "unknown", Attestation: true}
	for _, tc := range []struct {
		name      string
		platforms []registry.Platform
		found     bool
		want      string
	}{
		{"linux index", []registry.Platform{platform("linux", "amd64", ""), platform("linux", "arm64", "")}, true, ""},
		{"with attestations", []registry.Platform{platform("linux", "amd64", ""), attestation}, true, ""},
		{"windows", []registry.Platform{platform("windows", "amd64", "10.0.20348.2227")}, true, ""},
		{"odd values are read", []registry.Platform{platform("linux", "amd64", ""), platform("linux", "arm 64", "")}, true, ""},
		{"not in the catalog", nil, false, apartNotInCatalog},
		{"wasm only", []registry.Platform{platform("wasi", "wasm", "")}, true, apartWasm},
		{"wasm and native", []registry.Platform{platform("linux", "amd64", ""), platform("wasip1", "wasm", "")}, true, apartWasm},
		{"artifact", nil, true, apartPlatformless},
		{"attestations only", []registry.Platform{attestation, attestation}, true, apartPlatformless},
		{"no os", []registry.Platform{platform("", "amd64", ""), platform("", "arm64", "")}, true, apartUnreadable},
		{"nested index (null entry)", []registry.Platform{platform("linux", "s390x", ""), {}}, true, apartUnreadable},
	} {
		if got := catalogClass(registry.Image{Platforms: tc.platforms}, tc.found); got != tc.want {
			t.Errorf("%s: catalogClass = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func testNode(name, os, arch, build string) *v1.Node {
	labels := map[string]string{"kubernetes.io/os": os, "kubernetes.io/arch": arch}
	if build != "" {
		labels["node.kubernetes.io/windows-build"] = build
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestCatalogRuns(t *testing.T) {
	linux := []registry.Platform{platform("linux", "amd64", ""), {OS: "linux", Architecture: "arm64", Variant: "v8"}}
	windows := []registry.Platform{platform("windows", "amd64", "10.0.17763.5458"), platform("linux", "amd64", "")}
	for _, tc := range []struct {
		name      string
		platforms []registry.Platform
		node      *v1.Node
		builds    bool
		want      bool
	}{
		{"linux/amd64", linux, testNode("n", "linux", "amd64", ""), false, true},
		{"a variant is not compared", linux, testNode("n", "linux", "arm64", ""), false, true},
		{"another architecture", linux, testNode("n", "linux", "s390x", ""), false, false},
		{"another OS", linux, testNode("n", "windows", "amd64", "10.0.20348"), false, false},
		{"windows, builds not compared", windows, testNode("n", "windows", "amd64", "10.0.20348"), false, true},
		{"windows, another build", windows, testNode("n", "windows", "amd64", "10.0.20348"), true, false},
		{"windows, its build", windows, testNode("n", "windows", "amd64", "10.0.17763"), true, true},
		{"linux entry of a windows image", windows, testNode("n", "linux", "amd64", ""), true, true},
		{"an attestation runs nowhere", []registry.Platform{{OS: "linux", Architecture: "amd64", Attestation: true}}, testNode("n", "linux", "amd64", ""), false, false},
	} {
		if got := catalogRuns(registry.Image{Platforms: tc.platforms}, tc.node, tc.builds); got != tc.want {
			t.Errorf("%s: catalogRuns = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestJudgeCall(t *testing.T) {
	static := &settings.Settings{SchedulableArchitectures: []string{"amd64", "arm64"}, ClusterOperatingSystems: []string{"linux", "windows"}}
	nodeAware := &settings.Settings{ReadNodes: true}
	amd64 := registry.Image{Platforms: []registry.Platform{platform("linux", "amd64", "")}}
	win17763 := registry.Image{Platforms: []registry.Platform{platform("windows", "amd64", "10.0.17763.5458")}}
	wasm := registry.Image{Platforms: []registry.Platform{platform("wasi", "wasm", "")}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	linuxPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{OS: &v1.PodOS{Name: v1.Linux}}}
	onAMD64, onARM64 := testNode("amd64-1", "linux", "amd64", ""), testNode("arm64-1", "linux", "arm64", "")
	onWindows := testNode("windows-amd64-1", "windows", "amd64", "10.0.20348")
	const ref = "127.0.0.1:5000/gen/linux-amd64:1.0"
	refusal := `admission webhook "x" denied the request: image-arch-affinity: ... "` + ref + `" runs only on linux/amd64`
	for _, tc := range []struct {
		name         string
		s            *settings.Settings
		pod          *v1.Pod
		node         *v1.Node
		img          registry.Image
		refused      bool
		message      string
		verdict      string
		apart        string
		failContains string
	}{
		{"accepted, runs", nodeAware, pod, onAMD64, amd64, false, "", verdictAccepted, "", ""},
		{"accepted, runs not", nodeAware, pod, onARM64, amd64, false, "", "", "", "does not run"},
		{"static accepted, runs not", static, pod, onARM64, amd64, false, "", "", "", "does not run"},
		{"refused, runs not", nodeAware, pod, onARM64, amd64, true, refusal, verdictRefused, "", ""},
		{"refused, runs", nodeAware, pod, onAMD64, amd64, true, refusal, "", "", "runs the new image"},
		{"refused without the image", nodeAware, pod, onARM64, amd64, true, "image-arch-affinity: no", "", "", "without naming"},
		{"static refused", static, pod, onAMD64, amd64, true, refusal, verdictSettings, "", ""},
		{"static refused without the image", static, pod, onAMD64, amd64, true, "image-arch-affinity: no", "", "", "without naming"},
		{"wasm apart", nodeAware, pod, onARM64, wasm, false, "", "", apartWasm, ""},
		{"static, spec.os another OS", static, linuxPod, onWindows, amd64, false, "", "", apartSpecOS, ""},
		{"readNodes, spec.os another OS: judged", nodeAware, linuxPod, onWindows, amd64, false, "", "", "", "does not run"},
		{"static, windows build, not pinned", static, pod, onWindows, win17763, false, "", "", apartWindowsBuild, ""},
		{"readNodes, windows build, not pinned: judged", nodeAware, pod, onWindows, win17763, false, "", "", "", "does not run"},
		{"windows build, pinned", &settings.Settings{ReadNodes: true, PinWindowsBuild: true}, pod, onWindows, win17763, false, "", "", "", "does not run"},
	} {
		call := updateCall{kind: callDebug, pod: tc.pod, node: tc.node, ref: ref, img: tc.img, found: true}
		verdict, apart, failure := judgeCall(tc.s, call, tc.refused, tc.message)
		if verdict != tc.verdict || apart != tc.apart || (tc.failContains == "") != (failure == "") || !strings.Contains(failure, tc.failContains) {
			t.Errorf("%s: judgeCall = %q, %q, %q; want %q, %q, a failure containing %q", tc.name, verdict, apart, failure, tc.verdict, tc.apart, tc.failContains)
		}
	}
}

func TestCatalogEntry(t *testing.T) {
	reg := &registry.Registry{Addr: "127.0.0.1:5000", Catalog: map[string]registry.Image{
		"gen/linux-amd64:1.0": {Image: "gen/linux-amd64:1.0", Digest: "sha256:aa"},
		"wasm/index:1.0":      {Image: "wasm/index:1.0", Digest: "sha256:bb"},
	}}
	for _, tc := range []struct {
		ref, want string
	}{
		{"127.0.0.1:5000/gen/linux-amd64:1.0", "gen/linux-amd64:1.0"},
		{"127.0.0.1:5000/gen/linux-amd64:1.0@sha256:aa", "gen/linux-amd64:1.0"},
		{"127.0.0.1:5000/wasm/index@sha256:bb", "wasm/index:1.0"},
		{"127.0.0.1:5000/wasm/index@sha256:aa", ""},
		{"127.0.0.1:5000/gen/none:1.0", ""},
	} {
		img, found := catalogEntry(reg, tc.ref)
		if img.Image != tc.want || found != (tc.want != "") {
			t.Errorf("catalogEntry(%s) = %q, %v; want %q", tc.ref, img.Image, found, tc.want)
		}
	}
}
