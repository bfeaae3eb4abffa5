package oracle

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"  // apps/v1 into legacyscheme
	_ "k8s.io/kubernetes/pkg/apis/batch/install" // batch/v1
	_ "k8s.io/kubernetes/pkg/apis/core/install"  // v1
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/batch/cronjob"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	podstrategy "k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
)

// kinds are the kinds the policy changes: the resource the API server serves each as, and the
// registry strategy it creates them with.
var kinds = map[schema.GroupKind]struct {
	resource string
	strategy rest.RESTCreateStrategy
}{
	{Kind: "Pod"}:                        {"pods", podstrategy.Strategy},
	{Kind: "ReplicationController"}:      {"replicationcontrollers", replicationcontroller.Strategy},
	{Group: "apps", Kind: "Deployment"}:  {"deployments", deployment.Strategy},
	{Group: "apps", Kind: "ReplicaSet"}:  {"replicasets", replicaset.Strategy},
	{Group: "apps", Kind: "StatefulSet"}: {"statefulsets", statefulset.Strategy},
	{Group: "apps", Kind: "DaemonSet"}:   {"daemonsets", daemonset.Strategy},
	{Group: "batch", Kind: "Job"}:        {"jobs", job.Strategy},
	{Group: "batch", Kind: "CronJob"}:    {"cronjobs", cronjob.Strategy},
}

// strict decodes as the API server decodes a body sent with fieldValidation=Strict: an unknown
// or duplicate field is an error (the API server's default only warns and drops the field, so a
// misspelt field in a patch would silently vanish: the judge refuses it).
var strict = json.NewSerializerWithOptions(json.DefaultMetaFactory, legacyscheme.Scheme, legacyscheme.Scheme,
	json.SerializerOptions{Strict: true})

// Default is the object data (JSON, with apiVersion and kind) as the API server hands it to
// mutating admission on a create: decoded into its versioned type, the scheme's defaults applied
// (the same legacyscheme defaulting functions ValidateCreate runs), encoded again as JSON. A
// mutating webhook's AdmissionRequest carries this object, not the one the client sent.
func Default(data []byte) ([]byte, error) {
	versioned, gvk, err := strict.Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if _, ok := kinds[gvk.GroupKind()]; !ok {
		return nil, fmt.Errorf("no strategy for %v", gvk)
	}
	legacyscheme.Scheme.Default(versioned)
	versioned.GetObjectKind().SetGroupVersionKind(*gvk)
	var out bytes.Buffer
	if err := plain.Encode(versioned, &out); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return bytes.TrimSpace(out.Bytes()), nil
}

// plain encodes as the API server encodes an object for a webhook (JSON).
var plain = json.NewSerializerWithOptions(json.DefaultMetaFactory, legacyscheme.Scheme, legacyscheme.Scheme,
	json.SerializerOptions{})

// ValidateCreate says what the API server says of creating the object data (JSON, with apiVersion
// and kind) in namespace: the strict decoding errors, then, as in the registry's create, the
// defaults applied, the conversion to the internal type, the system metadata filled, and
// rest.BeforeCreate (the kind's strategy: PrepareForCreate, Validate with the options it
// chooses, ObjectMeta validation). No error: created.
func ValidateCreate(namespace string, data []byte) []string {
	versioned, gvk, err := strict.Decode(data, nil, nil)
	var problems []string
	if err != nil {
		if !runtime.IsStrictDecodingError(err) {
			return []string{fmt.Sprintf("decode: %v", err)}
		}
		var strictErr interface{ Errors() []error }
		if errors.As(err, &strictErr) {
			for _, e := range strictErr.Errors() {
				problems = append(problems, fmt.Sprintf("strict decoding: %v", e))
			}
		}
	}
	kind, ok := kinds[gvk.GroupKind()]
	if !ok {
		return append(problems, fmt.Sprintf("no strategy for %v", gvk))
	}
	legacyscheme.Scheme.Default(versioned)
	internal, err := legacyscheme.Scheme.ConvertToVersion(versioned,
		schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		return append(problems, fmt.Sprintf("convert: %v", err))
	}
	objectMeta, err := meta.Accessor(internal)
	if err != nil {
		return append(problems, fmt.Sprintf("metadata: %v", err))
	}
	rest.FillObjectMetaSystemFields(objectMeta)
	ctx := genericapirequest.WithNamespace(context.Background(), namespace)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIGroup: gvk.Group, APIVersion: gvk.Version,
		Namespace: namespace, Resource: kind.resource,
	})
	if err := rest.BeforeCreate(kind.strategy, ctx, internal); err != nil {
		problems = append(problems, causes(err)...)
	}
	return problems
}

