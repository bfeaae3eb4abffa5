// Package settings is the policy's settings as a Go type: the fields of src/settings/mod.rs (the
// README's settings table), with their JSON names and shapes. Decoding refuses a field the
// policy does not have (as the policy does: serde's deny_unknown_fields) and a value of the wrong
// type, so that settings read from the docs' YAML cannot come back empty without an error.
// Encoding omits every field left unset, so the policy applies its own default for it.
package settings

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Settings are the policy's settings (src/settings/mod.rs). A field left at its zero value is
// omitted from the JSON the policy reads; the pointers are the numbers whose zero is a value
// the policy judges (and refuses), not a default.
type Settings struct {
	DefaultOperatingSystem      string                     `json:"defaultOperatingSystem,omitempty"`
	SchedulableArchitectures    []string                   `json:"schedulableArchitectures,omitempty"`
	ClusterOperatingSystems     []string                   `json:"clusterOperatingSystems,omitempty"`
	OnNoCommonArchitecture      string                     `json:"onNoCommonArchitecture,omitempty"`
	OnLookupFailure             string                     `json:"onLookupFailure,omitempty"`
	RegistryMirrors             map[string]string          `json:"registryMirrors,omitempty"`
	ImagePlatforms              []ImagePlatforms           `json:"imagePlatforms,omitempty"`
	PreferredArchitecture       string                     `json:"preferredArchitecture,omitempty"`
	PreferredArchitectureWeight *int64                     `json:"preferredArchitectureWeight,omitempty"`
	PreferredArchitectures      []WeightedArchitecture     `json:"preferredArchitectures,omitempty"`
	FallbackArchitectures       []string                   `json:"fallbackArchitectures,omitempty"`
	ArchitectureTolerations     map[string][]v1.Toleration `json:"architectureTolerations,omitempty"`
	MatchNodeLabels             []string                   `json:"matchNodeLabels,omitempty"`
	WorkloadTemplates           string                     `json:"workloadTemplates,omitempty"`
	DaemonSetTemplates          string                     `json:"daemonSetTemplates,omitempty"`
	LookupBudgetMilliseconds    *int64                     `json:"lookupBudgetMilliseconds,omitempty"`
	ReadNodes                   bool                       `json:"readNodes,omitempty"`
	AutoscaledArchitectures     []AutoscaledPools          `json:"autoscaledArchitectures,omitempty"`
	PinWindowsBuild             bool                       `json:"pinWindowsBuild,omitempty"`
	WasmRuntimeClasses          []string                   `json:"wasmRuntimeClasses,omitempty"`
	TemplateDecisionSeconds     int64                      `json:"templateDecisionSeconds,omitempty"`
}

// ImagePlatforms configures the platforms of the images matching Image (`*` matches any
// characters) instead of looking them up: each of Architectures on each of OperatingSystems
// (none: DefaultOperatingSystem).
type ImagePlatforms struct {
	Image            string   `json:"image"`
	Architectures    []string `json:"architectures"`
	OperatingSystems []string `json:"operatingSystems,omitempty"`
}

// WeightedArchitecture is an architecture to prefer and the weight (1..100) of its term.
type WeightedArchitecture struct {
	Architecture string `json:"architecture"`
	Weight       int64  `json:"weight"`
}

// AutoscaledPools are the node pools of OS that autoscalers create from zero nodes.
type AutoscaledPools struct {
	OS            string   `json:"os"`
	Architectures []string `json:"architectures"`
}

// UnmarshalJSON decodes settings strictly: a field the policy does not have, at any depth, or a
// value of another type is an error. sigs.k8s.io/yaml decodes YAML through this too.
func (s *Settings) UnmarshalJSON(data []byte) error {
	type plain Settings // without this method
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	var out plain
	if err := decoder.Decode(&out); err != nil {
		return fmt.Errorf("the policy's settings: %w", err)
	}
	if decoder.More() {
		return fmt.Errorf("the policy's settings: data after the object")
	}
	*s = Settings(out)
	return nil
}

// Decode reads settings JSON strictly (see UnmarshalJSON).
func Decode(data []byte) (Settings, error) {
	var s Settings
	err := json.Unmarshal(data, &s)
	return s, err
}

// OnLookupFailureOrDefault is onLookupFailure, or the policy's default (ignoreImage).
func (s *Settings) OnLookupFailureOrDefault() string { return or(s.OnLookupFailure, "ignoreImage") }

// OnNoCommonArchitectureOrDefault is onNoCommonArchitecture, or the policy's default (reject).
func (s *Settings) OnNoCommonArchitectureOrDefault() string {
	return or(s.OnNoCommonArchitecture, "reject")
}

// DefaultOS is defaultOperatingSystem, or the policy's default (linux).
func (s *Settings) DefaultOS() string { return or(s.DefaultOperatingSystem, "linux") }

// OtherOS says whether the settings state a node OS other than os (clusterOperatingSystems,
// without readNodes): the policy then pins os's Pods to os.
func (s *Settings) OtherOS(os string) bool {
	for _, listed := range s.ClusterOperatingSystems {
		if listed != os {
			return true
		}
	}
	return false
}

// Pools are the architectures of the autoscaled pools of os.
func (s *Settings) Pools(os string) []string {
	var arches []string
	for _, pool := range s.AutoscaledArchitectures {
		if pool.OS == os {
			arches = append(arches, pool.Architectures...)
		}
	}
	return arches
}

func or(value, fallback string) string {
	if value == "" {
		return fallback
	}
	return value
}
