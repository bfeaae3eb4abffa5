package settings

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestDecode: settings as operators write them (YAML, as in docs/node-aware.md's policy) decode
// into their fields; a field the policy does not have, at any depth, or a value of another type is
// an error, never an empty field.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		check      func(Settings) bool
		err        string // a part of the error; "" for none
	}{
		{name: "docs/node-aware.md", yaml: "readNodes: true\nautoscaledArchitectures:\n  - {os: linux, architectures: [arm64]}\nlookupBudgetMilliseconds: 6000\n",
			check: func(s Settings) bool {
				return s.ReadNodes && len(s.Pools("linux")) == 1 && s.Pools("linux")[0] == "arm64" && len(s.Pools("windows")) == 0 &&
					s.LookupBudgetMilliseconds != nil && *s.LookupBudgetMilliseconds == 6000
			}},
		{name: "tolerations and platforms", yaml: "architectureTolerations:\n  arm64: [{key: kubernetes.io/arch, operator: Equal, value: arm64, effect: NoSchedule}]\nimagePlatforms:\n  - {image: \"r/legacy/*\", architectures: [amd64]}\npreferredArchitectures: [{architecture: arm64, weight: 80}]\n",
			check: func(s Settings) bool {
				return len(s.ArchitectureTolerations["arm64"]) == 1 && s.ArchitectureTolerations["arm64"][0].Value == "arm64" &&
					s.ImagePlatforms[0].Architectures[0] == "amd64" && s.PreferredArchitectures[0].Weight == 80
			}},
		{name: "defaults", yaml: "{}", check: func(s Settings) bool {
			return s.OnLookupFailureOrDefault() == "ignoreImage" && s.OnNoCommonArchitectureOrDefault() == "reject" && s.DefaultOS() == "linux"
		}},
		{name: "clusterOperatingSystems", yaml: "clusterOperatingSystems: [linux, windows]\ndefaultOperatingSystem: windows\n",
			check: func(s Settings) bool {
				return len(s.ClusterOperatingSystems) == 2 && s.OtherOS("linux") && s.OtherOS("windows") && s.DefaultOS() == "windows"
			}},
		{name: "clusterOperatingSystems of one OS", yaml: "clusterOperatingSystems: [linux]\n",
			check: func(s Settings) bool { return !s.OtherOS("linux") && s.OtherOS("windows") }},
		{name: "no clusterOperatingSystems", yaml: "{}", check: func(s Settings) bool { return !s.OtherOS("linux") && !s.OtherOS("windows") }},
		{name: "unknown field", yaml: "readNode: true\n", err: `unknown field "readNode"`},
		{name: "misspelt clusterOperatingSystems", yaml: "clusterOperatingSystem: [linux]\n", err: `unknown field "clusterOperatingSystem"`},
		{name: "clusterOperatingSystems as a string", yaml: "clusterOperatingSystems: linux\n", err: "cannot unmarshal"},
		{name: "unknown nested field", yaml: "autoscaledArchitectures:\n  - {os: linux, arches: [arm64]}\n", err: `unknown field "arches"`},
		{name: "unknown toleration field", yaml: "architectureTolerations:\n  arm64: [{key: a, efect: NoSchedule}]\n", err: `unknown field "efect"`},
		{name: "wrong type", yaml: "autoscaledArchitectures: {os: linux}\n", err: "cannot unmarshal"},
		{name: "a string for a bool", yaml: "readNodes: \"true\"\n", err: "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Settings
			err := yaml.Unmarshal([]byte(tc.yaml), &s)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("want no error, got %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("want an error with %q, got %v", tc.err, err)
			case tc.err == "" && !tc.check(s):
				t.Fatalf("decoded %+v", s)
			}
		})
	}
}

// TestEncode: the JSON the policy reads has the fields set and no other (it applies its
// defaults to the rest), and decodes back strictly.
func TestEncode(t *testing.T) {
	budget := int64(6000)
	for _, tc := range []struct {
		name     string
		settings Settings
		want     string
	}{
		{"empty", Settings{}, `{}`},
		{"docs/node-aware.md", Settings{ReadNodes: true, AutoscaledArchitectures: []AutoscaledPools{{OS: "linux", Architectures: []string{"arm64"}}},
			LookupBudgetMilliseconds: &budget},
			`{"lookupBudgetMilliseconds":6000,"readNodes":true,"autoscaledArchitectures":[{"os":"linux","architectures":["arm64"]}]}`},
		{"strings and lists", Settings{OnNoCommonArchitecture: "reject", OnLookupFailure: "ignoreImage", SchedulableArchitectures: []string{"amd64"},
			PreferredArchitectures: []WeightedArchitecture{{Architecture: "amd64", Weight: 80}}},
			`{"schedulableArchitectures":["amd64"],"onNoCommonArchitecture":"reject","onLookupFailure":"ignoreImage","preferredArchitectures":[{"architecture":"amd64","weight":80}]}`},
		{"clusterOperatingSystems", Settings{DefaultOperatingSystem: "windows", ClusterOperatingSystems: []string{"linux", "windows"}},
			`{"defaultOperatingSystem":"windows","clusterOperatingSystems":["linux","windows"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tc.want {
				t.Fatalf("got %s, want %s", data, tc.want)
			}
			if _, err := Decode(data); err != nil {
				t.Fatalf("decoding it back: %v", err)
			}
		})
	}
}