// ValidatePodUpdate says what the API server says of updating the Pod oldData (JSON, as stored)
// to data (JSON, as admission returns it) in namespace, on subresource "" (a Pod update:
// ValidatePodUpdate) or "ephemeralcontainers" (ValidatePodEphemeralContainersUpdate): as
// ValidateCreate, strict decoding, the defaults, the conversion to the internal type, then
// rest.BeforeUpdate with the pod registry's strategy for the subresource (PrepareForUpdate, then
// ObjectMeta update validation and the strategy's ValidateUpdate). The old Pod gets the system
// metadata a stored object has. No error: updated.
func ValidatePodUpdate(namespace, subresource string, data, oldData []byte) []string {
	var strategy rest.RESTUpdateStrategy
	switch subresource {
	case "":
		strategy = podstrategy.Strategy
	case "ephemeralcontainers":
		strategy = podstrategy.EphemeralContainersStrategy
	default:
		return []string{fmt.Sprintf("no update strategy for pods/%s", subresource)}
	}
	internalPod := func(data []byte) (runtime.Object, []string) {
		versioned, gvk, err := strict.Decode(data, nil, nil)
		var problems []string
		if err != nil {
			if !runtime.IsStrictDecodingError(err) {
				return nil, []string{fmt.Sprintf("decode: %v", err)}
			}
			var strictErr interface{ Errors() []error }
			if errors.As(err, &strictErr) {
				for _, e := range strictErr.Errors() {
					problems = append(problems, fmt.Sprintf("strict decoding: %v", e))
				}
			}
		}
		if gvk.GroupKind() != (schema.GroupKind{Kind: "Pod"}) {
			return nil, append(problems, fmt.Sprintf("not a Pod: %v", gvk))
		}
		legacyscheme.Scheme.Default(versioned)
		internal, err := legacyscheme.Scheme.ConvertToVersion(versioned, schema.GroupVersion{Version: runtime.APIVersionInternal})
		if err != nil {
			return nil, append(problems, fmt.Sprintf("convert: %v", err))
		}
		return internal, problems
	}
	old, problems := internalPod(oldData)
	if old == nil || len(problems) > 0 {
		return append([]string{"the old Pod:"}, problems...)
	}
	obj, problems := internalPod(data)
	if obj == nil {
		return problems
	}
	oldMeta, _ := meta.Accessor(old)
	if created := oldMeta.GetCreationTimestamp(); len(oldMeta.GetUID()) == 0 || created.IsZero() {
		rest.FillObjectMetaSystemFields(oldMeta)
	}
	if oldMeta.GetResourceVersion() == "" {
		oldMeta.SetResourceVersion("1")
	}
	objMeta, _ := meta.Accessor(obj)
	if objMeta.GetResourceVersion() == "" {
		objMeta.SetResourceVersion(oldMeta.GetResourceVersion())
	}
	ctx := genericapirequest.WithNamespace(context.Background(), namespace)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "update", APIVersion: "v1", Namespace: namespace, Resource: "pods",
		Subresource: subresource, Name: objMeta.GetName(),
	})
	if err := rest.BeforeUpdate(strategy, ctx, obj, old); err != nil {
		problems = append(problems, causes(err)...)
	}
	return problems
}

// causes are the API server's refusal err as problems: each cause of its status ("field:
// message"), else its text.
func causes(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return []string{err.Error()}
	}
	var out []string
	for _, cause := range status.Status().Details.Causes {
		out = append(out, fmt.Sprintf("%s: %s", cause.Field, cause.Message))
	}
	return out
}
