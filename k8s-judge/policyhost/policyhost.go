// Package policyhost runs the compiled policy on a Kubewarden host: the project's embedded host
// (`embedded-host serve`, one process for many evaluations) or Kubewarden's kwctl (`kwctl run`,
// one process per evaluation), with the same request, settings and registries.
package policyhost

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Response is the AdmissionResponse the hosts print.
type Response struct {
	UID     string `json:"uid"`
	Allowed bool   `json:"allowed"`
	// Patch is the JSON Patch (the hosts print it base64-encoded).
	Patch    []byte   `json:"patch,omitempty"`
	Status   *Status  `json:"status,omitempty"`
	Warnings []string `json:"warnings"`
}

// Status is the response's status.
type Status struct {
	Message string `json:"message,omitempty"`
	Code    int    `json:"code,omitempty"`
}

// Message is the status message, or "".
func (r Response) Message() string {
	if r.Status == nil {
		return ""
	}
	return r.Status.Message
}

// Host evaluates one AdmissionRequest (JSON) with settings.
type Host interface {
	Name() string
	Evaluate(request []byte, settings any) (Response, error)
	Close() error
}

// Options say how the policy is run on either host.
type Options struct {
	// Module is the policy's module (policy.wasm for the embedded host, which reads the
	// metadata.yml beside it; annotated-policy.wasm for kwctl).
	Module string
	// Sources is kwctl's sources.yml.
	Sources string
	// Kubeconfig, when set, lets the policy read the cluster (--allow-context-aware).
	Kubeconfig string
	// Stderr receives the hosts' diagnostics (nil: discarded).
	Stderr io.Writer
	// kwctlArgs are kwctl's own flags.
	kwctlArgs []string
}

func (o Options) args() []string {
	args := []string{"--sources-path", o.Sources}
	if o.Kubeconfig != "" {
		args = append(args, "--allow-context-aware")
	}
	return args
}

func (o Options) env() []string {
	env := os.Environ()
	env = append(env, "RUST_BACKTRACE=0")
	if o.Kubeconfig != "" {
		env = append(env, "KUBECONFIG="+o.Kubeconfig)
	}
	return env
}

// Embedded is `embedded-host serve` running the module.
type Embedded struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	closed bool
}

// StartEmbedded starts bin (the embedded host) serving the module.
func StartEmbedded(bin string, o Options) (*Embedded, error) {
	args := append([]string{"serve"}, o.args()...)
	cmd := exec.Command(bin, append(args, o.Module)...)
	cmd.Env = o.env()
	cmd.Stderr = o.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return &Embedded{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// Name says which host this is.
func (e *Embedded) Name() string { return "embedded host" }

// Evaluate sends one request and reads its answer. Safe for concurrent use (one at a time).
func (e *Embedded) Evaluate(request []byte, settings any) (Response, error) {
	line, err := json.Marshal(map[string]any{"request": json.RawMessage(request), "settings": settings})
	if err != nil {
		return Response{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.in.Write(append(line, '\n')); err != nil {
		return Response{}, fmt.Errorf("embedded host: %w", err)
	}
	answer, err := e.out.ReadBytes('\n')
	if err != nil {
		return Response{}, fmt.Errorf("embedded host: %w", err)
	}
	var failure struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(answer, &failure); err == nil && failure.Error != nil {
		return Response{}, fmt.Errorf("%s", *failure.Error)
	}
	var response Response
	if err := json.Unmarshal(answer, &response); err != nil {
		return Response{}, fmt.Errorf("embedded host answered %q: %w", answer, err)
	}
	return response, nil
}

// Close stops the host.
func (e *Embedded) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	_ = e.in.Close()
	return e.cmd.Wait()
}

// Kwctl is Kubewarden's kwctl, one `kwctl run` per evaluation.
type Kwctl struct {
	bin string
	o   Options
	dir string
}

// NewKwctl runs bin (kwctl) with o; dir holds the request files and a Sigstore trust root.
// kwctl fetches Sigstore's trust root (TUF) at every start, and on a machine without that
// network spends about a second in retries; the modules run here are local files that nothing
// verifies, so kwctl is given the root of a throwaway key instead (--sigstore-trust-config).
func NewKwctl(bin, dir string, o Options) (*Kwctl, error) {
	trust, err := throwawayTrustRoot(dir)
	if err != nil {
		return nil, err
	}
	o.kwctlArgs = []string{"--sigstore-trust-config", trust}
	return &Kwctl{bin: bin, o: o, dir: dir}, nil
}

// throwawayTrustRoot writes a Sigstore ClientTrustConfig whose CA, transparency log and CT log
// are one freshly generated key, forgotten at once: it verifies no signature.
func throwawayTrustRoot(dir string) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "k8s-judge throwaway"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true}
	cert, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return "", err
	}
	public, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", err
	}
	valid := map[string]string{"start": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}
	log := map[string]any{"baseUrl": "http://127.0.0.1:9", "hashAlgorithm": "SHA2_256", "logId": map[string]string{"keyId": "AAAA"},
		"publicKey": map[string]any{"rawBytes": public, "keyDetails": "PKIX_ECDSA_P256_SHA_256", "validFor": valid}}
	config := map[string]any{
		"mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
		"trustedRoot": map[string]any{
			"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
			"tlogs":     []any{log}, "ctlogs": []any{log}, "timestampAuthorities": []any{},
			"certificateAuthorities": []any{map[string]any{"subject": map[string]string{"commonName": "k8s-judge throwaway"},
				"uri": "http://127.0.0.1:9", "certChain": map[string]any{"certificates": []any{map[string]any{"rawBytes": cert}}}, "validFor": valid}},
		},
		"signingConfig": map[string]any{"mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
			"caUrls": []any{}, "oidcUrls": []any{}, "rekorTlogUrls": []any{}, "tsaUrls": []any{}},
	}
	data, err := json.Marshal(config)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "sigstore-trust-config.json")
	return path, os.WriteFile(path, data, 0o600)
}

