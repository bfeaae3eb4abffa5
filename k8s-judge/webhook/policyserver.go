package webhook

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/image-arch-affinity/image-arch-affinity/k8s-judge/policyhost"
)

// PolicyServer is Kubewarden's policy-server serving the policy as the controller deploys it:
// a policies.yml entry named after the webhook (module, settings, mode, allowedToMutate,
// contextAwareResources, and every host capability, as the controller grants a
// ClusterAdmissionPolicy), TLS, and the cluster read through a kubeconfig.
type PolicyServer struct {
	cmd  *exec.Cmd
	addr string
	ca   []byte
}

// StartPolicyServer starts bin serving policy with module (annotated-policy.wasm), kwctl's
// sources.yml and the kubeconfig; dir holds its files and log.
func StartPolicyServer(bin, module, sources, kubeconfig string, policy *ClusterAdmissionPolicy, dir string) (*PolicyServer, error) {
	certFile, keyFile, ca, err := certificate(dir)
	if err != nil {
		return nil, err
	}
	entry := map[string]any{
		"module": "file://" + module, "settings": policy.Spec.Settings, "allowedToMutate": policy.Spec.Mutating,
		"policyMode": policy.Spec.Mode, "hostCapabilities": []string{"*"},
		"contextAwareResources": []map[string]string{{"apiVersion": "v1", "kind": "Node"}},
	}
	if policy.Spec.TimeoutEvalSeconds != nil {
		entry["timeoutEvalSeconds"] = *policy.Spec.TimeoutEvalSeconds
	}
	policies, err := yaml.Marshal(map[string]any{policy.Name(): entry})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "policies.yml"), policies, 0o600); err != nil {
		return nil, err
	}
	port, readiness := freePort(), freePort()
	cmd := exec.Command(bin, "--policies", filepath.Join(dir, "policies.yml"), "--addr", "127.0.0.1",
		"--port", fmt.Sprint(port), "--readiness-probe-port", fmt.Sprint(readiness),
		"--cert-file", certFile, "--key-file", keyFile, "--sources-path", sources,
		"--policies-download-dir", dir, "--sigstore-cache-dir", filepath.Join(dir, "sigstore"),
		"--log-level", "warn", "--log-no-color")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "RUST_BACKTRACE=0")
	log, err := os.Create(filepath.Join(dir, "policy-server.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &PolicyServer{cmd: cmd, addr: fmt.Sprintf("127.0.0.1:%d", port), ca: ca}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readiness", readiness))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			s.Close()
			out, _ := os.ReadFile(filepath.Join(dir, "policy-server.log"))
			return nil, fmt.Errorf("policy-server did not get ready: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Name says what serves the policy.
func (s *PolicyServer) Name() string { return "policy-server" }

// URL is the policy's validation endpoint.
func (s *PolicyServer) URL(policy *ClusterAdmissionPolicy) string {
	return "https://" + s.addr + "/validate/" + policy.Name()
}

// CABundle is the PEM of its certificate.
func (s *PolicyServer) CABundle() []byte { return s.ca }

// Audit sends the request to policy-server's audit endpoint, as the audit scanner does.
func (s *PolicyServer) Audit(policy *ClusterAdmissionPolicy, request []byte) (policyhost.Response, error) {
	review, err := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": json.RawMessage(request)})
	if err != nil {
		return policyhost.Response{}, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ca)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 30 * time.Second}
	resp, err := client.Post("https://"+s.addr+"/audit/"+policy.Name(), "application/json", bytes.NewReader(review))
	if err != nil {
		return policyhost.Response{}, err
	}
	defer resp.Body.Close()
	var answer struct {
		Response policyhost.Response `json:"response"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return policyhost.Response{}, fmt.Errorf("policy-server's audit answer (%s): %w", resp.Status, err)
	}
	return answer.Response, nil
}

// Errors: policy-server's failures are counted by the API server (its webhook metrics) and
// logged in policy-server.log; none are read here.
func (s *PolicyServer) Errors() []string { return nil }

// Close stops policy-server.
func (s *PolicyServer) Close() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// certificate writes a self-signed certificate for 127.0.0.1 and its key; returns their files
// and the certificate's PEM.
func certificate(dir string) (string, string, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", nil, err
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "policy-server"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return "", "", nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", nil, err
	}
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, cert, 0o600); err != nil {
		return "", "", nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", nil, err
	}
	return certFile, keyFile, cert, nil
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
