package oracle

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func pod(t *testing.T, spec string) *v1.Pod {
	t.Helper()
	var p v1.Pod
	if err := json.Unmarshal([]byte(`{"spec":`+spec+`}`), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func node(labels map[string]string, taints ...v1.Taint) *v1.Node {
	n := &v1.Node{}
	n.Name = "n1"
	n.Labels = labels
	n.Spec.Taints = taints
	return n
}

func TestAdmits(t *testing.T) {
	arm64 := map[string]string{"kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux"}
	armTaint := v1.Taint{Key: "kubernetes.io/arch", Value: "arm64", Effect: v1.TaintEffectNoSchedule}
	preferNo := v1.Taint{Key: "spot", Effect: v1.TaintEffectPreferNoSchedule}
	for _, tc := range []struct {
		name  string
		spec  string
		node  *v1.Node
		admit bool
		err   bool
	}{
		{"no constraint", `{}`, node(arm64), true, false},
		{"nodeSelector matches", `{"nodeSelector":{"kubernetes.io/arch":"arm64"}}`, node(arm64), true, false},
		{"nodeSelector differs", `{"nodeSelector":{"kubernetes.io/arch":"amd64"}}`, node(arm64), false, false},
		{"terms are ORed", `{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
			{"matchExpressions":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]}]},
			{"matchExpressions":[{"key":"kubernetes.io/arch","operator":"In","values":["arm64"]}]}]}}}}`, node(arm64), true, false},
		{"no terms match nothing", `{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}}`, node(arm64), false, false},
		{"matchFields on the name", `{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
			{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]}}}}`, node(arm64), true, false},
		{"matchFields with two values is the matcher's error", `{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
			{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1","n2"]}]}]}}}}`, node(arm64), false, true},
		{"untolerated NoSchedule taint", `{}`, node(arm64, armTaint), false, false},
		{"tolerated taint", `{"tolerations":[{"key":"kubernetes.io/arch","operator":"Equal","value":"arm64","effect":"NoSchedule"}]}`, node(arm64, armTaint), true, false},
		{"PreferNoSchedule does not filter", `{}`, node(arm64, preferNo), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admit, err := Admits(pod(t, tc.spec), tc.node)
			if admit != tc.admit || (err != nil) != tc.err {
				t.Fatalf("Admits = %v, %v; want %v, error %v", admit, err, tc.admit, tc.err)
			}
		})
	}
}

const validPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox"}]%s}}`

func TestValidateCreate(t *testing.T) {
	affinity := func(values string) string {
		return `,"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
			{"matchExpressions":[{"key":"kubernetes.io/arch","operator":"In","values":` + values + `}]}]}}}`
	}
	for _, tc := range []struct {
		name   string
		object string
		want   []string
	}{
		{"a valid Pod", fmt.Sprintf(validPod, ""), nil},
		{"a pin", fmt.Sprintf(validPod, affinity(`["amd64","arm64"]`)), nil},
		{"a label value with a space in a required term", fmt.Sprintf(validPod, affinity(`["arm 64"]`)), []string{
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "arm 64": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
		{"an image volume a container mounts", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox",
			"volumeMounts":[{"name":"model","mountPath":"/mnt/model"}]}],"volumes":[{"name":"model","image":{"reference":"r.example/model:1.0"}}]}}`, nil},
		{"an image volume without a reference", fmt.Sprintf(validPod, `,"volumes":[{"name":"model","image":{"pullPolicy":"Always"}}]`), []string{
			`spec.volumes[0].image.reference: Required value`}},
		{"an unknown field", fmt.Sprintf(validPod, `,"nodeSelectr":{"a":"b"}`), []string{
			`strict decoding: unknown field "spec.nodeSelectr"`}},
		{"no terms", fmt.Sprintf(validPod, `,"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}`), []string{
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term`}},
		{"a Deployment whose template has a bad term", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},
			"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]` + affinity(`["s390x),pool in (zz"]`) + `}}}}`, []string{
			`spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "s390x),pool in (zz": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidateCreate("default", []byte(tc.object)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ValidateCreate =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestDefault: the object a mutating webhook gets is defaulted as the API server defaults it.
func TestDefault(t *testing.T) {
	for _, tc := range []struct {
		name, object string
		want         map[string]any // JSON paths (dot-separated) and the value each must have
	}{
		{"a Pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},
			"spec":{"containers":[{"name":"c","image":"r/app:1"}],"volumes":[{"name":"v","image":{"reference":"r/app:latest"}}]}}`,
			map[string]any{"apiVersion": "v1", "kind": "Pod", "spec.restartPolicy": "Always", "spec.schedulerName": "default-scheduler",
				"spec.dnsPolicy": "ClusterFirst", "spec.containers.0.imagePullPolicy": "IfNotPresent",
				"spec.containers.0.terminationMessagePolicy": "File", "spec.volumes.0.image.pullPolicy": "Always"}},
		{"a Deployment's template", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default"},
			"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"r/app:1"}]}}}}`,
			map[string]any{"apiVersion": "apps/v1", "spec.replicas": 1.0, "spec.strategy.type": "RollingUpdate",
				"spec.template.spec.restartPolicy": "Always", "spec.template.spec.containers.0.imagePullPolicy": "IfNotPresent"}},
		{"a CronJob's Job template", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"j","namespace":"default"},
			"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"r/app:1"}]}}}}}}`,
			map[string]any{"spec.concurrencyPolicy": "Allow", "spec.jobTemplate.spec.template.spec.schedulerName": "default-scheduler"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Default([]byte(tc.object))
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			for path, want := range tc.want {
				got := doc
				for _, key := range strings.Split(path, ".") {
					switch node := got.(type) {
					case map[string]any:
						got = node[key]
					case []any:
						i, _ := strconv.Atoi(key)
						got = node[i]
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %v, want %v in %s", path, got, want, out)
				}
			}
			if problems := ValidateCreate("default", out); len(problems) > 0 {
				t.Errorf("the defaulted object is refused: %v", problems)
			}
		})
	}
}