// Name says which host this is.
func (k *Kwctl) Name() string { return "kwctl" }

// Evaluate runs `kwctl run` on the request.
func (k *Kwctl) Evaluate(request []byte, settings any) (Response, error) {
	file, err := os.CreateTemp(k.dir, "request-*.json")
	if err != nil {
		return Response{}, err
	}
	defer os.Remove(file.Name())
	if _, err := file.Write(request); err != nil {
		return Response{}, err
	}
	file.Close()
	settingsJSON, err := json.Marshal(settings)
	if err != nil {
		return Response{}, err
	}
	args := append([]string{"run", "--request-path", file.Name(), "--settings-json", string(settingsJSON)}, k.o.kwctlArgs...)
	args = append(args, k.o.args()...)
	cmd := exec.Command(k.bin, append(args, k.o.Module)...)
	cmd.Env = k.o.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return Response{}, fmt.Errorf("%s", strings.TrimPrefix(lines[len(lines)-1], "Error: "))
	}
	var response Response
	out := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if err := json.Unmarshal(out, &response); err != nil {
		return Response{}, fmt.Errorf("kwctl printed %q: %w", stdout.String(), err)
	}
	return response, nil
}

// Close does nothing: each evaluation is its own process.
func (k *Kwctl) Close() error { return nil }

// Root is the repository's root, found from the working directory (k8s-judge/...).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "metadata.yml")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no metadata.yml above the working directory")
		}
		dir = parent
	}
}

// Builds are the project's builds the suites run: the policy module, the embedded host and
// seed-registry (the registry's fixtures).
type Builds struct {
	Root, Module, EmbeddedHost, SeedRegistry string
}

// ProjectBuilds finds the builds under Root and Cargo's target folder (CARGO_TARGET_DIR when
// set); module, when not empty, stands for policy.wasm (a mutant's). It fails naming the first
// one missing and makeTarget, the make target that builds them.
func ProjectBuilds(module, makeTarget string) (Builds, error) {
	root, err := Root()
	if err != nil {
		return Builds{}, err
	}
	target := os.Getenv("CARGO_TARGET_DIR")
	if target == "" {
		target = filepath.Join(root, "target")
	}
	if module == "" {
		module = filepath.Join(root, "policy.wasm")
	}
	b := Builds{Root: root, Module: module, EmbeddedHost: filepath.Join(target, "debug", "embedded-host"),
		SeedRegistry: filepath.Join(target, "debug", "seed-registry")}
	for _, file := range []string{b.Module, b.EmbeddedHost, b.SeedRegistry} {
		if _, err := os.Stat(file); err != nil {
			return Builds{}, fmt.Errorf("%s is missing: run `make %s` (it builds policy.wasm, the embedded host and seed-registry)", file, makeTarget)
		}
	}
	return b, nil
}
