package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/policyhost"
	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/settings"
)

// fakeHost answers every evaluation with answer, or fails with err; it records the settings JSON.
type fakeHost struct {
	answer   policyhost.Response
	err      error
	settings string
}

func (h *fakeHost) Name() string { return "a fake host" }
func (h *fakeHost) Close() error { return nil }
func (h *fakeHost) Evaluate(_ []byte, s any) (policyhost.Response, error) {
	data, _ := json.Marshal(s)
	h.settings = string(data)
	return h.answer, h.err
}

// TestAdapterErrors: every review the adapter does not answer with the policy's answer is
// recorded (Errors), and only those: the control-plane test fails on any.
func TestAdapterErrors(t *testing.T) {
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"default","name":"p","operation":"CREATE"}}`
	for _, tc := range []struct {
		name, body string
		host       *fakeHost
		code       int
		err        string // a part of the recorded error; "" for none
	}{
		{"answered", review, &fakeHost{answer: policyhost.Response{Allowed: true}}, http.StatusOK, ""},
		{"the host fails", review, &fakeHost{err: errors.New("module trapped")}, http.StatusInternalServerError, "HTTP 500: Pod default/p: a fake host: module trapped"},
		{"not an AdmissionReview", `{"kind":"AdmissionReview"}`, &fakeHost{}, http.StatusBadRequest, "HTTP 400: not an AdmissionReview"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := int64(6000)
			a := Serve(tc.host, settings.Settings{ReadNodes: true, LookupBudgetMilliseconds: &budget})
			defer a.Close()
			resp, err := a.server.Client().Post(a.server.URL+"/validate/x", "application/json", bytes.NewBufferString(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("HTTP %d, want %d", resp.StatusCode, tc.code)
			}
			errs := a.Errors()
			switch {
			case tc.err == "" && (len(errs) != 0 || a.Reviews.Load() != 1):
				t.Fatalf("want the review answered and no error, got %d answered, errors %q", a.Reviews.Load(), errs)
			case tc.err != "" && (len(errs) != 1 || !strings.Contains(errs[0], tc.err) || a.Reviews.Load() != 0):
				t.Fatalf("want one error with %q, got %q (%d answered)", tc.err, errs, a.Reviews.Load())
			}
			if tc.code != http.StatusBadRequest && tc.host.settings != `{"lookupBudgetMilliseconds":6000,"readNodes":true}` {
				t.Fatalf("the host was given settings %s", tc.host.settings)
			}
		})
	}
}
