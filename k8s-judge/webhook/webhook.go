// Package webhook puts the policy behind a real API server as Kubewarden does: a
// ClusterAdmissionPolicy read from the project's docs becomes the MutatingWebhookConfiguration
// Kubewarden's controller writes for it, and a test adapter serves it: each AdmissionReview the
// API server sends is evaluated by the compiled module on a Kubewarden host (policyhost) and
// answered as policy-server answers. The adapter is for the tests; users run policy-server.
package webhook

import (
	"bufio"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/policyhost"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/settings"
)

// ClusterAdmissionPolicy is the part of Kubewarden's policies.kubewarden.io/v1 resource that
// shapes the webhook and the evaluation.
type ClusterAdmissionPolicy struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Module             string                                       `json:"module"`
		Mode               string                                       `json:"mode"`
		Mutating           bool                                         `json:"mutating"`
		FailurePolicy      *admissionregistrationv1.FailurePolicyType   `json:"failurePolicy"`
		MatchPolicy        *admissionregistrationv1.MatchPolicyType     `json:"matchPolicy"`
		TimeoutSeconds     *int32                                       `json:"timeoutSeconds"`
		TimeoutEvalSeconds *int32                                       `json:"timeoutEvalSeconds"`
		Rules              []admissionregistrationv1.RuleWithOperations `json:"rules"`
		ObjectSelector     *metav1.LabelSelector                        `json:"objectSelector"`
		NamespaceSelector  *metav1.LabelSelector                        `json:"namespaceSelector"`
		Settings           settings.Settings                            `json:"settings"`
	} `json:"spec"`
}

// ReadPolicy reads the first ```yaml block after the line heading in the markdown file path:
// the ClusterAdmissionPolicy the docs tell operators to apply.
func ReadPolicy(path, heading string) (*ClusterAdmissionPolicy, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var block strings.Builder
	state := 0 // 0: before the heading, 1: before the block, 2: in it
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case state == 0 && line == heading:
			state = 1
		case state == 1 && line == "```yaml":
			state = 2
		case state == 2 && line == "```":
			// Fields the webhook does not use (contextAwareResources, backgroundAudit) are skipped;
			// the settings are decoded strictly (settings.Settings): a field the policy does not
			// have, or a value of another type, is an error.
			var policy ClusterAdmissionPolicy
			if err := yaml.Unmarshal([]byte(block.String()), &policy); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			if policy.Kind != "ClusterAdmissionPolicy" {
				return nil, fmt.Errorf("%s: the block after %q is a %q", path, heading, policy.Kind)
			}
			return &policy, nil
		case state == 2:
			block.WriteString(line + "\n")
		}
	}
	return nil, fmt.Errorf("%s: no yaml block after %q", path, heading)
}

// Name is the webhook configuration's name, as Kubewarden's controller names it
// (clusterwide-<policy>): the API server calls mutating webhooks in the order of these names.
func (p *ClusterAdmissionPolicy) Name() string { return "clusterwide-" + p.Metadata.Name }

// Configuration is the MutatingWebhookConfiguration Kubewarden's controller writes for p
// (internal/controller/policy_subreconciler_webhook.go, v1.35.0): its rules, failurePolicy,
// matchPolicy, timeoutSeconds, objectSelector and the namespaceSelector with the controller's
// own `NotIn [<its namespace>]` first; sideEffects None, admissionReviewVersions v1, no
// reinvocationPolicy. The client config points at url with the CA caBundle (the controller's
// points at the policy-server Service).
func (p *ClusterAdmissionPolicy) Configuration(url string, caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	namespaces := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kubewarden"}},
	}}
	if p.Spec.NamespaceSelector != nil {
		namespaces.MatchExpressions = append(namespaces.MatchExpressions, p.Spec.NamespaceSelector.MatchExpressions...)
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name(), Labels: map[string]string{"app.kubernetes.io/part-of": "kubewarden"}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    p.Name() + ".kubewarden.admission",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   p.Spec.Rules,
			FailurePolicy:           p.Spec.FailurePolicy,
			MatchPolicy:             p.Spec.MatchPolicy,
			NamespaceSelector:       namespaces,
			ObjectSelector:          p.Spec.ObjectSelector,
			SideEffects:             &none,
			TimeoutSeconds:          p.Spec.TimeoutSeconds,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// Server serves the policy over HTTPS for the API server: the test adapter, or policy-server.
type Server interface {
	// Name says which server this is.
	Name() string
	// URL is where it serves policy (policy-server's /validate/<policy> path).
	URL(policy *ClusterAdmissionPolicy) string
	// CABundle is the PEM the API server verifies it with.
	CABundle() []byte
	// Audit answers the request the background audit scanner sends for a running object.
	Audit(policy *ClusterAdmissionPolicy, request []byte) (policyhost.Response, error)
	// Errors are the reviews the server itself knows it failed to answer (the test adapter
	// records each; policy-server reports none here: the API server's metrics count them).
	Errors() []string
	// Close stops it: the API server then finds the webhook down.
	Close()
}

// Adapter serves the policy over HTTPS, evaluated on a policyhost.Host.
type Adapter struct {
	server   *httptest.Server
	host     policyhost.Host
	settings settings.Settings
	// Reviews counts the AdmissionReviews answered.
	Reviews atomic.Int64
	mu      sync.Mutex
	errors  []string
}

// Serve starts the adapter: host evaluates each review with settings.
func Serve(host policyhost.Host, settings settings.Settings) *Adapter {
	a := &Adapter{host: host, settings: settings}
	a.server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var review admissionv1.AdmissionReview
		if err == nil {
			err = json.Unmarshal(body, &review)
		}
		if err != nil || review.Request == nil {
			a.fail(w, http.StatusBadRequest, "not an AdmissionReview: %v", err)
			return
		}
		request, err := json.Marshal(review.Request)
		if err != nil {
			a.fail(w, http.StatusInternalServerError, "%s %s/%s: %v", review.Request.Kind.Kind, review.Request.Namespace, review.Request.Name, err)
			return
		}
		answer, err := host.Evaluate(request, settings)
		if err != nil {
			a.fail(w, http.StatusInternalServerError, "%s %s/%s: %s: %v", review.Request.Kind.Kind, review.Request.Namespace, review.Request.Name, host.Name(), err)
			return
		}
		response := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: answer.Allowed, Warnings: answer.Warnings}
		if len(answer.Patch) > 0 {
			patchType := admissionv1.PatchTypeJSONPatch
			response.Patch, response.PatchType = answer.Patch, &patchType
		}
		if answer.Status != nil {
			response.Result = &metav1.Status{Message: answer.Status.Message, Code: int32(answer.Status.Code)}
		}
		name := review.Request.Kind.Kind + " " + review.Request.Namespace + "/" + review.Request.Name
		review.Request, review.Response = nil, response
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(review); err != nil {
			a.record("%s: writing the answer: %v", name, err)
			return
		}
		// The API server gave up waiting (timeoutSeconds) or dropped the connection: under
		// failurePolicy Ignore it went on without the answer.
		if err := r.Context().Err(); err != nil {
			a.record("%s: the API server stopped waiting for the answer: %v", name, err)
			return
		}
		a.Reviews.Add(1)
	}))
	return a
}

// fail answers an HTTP error and records it: the API server then fails the request, or, under
// failurePolicy Ignore, lets the object in unchanged.
func (a *Adapter) fail(w http.ResponseWriter, code int, format string, args ...any) {
	message := fmt.Sprintf(format, args...)
	a.record("HTTP %d: %s", code, message)
	http.Error(w, message, code)
}

func (a *Adapter) record(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errors = append(a.errors, fmt.Sprintf(format, args...))
}

// Errors are the AdmissionReviews the adapter did not answer with the policy's answer: an HTTP
// error (not an AdmissionReview, the host failed) or an answer the API server did not wait for.
func (a *Adapter) Errors() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.errors)
}

// Name says what serves the policy.
func (a *Adapter) Name() string { return "the test adapter on the " + a.host.Name() }

// Audit evaluates the request on the adapter's host, as policy-server's audit endpoint does.
func (a *Adapter) Audit(_ *ClusterAdmissionPolicy, request []byte) (policyhost.Response, error) {
	return a.host.Evaluate(request, a.settings)
}

// URL is where the policy is served, at policy-server's path for it.
func (a *Adapter) URL(policy *ClusterAdmissionPolicy) string {
	return a.server.URL + "/validate/" + policy.Name()
}

// CABundle is the PEM of the adapter's certificate.
func (a *Adapter) CABundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.server.Certificate().Raw})
}

// Close stops the adapter: the API server then finds the webhook down.
func (a *Adapter) Close() { a.server.Close() }

// Injector is a sidecar injector: a mutating webhook that appends a container to every Pod it
// is sent, as service meshes' injectors do.
type Injector struct {
	server *httptest.Server
	// Reviews counts the Pods it was sent.
	Reviews atomic.Int64
}

// Inject starts an injector of sidecar.
func Inject(sidecar corev1.Container) *Injector {
	i := &Injector{}
	i.server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		patch, _ := json.Marshal([]map[string]any{{"op": "add", "path": "/spec/containers/-", "value": sidecar}})
		patchType := admissionv1.PatchTypeJSONPatch
		i.Reviews.Add(1)
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, Patch: patch, PatchType: &patchType}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	return i
}

// URL is the injector's address.
func (i *Injector) URL() string { return i.server.URL + "/inject" }

// CABundle is the PEM of the injector's certificate.
func (i *Injector) CABundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: i.server.Certificate().Raw})
}

// Close stops the injector.
func (i *Injector) Close() { i.server.Close() }
